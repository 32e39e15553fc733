package index

import (
	"slices"
	"strings"

	"github.com/clipidx/clipidx/store"
)

// action is what a build does with one file found on disk.
type action int

const (
	actUnchanged action = iota // size, mtime and ctime match: nothing to do
	actNeedHash                // changed stat, or a failure to retry: read the file and decide again
	actTouch                   // same content as recorded: update the stat only
	actReuse                   // content embedded before: reuse that vector
	actEmbed                   // run the model
)

func (a action) String() string {
	return [...]string{"unchanged", "need-hash", "touch", "reuse", "embed"}[a]
}

// retryRule says which failed records a build reads again although their
// size and mtime are unchanged.
type retryRule struct {
	all   bool     // Options.RetryFailed: every failure
	reach []string // Options.Reach: the formats this build decodes, sorted
}

// retries reports whether the failure old is read again: every failure
// with all; otherwise a failure of kind "format" (content not an image, or
// a format the decoder did not read) or "corrupt" (a decoder that learns
// a format, or a feature of one, may have taken it for damage: an
// animated WebP, a CMYK TIFF) whose recorded reach lacks a format this
// build reads. A failure recorded before kinds were (kind unknown)
// counts as "format" with an unknown reach: it is retried once, and its
// new record says why.
func (r retryRule) retries(old store.File) bool {
	switch {
	case !old.Failed() || old.Kind == store.KindLiveVideo:
		return false // indexed, or no failure (live.go)
	case r.all:
		return true
	case old.Kind == "":
		return true
	case old.Kind != store.FailFormat && old.Kind != store.FailCorrupt:
		return false
	}
	had := strings.Split(old.Reach, ",")
	for _, f := range r.reach {
		if !slices.Contains(had, f) {
			return true
		}
	}
	return false
}

// classify is the whole change-detection policy. old is the stored record
// (nil for a new file), st is the file's stat. A ctime that moved is a
// change although size and mtime match (sameCtime). Without a content
// hash (hash nil) it answers actUnchanged or actNeedHash; with one it
// answers actTouch, actReuse or actEmbed. known reports whether the index
// holds a vector for a content hash. A failed file is read again when its
// stat changes or when retry says so (see retryRule.retries); then, even
// with the same content, it is decoded again (actEmbed, or actReuse when
// another file's vector has that content). Any other unchanged failure
// stays recorded as it is.
func classify(old *store.File, st found, hash *store.Hash, known func(store.Hash) bool, retry retryRule) action {
	if hash == nil {
		if old != nil && sameStat(old.Size, old.MtimeNs, old.CtimeNs, st) && !retry.retries(*old) {
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

// sameStat reports whether a file's stat st is the one a record holds:
// the same size and mtime, and the same ctime (sameCtime).
func sameStat(size, mtimeNs, ctimeNs int64, st found) bool {
	return size == st.size && mtimeNs == st.mtimeNs && sameCtime(ctimeNs, st.ctimeNs)
}

// sameCtime reports whether a recorded ctime and a file's agree: equal, or
// either unknown (0). Tools that rewrite a file and put its size and mtime
// back (exiftool -P fixing dates or orientation), and two files of one size
// and mtime renamed into each other's names, move it; so do chmod and
// xattr changes, which then cost one read of the file, no model pass.
func sameCtime(recorded, now int64) bool {
	return recorded == 0 || now == 0 || recorded == now
}

// stampsCtime reports whether the record old, unchanged by size and mtime,
// was written without a ctime the file now has: the build records it
// (stamper, store.Batch.StampCtime) without reading the file.
func stampsCtime(old *store.File, st found) bool {
	return old != nil && lacksCtime(old.CtimeNs, st)
}

// lacksCtime reports whether a record's ctime (recorded) is unknown and
// the file st has one.
func lacksCtime(recorded int64, st found) bool {
	return recorded == 0 && st.ctimeNs != 0
}
