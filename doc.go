// Package clipidx makes a photo collection searchable by meaning with CLIP
// ViT-H/14. This root package holds no code; it documents how the tree is
// laid out. The folder tree is the pipeline:
//
//	files on disk
//	    │  index      walk the roots (sorted, deterministic), detect changes,
//	    │             run the batching pipeline, report per-file failures
//	    ▼
//	decode/resize     preprocess   image bytes → float32 [3,224,224], bit-exact with HF
//	tokens            tokenizer    text → 77 CLIP BPE ids, exact with HF
//	    │
//	    ▼
//	forward passes    clipnpu      ids / pixels → projected embeddings
//	                               (pure-Go reference, fast CPU path, NPU replay)
//	    │
//	    ▼
//	vectors on disk   store        the bbolt schema (the only bbolt importer)
//	ranking           search       cosine top-k over the stored vectors
//	    │
//	    ▼
//	CLI               cmd/clipidx  flags, output, progress bars, exit codes
//
// Who may import whom (enforced by deps_test.go):
//
//   - tokenizer, preprocess and internal/gemm are leaves: they import no other
//     clipidx package.
//   - clipnpu imports internal/gemm (and its own subpackages); it takes token
//     ids and pixel tensors, never paths of images or strings of text.
//   - store imports no other clipidx package except leaves; it alone imports
//     go.etcd.io/bbolt.
//   - index and search declare the small interfaces they need (an Encoder, a
//     TextEncoder) and import store; they never import clipnpu, so their tests
//     run with a fake encoder.
//   - cmd/clipidx wires everything together and is the only place that prints,
//     reads flags or the environment, or exits.
package clipidx
