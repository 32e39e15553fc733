// Package export writes the vectors of a clipidx index in the formats the
// engines that take over from it read:
//
//   - ClipRetrieval: the embeddings folder clip-retrieval's inference
//     writes, which autofaiss turns into a FAISS index and clip-retrieval
//     back serves: img_emb/img_emb_{P}.npy (NPY 1.0, '<f2' or '<f4',
//     L2-normalised rows), text_emb/text_emb_{P}.npy when captions were
//     embedded (Options.Captions), metadata/metadata_{P}.parquet row for
//     row with them;
//   - FaissFlat: a FAISS IndexFlatIP file and its .paths file.
//
// Rows are the indexed files (or webdataset samples) in path order, one
// per file: files with identical bytes each get their row. A video gives a
// row to each of its frames (image_path VIDEO#t=SECONDS; the metadata's
// video_path and video_time say which video and when). Export reads
// through package store and never overwrites a file.
package export
