// Package tokenizer turns text into the 77 CLIP BPE token ids that CLIP
// ViT-H/14 reads, exactly as Hugging Face's CLIPTokenizer computes them.
// It is a leaf: it imports no other clipidx package.
package tokenizer
