package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrMergeInput is returned when an input of Merge, or the index at out,
// cannot be joined: the message names the file, the reason and what to do.
var ErrMergeInput = errors.New("cannot merge")

// MergeSummary says what Merge did.
type MergeSummary struct {
	Inputs     int `json:"inputs"`
	Files      int `json:"files"`      // records read from the inputs
	Vectors    int `json:"vectors"`    // vectors new to the output
	Duplicates int `json:"duplicates"` // records of a path already in the output (see Merge)
	// Stale counts the records of an older version of a tar shard left
	// out, the inputs' and the output's own (see Merge).
	Stale int `json:"stale"`
}

// mergeCommit is the number of records merged per transaction.
const mergeCommit = 4096

// MergeOptions are the options of MergeContext; the zero value works.
type MergeOptions struct {
	WriterOptions
	// Progress, when set, is called after each commit of records.
	Progress func(MergeProgress)
	// OnLeftover, when set, hears of each copy of out that an earlier
	// merge, killed before it could remove it, left beside out (see
	// MergeContext), once it is removed or could not be.
	OnLeftover func(Leftover)
}

// MergeProgress is how far a merge got.
type MergeProgress struct {
	Done  int // records read from the inputs and committed
	Total int // records the inputs hold
}

// Leftover is a copy of out that a merge killed part-way (SIGKILL, a
// crash) left beside out.
type Leftover struct {
	Path string
	Size int64 // bytes freed (0 when Err is set)
	// Err is why the copy could not be removed; Path is out's folder
	// when the folder could not be listed.
	Err error
}

// Merge joins the indexes ins into the index at out (created if needed)
// without running a model: vectors are copied bit for bit, shared by
// content hash as in a build, with their sample metadata and shard
// records. Every input must hold vectors of the same model and settings
// (Identity.Compatible with the first input's, and with out's when it
// exists); otherwise Merge changes nothing and returns an error wrapping
// ErrMergeInput and ErrModelMismatch that names the input, out, and what
// differs. An input that is no clipidx index, or a damaged one, is
// refused the same way (wrapping ErrMergeInput and the reader's error,
// ErrSchema or ErrCorrupt), and so is an out that exists and is none,
// before anything is copied. An input that is out itself, or the same
// file as another input, by any path (a link, a relative name), is
// refused before anything is read.
//
// A path present in several inputs (or already in out) keeps one record,
// whatever the order of the commits: an indexed record wins over a failed
// one, then the later mtime, then the larger content hash; equal records
// are the same. Duplicates counts the records that met one already there.
//
// A tar shard recorded at several versions (another size, mtime or ctime:
// the shard was written again between two builds) keeps the record of
// the later one (see newerShard) and that version's samples only: the
// records within the shard (SHARD.tar#KEY) of an index that recorded
// another version, input or out, are left out (Stale counts them), as
// are those of an index that recorded no version of it (a read cut
// short) unless their mtime is the kept version's. So the merged index
// holds what the shard held when it was read, and a later build reads it
// again only when it changes again.
//
// The folders that any of them lists offline keep one entry each (the
// outermost, the earliest Since), with Entries counted in the merged
// index.
//
// out is replaced whole or not at all: Merge holds out's build lock
// throughout, merges into a copy of out made beside it (an empty file
// when out does not exist), syncs the copy and renames it over out. A
// merge that fails part-way (a damaged input, a full disk) leaves out as
// it was and removes the copy. The copy costs out's size in free space
// on its disk and one read and write of out. A symbolic link named out
// is followed (the file it leads to is replaced); another hard link to
// out keeps the old file.
//
// Merge is MergeContext without cancellation or hooks.
func Merge(out string, ins []string, opts WriterOptions) (MergeSummary, error) {
	return MergeContext(context.Background(), out, ins, MergeOptions{WriterOptions: opts})
}

