// Package preprocess decodes image files and turns them into the CLIP model
// input, a float32 tensor [3, 224, 224], bit for bit as Hugging Face's
// CLIPImageProcessor computes it. It is a leaf: it imports no other clipidx
// package.
package preprocess
