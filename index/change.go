package index

import "github.com/clipidx/clipidx/store"

// action is what a build does with one file found on disk.
type action int

const (
	actUnchanged action = iota // size and mtime match: nothing to do
	actNeedHash                // changed stat: read the file and decide again
	actTouch                   // same content as recorded: update the stat only
	actReuse                   // content embedded before: reuse that vector
	actEmbed                   // run the model
)

func (a action) String() string {
	return [...]string{"unchanged", "need-hash", "touch", "reuse", "embed"}[a]
}

// classify is the whole change-detection policy. old is the stored record
// (nil for a new file), size and mtime come from stat. Without a content
// hash (hash nil) it answers actUnchanged or actNeedHash; with one it
// answers actTouch, actReuse or actEmbed. known reports whether the index
// holds a vector for a content hash. A failed file is retried whenever its
// stat changes, even if its content did not (the failure may have been
// transient, or the decoder may have improved).
func classify(old *store.File, size, mtimeNs int64, hash *store.Hash, known func(store.Hash) bool) action {
	if hash == nil {
		if old != nil && old.Size == size && old.MtimeNs == mtimeNs {
			return actUnchanged
		}
		return actNeedHash
	}
	switch {
	case old != nil && !old.Failed() && old.Hash == *hash:
		return actTouch
	case known(*hash):
		return actReuse
	}
	return actEmbed
}
