// Package index walks photo folders, detects new, changed, moved and deleted
// files, and runs the batching pipeline that decodes, embeds and stores them.
// Videos are indexed as frames sampled where the picture changes, each a
// record VIDEO#t=SECONDS (see video.go), through a VideoSampler.
// It declares the Encoder interface it needs, so it never imports clipnpu.
package index