// MergeContext is Merge, stopped when ctx is done: it looks at ctx
// between commits (every mergeCommit records), during the copy of out
// and last before the rename, and then returns an error wrapping
// ctx.Err(), out as it was and its copy removed. Once out's build lock is
// held, and before out is copied, it removes the copies of out that
// merges killed part-way (a process killed with SIGKILL cannot remove
// its own) left beside out, telling opts.OnLeftover: only files named as
// a merge names its copy, which no running merge can be using while the
// lock is held. Where the build lock does not keep other processes out
// (a system without flock), none is removed.
func MergeContext(ctx context.Context, out string, ins []string, opts MergeOptions) (MergeSummary, error) {
	sum := MergeSummary{Inputs: len(ins)}
	if len(ins) == 0 {
		return sum, fmt.Errorf("%w: no input index", ErrMergeInput)
	}
	if err := distinctFiles(out, ins); err != nil {
		return sum, err
	}
	outID, hasOut, err := outIdentity(out, opts.Timeout)
	if err != nil {
		return sum, err
	}
	var ref Identity
	var roots, mounts []string
	var offline []Offline
	complete := true
	prog := MergeProgress{}
	plan := shardPlan{ins: make([]map[string]ShardStat, len(ins))}
	for i, in := range ins {
		r, err := OpenReader(in, ReaderOptions{Timeout: opts.Timeout})
		if err != nil {
			return sum, inputError(in, err)
		}
		var id Identity
		var lb *LastBuild
		err = r.View(func(s *Snapshot) error {
			id = s.Identity()
			st, err := s.Stats()
			if err != nil {
				return err
			}
			lb = st.LastBuild
			prog.Total += st.Images + st.Failed
			rs, err := s.Roots()
			if err != nil {
				return err
			}
			roots = append(roots, rs...)
			ms, err := s.Mounts()
			if err != nil {
				return err
			}
			mounts = append(mounts, ms...)
			off, err := s.Offline()
			if err != nil {
				return err
			}
			offline = append(offline, off...)
			plan.ins[i] = readShards(s.tx)
			return nil
		})
		r.Close()
		if err != nil {
			return sum, inputError(in, err)
		}
		if id.Dim <= 0 {
			return sum, fmt.Errorf("%w %s: it records no model (an empty index?); leave it out", ErrMergeInput, in)
		}
		if i == 0 {
			ref = id
		} else if err := ref.Compatible(id, false); err != nil {
			return sum, mismatchError(err, in, in, id, ins[0], ref, "")
		}
		if lb == nil || !lb.Complete {
			complete = false
		}
	}
	if hasOut {
		if err := outID.Compatible(ref, false); err != nil {
			return sum, mismatchError(err, inputsName(ins), ins[0], ref, out, outID, out)
		}
	}
	err = replaceIndex(ctx, out, ref, opts.WriterOptions, opts.OnLeftover, func(w *Writer) error {
		// Every folder of every input stays servable, as do out's own.
		if err := w.update(func(tx *bolt.Tx) error {
			if err := addRoots(tx, roots); err != nil {
				return err
			}
			haveMounts, err := readMounts(tx)
			if err != nil {
				return err
			}
			if err := putMounts(tx, append(haveMounts, mounts...)); err != nil {
				return err
			}
			return plan.settle(newWtx(tx, w.id.Dim), &sum)
		}); err != nil {
			return err
		}
		for i, in := range ins {
			if err := w.mergeOne(ctx, in, &plan, plan.ins[i], &sum, &prog, opts.Progress); err != nil {
				if errors.As(err, new(*mergeError)) {
					return err
				}
				return fmt.Errorf("merge %s into %s: %w", in, out, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.update(func(tx *bolt.Tx) error {
			have, err := readOffline(tx)
			if err != nil {
				return err
			}
			list, err := countOffline(&Snapshot{tx: tx, id: w.id}, mergeOffline(append(have, offline...)))
			if err != nil {
				return err
			}
			return putOffline(tx, list)
		}); err != nil {
			return err
		}
		// Vectors of records replaced by a winner lost their last file.
		if _, err := w.GC(); err != nil {
			return err
		}
		slices.Sort(roots)
		roots = slices.Compact(roots)
		js, _ := json.Marshal(sum)
		return w.Finish(LastBuild{Time: time.Now().UTC().Format(time.RFC3339), Roots: roots, Complete: complete, Summary: js})
	})
	if err != nil && !errors.As(err, new(*mergeError)) {
		// What is not an input's is out's (or its copy's), which may have
		// been rebuilt or replaced since it was looked at.
		if errors.Is(err, ErrModelMismatch) {
			if id, ok, oerr := outIdentity(out, opts.Timeout); oerr != nil {
				err = oerr
			} else if cerr := id.Compatible(ref, false); ok && cerr != nil {
				err = mismatchError(cerr, inputsName(ins), ins[0], ref, out, id, out)
			}
		} else if e, ok := refusal(out, true, err); ok {
			err = e
		}
	}
	return sum, err
}

// distinctFiles refuses an input that is the file out is, or the file an
// earlier input is, whatever names lead there. A missing input is left to
// OpenReader to report.
func distinctFiles(out string, ins []string) error {
	outInfo, err := os.Stat(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", out, err)
	}
	var infos []fs.FileInfo
	var names []string
	for _, in := range ins {
		fi, err := os.Stat(in)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrMergeInput, in, err)
		}
		if outInfo != nil && os.SameFile(fi, outInfo) {
			return fmt.Errorf("%w: %s is the output %s itself", ErrMergeInput, in, out)
		}
		for j, other := range infos {
			if os.SameFile(fi, other) {
				return fmt.Errorf("%w: %s and %s are the same file", ErrMergeInput, names[j], in)
			}
		}
		infos, names = append(infos, fi), append(names, in)
	}
	return nil
}

// mergeOffline keeps one entry per folder (the earliest Since) from the
// offline lists of several indexes, and none for a folder within another
// listed (as a build lists the outermost only). Entries are left to
// countOffline.
func mergeOffline(list []Offline) []Offline {
	by := map[string]Offline{}
	for _, o := range list {
		if had, ok := by[o.Dir]; ok && (had.Since < o.Since || had.Since == o.Since && had.Reason <= o.Reason) {
			continue
		}
		by[o.Dir] = o
	}
	all := make([]Offline, 0, len(by))
	for _, o := range by {
		all = append(all, o)
	}
	slices.SortFunc(all, func(a, b Offline) int { return strings.Compare(a.Dir, b.Dir) })
	var out []Offline
	for _, o := range all { // a folder sorts before those within it
		if !slices.ContainsFunc(out, func(p Offline) bool { return Within(o.Dir, p.Dir) }) {
			out = append(out, o)
		}
	}
	return out
}

// countOffline sets the Entries of each folder of list to the records
// within it in s, and leaves out a folder within which s holds none (a
// build lists none such).
func countOffline(s *Snapshot, list []Offline) ([]Offline, error) {
	kept := list[:0]
	for _, o := range list {
		o.Entries = 0
		err := s.FilesWithin(o.Dir, func(string, File) error {
			o.Entries++
			return nil
		})
		if err != nil {
			return nil, err
		}
		if o.Entries > 0 {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// mergeRec is one record read from an input.
type mergeRec struct {
	path   string
	file   File
	vec    []float32 // exact, unit (nil for a failure)
	sample []byte    // encoded Sample, or nil
	meta   []byte    // encoded Meta, or nil
}

// mergeOne copies every record of the index in into w that plan keeps of
// an index whose shard records are stats (read when Merge looked at in),
// mergeCommit records a transaction, counting them in prog (told to
// progress, when set); it stops before a commit once ctx is done.
func (w *Writer) mergeOne(ctx context.Context, in string, plan *shardPlan, stats map[string]ShardStat, sum *MergeSummary, prog *MergeProgress, progress func(MergeProgress)) error {
	r, err := OpenReader(in, ReaderOptions{Timeout: w.opts.Timeout})
	if err != nil {
		if e, ok := refusal(in, false, err); ok {
			return e
		}
		return err
	}
	defer r.Close()
	var id Identity
	var werr error // of writing w, told apart from those of reading in
	err = r.View(func(s *Snapshot) error {
		if id = s.Identity(); w.id.Compatible(id, false) != nil || !maps.Equal(readShards(s.tx), stats) {
			return errRebuilt
		}
		keep := plan.keeps(stats)
		var recs []mergeRec
		read := 0 // records read since the last commit, recs and those left out
		flush := func() error {
			if read == 0 {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			err := w.update(func(tx *bolt.Tx) error {
				t := newWtx(tx, w.id.Dim)
				for _, rec := range recs {
					if err := t.mergeRecord(rec, sum); err != nil {
						return err
					}
				}
				return t.flush()
			})
			if err != nil {
				werr = err
				return err
			}
			prog.Done += read
			recs, read = recs[:0], 0
			if progress != nil {
				progress(*prog)
			}
			return nil
		}
		samples := s.tx.Bucket(bSamples)
		err := s.Files("", func(p string, f File) error {
			sum.Files++
			read++
			if !keep(p, f) {
				sum.Stale++
			} else if err := s.mergeRec(p, f, samples, &recs); err != nil {
				return err
			}
			if read >= mergeCommit {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	})
	switch {
	case werr != nil:
		return werr
	case errors.Is(err, errRebuilt):
		e := &mergeError{msg: fmt.Sprintf("cannot merge %s: a build changed it while the merge ran; nothing was written: run the merge again", in), cause: errRebuilt}
		if cerr := w.id.Compatible(id, false); cerr != nil {
			e.msg = fmt.Sprintf("cannot merge %s: it was rebuilt while the merge ran, and its vectors now differ from the first input's (%s); nothing was written", in, diffText(id, in, w.id, "the first input"))
			e.cause = cerr
		}
		return e
	case err != nil:
		if e, ok := refusal(in, false, err); ok {
			return e
		}
		return err
	}
	return nil
}

// errRebuilt stops a mergeOne whose input holds other vectors, or other
// versions of its tar shards, than when Merge looked at it.
var errRebuilt = errors.New("rebuilt meanwhile")

// mergeRec appends to recs the record of p, f in s with its vector,
// sample (from samples, when not nil) and metadata.
func (s *Snapshot) mergeRec(p string, f File, samples *bolt.Bucket, recs *[]mergeRec) error {
	rec := mergeRec{path: p, file: f}
	if !f.Failed() {
		if rec.vec = s.Vector(f.Vec); rec.vec == nil {
			return fmt.Errorf("%w: the vector of %s is missing (run clipidx status --check on it)", ErrCorrupt, p)
		}
	}
	if samples != nil {
		if v := samples.Get([]byte(p)); v != nil {
			if _, err := decodeSample(v); err != nil {
				return fmt.Errorf("sample record of %s: %w", p, err)
			}
			rec.sample = append([]byte(nil), v...)
		}
	}
	if pm := s.tx.Bucket(bPhotoMeta); pm != nil && !f.Failed() {
		if v := pm.Get([]byte(p)); v != nil {
			rec.meta = append([]byte(nil), v...)
		}
	}
	*recs = append(*recs, rec)
	return nil
}

// shardPlan is which version of each tar shard a merge keeps: the
// winning stat of every shard that out or an input recorded, and each
// input's stats.
type shardPlan struct {
	win map[string]ShardStat
	ins []map[string]ShardStat
}

// readShards returns the shard records of tx (a damaged value is no
// record, as Snapshot.Shard reads it).
func readShards(tx *bolt.Tx) map[string]ShardStat {
	m := map[string]ShardStat{}
	if bk := tx.Bucket(bShards); bk != nil {
		bk.ForEach(func(k, v []byte) error {
			if st, ok := decodeShard(v); ok {
				m[string(k)] = st
			}
			return nil
		})
	}
	return m
}

// newerShard reports whether a is the later version of a shard than b:
// the later mtime, then the larger size, then the later ctime (a shard
// written again with its mtime kept, or a record that knows it).
func newerShard(a, b ShardStat) bool {
	switch {
	case a.MtimeNs != b.MtimeNs:
		return a.MtimeNs > b.MtimeNs
	case a.Size != b.Size:
		return a.Size > b.Size
	}
	return a.CtimeNs > b.CtimeNs
}

// settle chooses the version of each shard that out (t's) and the inputs
// recorded, writes its record, and removes out's records within a shard
// that do not belong to that version (counted in sum.Stale).
func (p *shardPlan) settle(t *wtx, sum *MergeSummary) error {
	own := readShards(t.tx)
	p.win = maps.Clone(own)
	for _, m := range p.ins {
		for k, st := range m {
			if have, ok := p.win[k]; !ok || newerShard(st, have) {
				p.win[k] = st
			}
		}
	}
	if len(p.win) == 0 {
		return nil
	}
	bk, err := t.tx.CreateBucketIfNotExists(bShards)
	if err != nil {
		return err
	}
	keep := p.keeps(own)
	var stale []string
	c := t.files.Cursor()
	for _, shard := range slices.Sorted(maps.Keys(p.win)) {
		st := p.win[shard]
		if err := bk.Put([]byte(shard), encodeShard(st)); err != nil {
			return err
		}
		if have, ok := own[shard]; ok && have.Same(st) {
			continue // out holds this version: all its records stay
		}
		for k, v := c.Seek([]byte(shard)); k != nil && bytes.HasPrefix(k, []byte(shard)); k, v = c.Next() {
			if owner, _ := p.shardOf(string(k)); owner != shard {
				continue // no record of this shard, or one of a shard within it
			}
			f, err := decodeFile(v)
			if err != nil {
				return fmt.Errorf("record of %s: %w", k, err)
			}
			if !keep(string(k), f) {
				stale = append(stale, string(k))
			}
		}
	}
	for _, path := range stale {
		if err := t.apply(op{kind: opDelete, path: path}); err != nil {
			return err
		}
	}
	sum.Stale += len(stale)
	return t.flush()
}

// keeps returns whether a record of an index whose shard records are
// stats belongs in the merged index: any record but one within a shard
// (the shard's own, or SHARD.tar#KEY) of which that index recorded
// another version than the one kept, or recorded none and the record's
// mtime (a sample's is its shard's) is not the kept version's.
func (p *shardPlan) keeps(stats map[string]ShardStat) func(string, File) bool {
	return func(path string, f File) bool {
		shard, ok := p.shardOf(path)
		if !ok {
			return true
		}
		win := p.win[shard]
		if st, ok := stats[shard]; ok {
			return st.Same(win)
		}
		return f.MtimeNs == win.MtimeNs
	}
}

// shardOf returns the shard with a kept version that path is or is
// within: the longest such SHARD in SHARD or SHARD#KEY (a folder or a key
// may hold the separator too).
func (p *shardPlan) shardOf(path string) (string, bool) {
	if _, ok := p.win[path]; ok {
		return path, true
	}
	for i := len(path) - 1; i > 0; i-- {
		if path[i] != SampleSep[0] {
			continue
		}
		if _, ok := p.win[path[:i]]; ok {
			return path[:i], true
		}
	}
	return "", false
}

// mergeRecord stores one input record unless the output's record of the
// same path wins (see Merge).
func (t *wtx) mergeRecord(rec mergeRec, sum *MergeSummary) error {
	old, ok, err := t.getFile(rec.path)
	if err != nil {
		return err
	}
	if ok {
		sum.Duplicates++
		if !mergeWins(rec.file, old) {
			return nil
		}
	}
	f := rec.file
	if !f.Failed() {
		if t.hashes.Get(f.Hash[:]) == nil {
			// Store the vector exactly as the input holds it (a Put would
			// normalise it again, which may move a last bit).
			id, err := t.alloc()
			if err != nil {
				return err
			}
			if err := t.writeSlot(id, rec.vec, true); err != nil {
				return err
			}
			if err := t.hashes.Put(f.Hash[:], u64(uint64(id))); err != nil {
				return err
			}
			if err := t.vecs.Put(u64(uint64(id)), f.Hash[:]); err != nil {
				return err
			}
			t.vectors++
			sum.Vectors++
		}
		f.Err, f.Kind, f.Reach = "", "", ""
	}
	if err := t.apply(op{kind: opPut, path: rec.path, file: f}); err != nil {
		return err
	}
	if err := t.deleteSample(rec.path); err != nil {
		return err
	}
	if err := t.mergeMeta(rec); err != nil {
		return err
	}
	if rec.sample != nil {
		bk, err := t.tx.CreateBucketIfNotExists(bSamples)
		if err != nil {
			return err
		}
		return bk.Put([]byte(rec.path), rec.sample)
	}
	return nil
}

// mergeWins reports whether record a replaces record b of the same path.
func mergeWins(a, b File) bool {
	switch {
	case a.Failed() != b.Failed():
		return !a.Failed()
	case a.MtimeNs != b.MtimeNs:
		return a.MtimeNs > b.MtimeNs
	}
	for i := range a.Hash {
		if a.Hash[i] != b.Hash[i] {
			return a.Hash[i] > b.Hash[i]
		}
	}
	return false
}
