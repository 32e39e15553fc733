package index

import (
	"bytes"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/clipidx/clipidx/store"
)

// The records a build starts from. A library of a million photos has a
// million records under its roots, and a build that finds them unchanged
// needs of each only its name and stat, to compare with the walk, and
// whether the walk found it, to remove the others. oldRecords keeps that
// much (oldRec: 48 bytes and the name), folder by folder, each folder's
// path once; and the whole record only of those that need more: failures,
// Live Photo movies and videos' own records (full), and video frames
// (frames). The walk compares each file it finds with its record as it
// goes (walker.take), and keeps only the files that may have changed: a
// file whose size, mtime and ctime are those of its plain record is
// unchanged (recSame), whatever else the build does. The content hash of
// an indexed file, which only a file that changed needs, is read again
// for those (builder.fillOld, readSampleRecords).

// recFlags mark an oldRec.
type recFlags uint8

const (
	recFull      recFlags = 1 << iota // the whole record is in oldRecords.full
	recWalked                         // the walk found the file (walker.take)
	recSame                           // ...with the stat of its plain record: unchanged
	recShardKept                      // a sample of a tar shard found unchanged (planShards)
	recTwice                          // read a second time: the first one stands
)

// oldRec is what a build keeps of a record it started with.
type oldRec struct {
	name                   string // in its folder, oldRecords.dirs[dir]
	size, mtimeNs, ctimeNs int64
	dir                    int32
	flags                  recFlags
}

// oldDir is a folder that holds records: its path, ending in a separator
// (dirKey), and its records, sorted by name.
type oldDir struct {
	path string
	recs []oldRec
}

// oldRecords are the records under a build's scope as it started.
type oldRecords struct {
	dirs   []oldDir
	dirOf  map[string]int32       // index in dirs by path
	full   map[string]*store.File // the records marked recFull, by path
	frames map[string][]frameRec  // the frame records, by video, in time order
	// hintDir and hint are where the last lookup ended: the walk, and
	// every pass over the records, ask in the records' own order.
	hintDir int32
	hint    int
}

func newOldRecords() *oldRecords {
	return &oldRecords{dirOf: map[string]int32{}, full: map[string]*store.File{}, frames: map[string][]frameRec{}}
}

// plainRecord reports whether the stat and the vector are all a build
// needs of f before it reads the file: an indexed file, without a failure.
func plainRecord(p string, f *store.File) bool {
	return !f.Failed() && f.Err == "" && f.Kind == "" && f.Reach == "" && !IsVideoName(p)
}

// splitPath splits p after its last separator: p is folder+name.
func splitPath(p string) (folder, name string) {
	i := strings.LastIndexByte(p, filepath.Separator)
	return p[:i+1], p[i+1:]
}

// dirKey is the folder as oldDir names it: ending in a separator.
func dirKey(folder string) string {
	if strings.HasSuffix(folder, string(filepath.Separator)) {
		return folder
	}
	return folder + string(filepath.Separator)
}

// add takes the record f of path p; done must follow the last one.
func (x *oldRecords) add(p string, f store.File) {
	folder, name := splitPath(p)
	d, ok := x.dirOf[folder]
	if !ok {
		d = int32(len(x.dirs))
		x.dirs = append(x.dirs, oldDir{path: strings.Clone(folder)})
		x.dirOf[x.dirs[d].path] = d
	}
	r := oldRec{name: strings.Clone(name), size: f.Size, mtimeNs: f.MtimeNs, ctimeNs: f.CtimeNs, dir: d}
	if !plainRecord(p, &f) {
		r.flags |= recFull
		c := f
		x.full[p] = &c
	}
	if v, t, ok := store.SplitFrame(p); ok {
		x.frames[v] = append(x.frames[v], frameRec{path: p, t: t, f: f})
	}
	x.dirs[d].recs = append(x.dirs[d].recs, r)
}

// done orders each folder's records by name (a folder's records come in
// that order unless it holds a tar shard's samples, read after the
// rest), marks a record read twice, trims the lists that append left
// too long and orders each video's frames.
func (x *oldRecords) done() {
	byName := func(a, b oldRec) int { return strings.Compare(a.name, b.name) }
	for i := range x.dirs {
		recs := x.dirs[i].recs
		if !slices.IsSortedFunc(recs, byName) {
			slices.SortStableFunc(recs, byName)
		}
		for j := 1; j < len(recs); j++ {
			if recs[j].name == recs[j-1].name {
				recs[j].flags |= recTwice
			}
		}
		if cap(recs)-len(recs) > len(recs)/8 {
			x.dirs[i].recs = slices.Clone(recs)
		}
	}
	sortFrames(x.frames)
}

// dirIndex is the index of folder (as the walk names it) in dirs, -1
// when it holds no record.
func (x *oldRecords) dirIndex(folder string) int32 {
	if x == nil {
		return -1
	}
	if d, ok := x.dirOf[dirKey(folder)]; ok {
		return d
	}
	return -1
}

