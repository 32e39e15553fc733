// Package clipidx makes a photo collection searchable by meaning with CLIP
// ViT-H/14. This root package holds no code; it documents how the tree is
// laid out. The folder tree is the pipeline:
//
//	files on disk
//	    │  index      walk the roots (sorted, deterministic), detect changes,
//	    │             run the batching pipeline, report per-file failures;
//	    │             videos sampled into frames (internal/video, ffmpeg)
//	    ▼
//	decode/resize     preprocess   image bytes → float32 [3,224,224], bit-exact with HF
//	tokens            tokenizer    text → 77 CLIP BPE ids, exact with HF
//	    │
//	    ▼
//	forward passes    clipnpu      the model face (clipnpu.Model): a model folder's
//	                               tokenizer, preprocessing, description and towers;
//	                               texts / image files → projected embeddings
//	                    clipnpu/core  what the runtime shares (Backend, Info,
//	                                  Config, weights in memory, errors)
//	                    clipnpu/hf    the Hugging Face loader (no engine)
//	                    clipnpu/cpu   float32 engines: reference + fast path
//	                    clipnpu/npu   NPU replay (never run on hardware),
//	                                  its emulator and the bundle exporter
//	                    clipnpu/compare  the one comparison engine: gates
//	                                     chosen from how the model runs
//	    │
//	    ▼
//	vectors on disk   store        the bbolt schema (the only bbolt importer)
//	ranking           search       a query in three steps: a read (identity, stored
//	                               vectors), the model run with the index closed
//	                               (and the model check), a read that ranks (top-k)
//	    │
//	    ▼
//	CLI               cmd/clipidx  flags, output, progress bars, exit codes
//
// Who may import whom (enforced by deps_test.go):
//
//   - tokenizer, preprocess, internal/gemm and internal/video (ffprobe and
//     ffmpeg run as child processes: video frames as packed RGB) are leaves:
//     they import no other clipidx package. internal/mmap, the one file-mapping helper, is a leaf
//     that the model loaders (clipnpu/core, clipnpu/bundle) share.
//     internal/geo, the embedded place table (GPS → city, region, country),
//     is a leaf that index uses at build time.
//     internal/userdir, which names the user's cache and data folders (XDG),
//     and internal/madedirs, which makes folders and remembers which, are
//     leaves.
//   - clipnpu's runtime packages take a model folder, token ids and pixel
//     tensors, never paths of images or strings of text: core is a leaf; hf
//     (the loader) imports only core; cpu imports core and internal/gemm, never the NPU
//     path; npu imports core, hf (for its exporter), bundle, xdna and
//     internal/gemm, never the CPU engines. Only the root, the model face,
//     imports them all, with tokenizer and preprocess; nothing outside
//     clipnpu imports core, hf, cpu or npu. The model knows no index: the
//     face describes itself (clipnpu.Description) and the store's identity
//     is made from that description by whoever holds both (cmd/clipidx),
//     so clipnpu never imports store.
//   - store imports no other clipidx package except leaves; it alone imports
//     go.etcd.io/bbolt.
//   - index and search declare the small interfaces they need (index.Encoder,
//     search.Encoder), which clipnpu.Model implements (search.Encoder with
//     the identity cmd/clipidx adds from its description), and import store;
//     they never import clipnpu, so their tests run with a fake encoder.
//   - internal/watch keeps an index current (fsnotify events, a periodic
//     rescan) by calling the caller's build with the changed paths; it
//     imports index and store only, never the model.
//   - cmd/clipidx wires everything together and is the only place that prints,
//     reads flags or the environment, or exits.
package clipidx
