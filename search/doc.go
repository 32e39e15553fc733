// Package search ranks stored vectors against a query embedding by cosine
// similarity. It declares the TextEncoder interface it needs.
//
// A scan reads only the rounded 16-bit upper halves of the stored vectors
// (see package store), in parallel over chunks, keeping a bounded heap per
// worker. Because every approximate score is within a proven bound e of the
// exact float32 score, every candidate within 2e of the k-th best
// approximate score is then re-ranked exactly from the full float32 vector:
// the results (order and scores) are identical to an exhaustive float32 scan.
//
// A query may hold qualifiers (year:2019 place:chamonix, see ParseRequest):
// they make a Filter over the records' metadata (store.Meta), applied
// before ranking, so that the results are the K best of the matching
// records; with no terms, List gives those records by date.
package search
