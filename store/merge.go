package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrMergeInput is returned when an input of Merge cannot be joined: the
// message names the input and the reason.
var ErrMergeInput = errors.New("cannot merge")

// MergeSummary says what Merge did.
type MergeSummary struct {
	Inputs     int `json:"inputs"`
	Files      int `json:"files"`      // records read from the inputs
	Vectors    int `json:"vectors"`    // vectors new to the output
	Duplicates int `json:"duplicates"` // records of a path already in the output (see Merge)
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
// ErrMergeInput or ErrModelMismatch that names the input and the reason.
// An input that is out itself, or the same file as another input, by any
// path (a link, a relative name), is refused before anything is read.
//
// A path present in several inputs (or already in out) keeps one record,
// whatever the order of the commits: an indexed record wins over a failed
// one, then the later mtime, then the larger content hash; equal records
// are the same. Duplicates counts the records that met one already there.
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
	var ref Identity
	var roots, mounts []string
	var offline []Offline
	complete := true
	prog := MergeProgress{}
	for i, in := range ins {
		r, err := OpenReader(in, ReaderOptions{Timeout: opts.Timeout})
		if err != nil {
			return sum, fmt.Errorf("%w %s: %w", ErrMergeInput, in, err)
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
			offline = append(offline, off...)
			return err
		})
		r.Close()
		if err != nil {
			return sum, fmt.Errorf("%w %s: %w", ErrMergeInput, in, err)
		}
		if id.Dim <= 0 {
			return sum, fmt.Errorf("%w %s: it records no model (an empty index?)", ErrMergeInput, in)
		}
		if i == 0 {
			ref = id
		} else if err := ref.Compatible(id, false); err != nil {
			return sum, fmt.Errorf("%w %s: its vectors differ from those of %s: %w", ErrMergeInput, in, ins[0], err)
		}
		if lb == nil || !lb.Complete {
			complete = false
		}
	}
	err := replaceIndex(ctx, out, ref, opts.WriterOptions, opts.OnLeftover, func(w *Writer) error {
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
			have, err := readOffline(tx)
			if err != nil {
				return err
			}
			return putOffline(tx, mergeOffline(append(have, offline...)))
		}); err != nil {
			return err
		}
		for _, in := range ins {
			if err := w.mergeOne(ctx, in, &sum, &prog, opts.Progress); err != nil {
				return fmt.Errorf("merge %s into %s: %w", in, out, err)
			}
		}
		if err := ctx.Err(); err != nil {
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

// mergeOffline keeps one entry per folder (the earliest Since, the
// entries added up) from the offline lists of several indexes.
func mergeOffline(list []Offline) []Offline {
	by := map[string]Offline{}
	for _, o := range list {
		if had, ok := by[o.Dir]; ok {
			if had.Since < o.Since {
				o.Since, o.Reason = had.Since, had.Reason
			}
			o.Entries += had.Entries
		}
		by[o.Dir] = o
	}
	out := make([]Offline, 0, len(by))
	for _, o := range by {
		out = append(out, o)
	}
	return out
}

// mergeRec is one record read from an input.
type mergeRec struct {
	path   string
	file   File
	vec    []float32 // exact, unit (nil for a failure)
	sample []byte    // encoded Sample, or nil
	meta   []byte    // encoded Meta, or nil
}

// mergeOne copies every record of the index in into w, mergeCommit records
// a transaction, counting them in prog (told to progress, when set); it
// stops before a commit once ctx is done.
func (w *Writer) mergeOne(ctx context.Context, in string, sum *MergeSummary, prog *MergeProgress, progress func(MergeProgress)) error {
	r, err := OpenReader(in, ReaderOptions{Timeout: w.opts.Timeout})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.View(func(s *Snapshot) error {
		var recs []mergeRec
		flush := func() error {
			if len(recs) == 0 {
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
				return err
			}
			prog.Done += len(recs)
			recs = recs[:0]
			if progress != nil {
				progress(*prog)
			}
			return nil
		}
		samples := s.tx.Bucket(bSamples)
		err := s.Files("", func(p string, f File) error {
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
			recs = append(recs, rec)
			sum.Files++
			if len(recs) >= mergeCommit {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return w.mergeShards(s)
	})
}

// mergeShards copies the shard records of s (a shard seen by two inputs
// keeps the later mtime).
func (w *Writer) mergeShards(s *Snapshot) error {
	src := s.tx.Bucket(bShards)
	if src == nil {
		return nil
	}
	return w.update(func(tx *bolt.Tx) error {
		dst, err := tx.CreateBucketIfNotExists(bShards)
		if err != nil {
			return err
		}
		return src.ForEach(func(k, v []byte) error {
			if old := dst.Get(k); len(old) == 16 && len(v) == 16 && getU64(old[8:]) >= getU64(v[8:]) {
				return nil
			}
			return dst.Put(append([]byte(nil), k...), append([]byte(nil), v...))
		})
	})
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