// lookup returns the record of name in folder d, nil when there is none.
// It is not safe for concurrent use (it moves the hint).
func (x *oldRecords) lookup(d int32, name string) *oldRec {
	if x == nil || d < 0 {
		return nil
	}
	recs := x.dirs[d].recs
	if i := x.hint; x.hintDir == d && i < len(recs) && recs[i].name == name && recs[i].flags&recTwice == 0 {
		x.hint = i + 1
		return &recs[i]
	}
	i := sort.Search(len(recs), func(i int) bool { return recs[i].name >= name })
	x.hintDir, x.hint = d, i
	if i < len(recs) && recs[i].name == name {
		x.hint = i + 1
		return &recs[i]
	}
	return nil
}

// find returns the record of path p, nil when there is none.
func (x *oldRecords) find(p string) *oldRec {
	if x == nil {
		return nil
	}
	folder, name := splitPath(p)
	d, ok := x.dirOf[folder]
	if !ok {
		return nil
	}
	return x.lookup(d, name)
}

// path is the path of the record r.
func (x *oldRecords) path(r *oldRec) string { return x.dirs[r.dir].path + r.name }

// record returns the whole record of r when it is kept (recFull), nil
// for a plain one (plainRecord) and for no record (r nil).
func (x *oldRecords) record(r *oldRec) *store.File {
	if r != nil && r.flags&recFull != 0 {
		return x.full[x.path(r)]
	}
	return nil
}

// same reports whether the file st found by the walk is unchanged by its
// record r, whatever else the build does: a plain record (never a
// failure, which may be retried) of the same size, mtime and ctime (not
// one without a ctime, which takes the file's: stampsCtime).
// unchangedFile says so too.
func (x *oldRecords) same(r *oldRec, st found) bool {
	return r.flags&recFull == 0 && r.size == st.size && r.mtimeNs == st.mtimeNs && r.ctimeNs == st.ctimeNs
}

// all yields every record, folder by folder (not in path order), but
// those read twice.
func (x *oldRecords) all() iter.Seq[*oldRec] {
	return func(yield func(*oldRec) bool) {
		if x == nil {
			return
		}
		for d := range x.dirs {
			recs := x.dirs[d].recs
			for i := range recs {
				if recs[i].flags&recTwice == 0 && !yield(&recs[i]) {
					return
				}
			}
		}
	}
}

// statOf is the unchanged file r (recSame) as the walk found it.
func (x *oldRecords) statOf(r *oldRec) found {
	return found{path: x.path(r), size: r.size, mtimeNs: r.mtimeNs, ctimeNs: r.ctimeNs}
}

// paths returns the records' paths, sorted.
func (x *oldRecords) paths() []string {
	var out []string
	for r := range x.all() {
		out = append(out, x.path(r))
	}
	sort.Strings(out)
	return out
}

// unchangedFile is classify's answer without a hash for the file f, whose
// record is r (nil: none), kept whole or plain (a plain record is never
// retried: retryRule.retries), and stamps whether its ctime is to be
// recorded (stampsCtime).
func (b *builder) unchangedFile(r *oldRec, f found) (unchanged, stamps bool) {
	switch o := b.old.record(r); {
	case r == nil:
		return false, false
	case o != nil:
		return classify(o, f, nil, nil, b.retry()) == actUnchanged, stampsCtime(o, f)
	}
	return sameStat(r.size, r.mtimeNs, r.ctimeNs, f), lacksCtime(r.ctimeNs, f)
}

// fillOld reads the whole records of the jobs at need, whose records were
// kept plain: their files changed, and classify compares content hashes.
func (b *builder) fillOld(jobs []job, need []int) error {
	if len(need) == 0 {
		return nil
	}
	return b.w.View(func(s *store.Snapshot) error {
		for _, i := range need {
			f, ok, err := s.File(jobs[i].path)
			if err != nil {
				return err
			}
			if ok {
				jobs[i].old = &f
			}
		}
		return nil
	})
}

// oldPaths returns the paths of the records the build started with,
// sorted (made once, and only when a question about them comes).
func (b *builder) oldPaths() []string {
	if b.sorted == nil {
		b.sorted = b.old.paths()
		if b.sorted == nil {
			b.sorted = []string{}
		}
	}
	return b.sorted
}

// hashSet is the content hashes with a stored vector, sorted: 32 bytes
// each, where a map took about twice that.
type hashSet []store.Hash

func compareHash(a, b store.Hash) int { return bytes.Compare(a[:], b[:]) }

// readHashes reads the hashes of every stored vector (the index lists
// them in order).
func readHashes(s *store.Snapshot) (hashSet, error) {
	var out hashSet
	err := s.Hashes(func(h store.Hash) error {
		out = append(out, h)
		return nil
	})
	if !slices.IsSortedFunc(out, compareHash) {
		slices.SortFunc(out, compareHash)
	}
	if cap(out)-len(out) > len(out)/8 {
		out = slices.Clone(out)
	}
	return out, err
}

// has reports whether the index holds a vector of content h.
func (s hashSet) has(h store.Hash) bool {
	_, ok := slices.BinarySearchFunc(s, h, compareHash)
	return ok
}
