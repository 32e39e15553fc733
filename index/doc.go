// Package index walks photo folders, detects new, changed, moved and deleted
// files, and runs the batching pipeline that decodes, embeds and stores them.
// It declares the Encoder interface it needs, so it never imports clipnpu.
package index
