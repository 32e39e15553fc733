package index

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/clipidx/clipidx/internal/geo"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// This file keeps each record's metadata (store.Meta: capture time, GPS,
// camera, pixel size, place names) without the model. A file read for its
// content hash (new, changed, renamed, touched) has its metadata read from
// the same bytes in prepare and recorded with it. After the pass,
// completeMeta reads the metadata of unchanged records that have none (an
// index written before metadata existed gains it on its next build, with
// no model run and no re-embedding), and resolves again the place names of
// every record with GPS when the embedded place table is not the one the
// index names. It also probes again the videos whose frames' metadata an
// older clipidx read (videometa.go), and reads again the photos an older
// clipidx dated by their file's time (photoMetaVersion).

// photoMetaVersion is the version of what fileMeta reads: 1 dates a photo
// by DateTimeOriginal, 2 also by DateTimeDigitized. A photo whose date is
// its file's time is marked with the version that read it (store's
// MarkMetaRead), and a build reads again, once, the unchanged photos it
// walks that an older version dated so. A photo with a date in its file
// needs no mark: no later reader dates it otherwise.
const photoMetaVersion = 2

// putFileMeta records m, read by fileMeta from the file at path, and the
// mark of a date that is the file's time.
func (b *builder) putFileMeta(path string, m *store.Meta) {
	b.batch.PutMeta(path, *m)
	if m.TakenSource == store.TakenMtime {
		b.batch.MarkMetaRead(path, photoMetaVersion) // committed with the metadata, counted with it
	}
}

// fileMeta is the metadata of a file's bytes; with no capture time in the
// file, its modification time (in this machine's zone) stands in.
func fileMeta(data []byte, mtimeNs int64) *store.Meta {
	pm := preprocess.ReadMeta(data)
	m := &store.Meta{
		HasGPS: pm.HasGPS, Lat: pm.Lat, Lon: pm.Lon, HasAlt: pm.HasAlt, Alt: pm.Alt,
		Make: pm.Make, Model: pm.Model, Lens: pm.Lens, Width: pm.Width, Height: pm.Height,
	}
	switch {
	case !pm.Taken.IsZero():
		m.Taken, m.TakenNs, m.TakenSource = pm.Taken.Unix(), int32(pm.Taken.Nanosecond()), store.TakenEXIF
		if pm.HasOffset {
			m.Offset, m.HasOffset = int16(pm.Offset), true
		}
	default: // the file's time, even the epoch (mtime 0: a date, not a missing one)
		t := time.Unix(0, mtimeNs).In(time.Local)
		_, off := t.Zone()
		m.Taken, m.TakenNs, m.TakenSource = t.Unix()+int64(off), int32(t.Nanosecond()), store.TakenMtime
		m.Offset, m.HasOffset = int16(off/60), true
	}
	resolvePlace(m)
	return m
}

// resolvePlace sets the place names of m from its GPS position (cleared
// without one, or far from any place). It reports whether they changed.
func resolvePlace(m *store.Meta) bool {
	var p geo.Place
	if m.HasGPS {
		if q, _, ok, err := geo.Nearest(m.Lat, m.Lon); err == nil && ok {
			p = q
		}
	}
	if m.City == p.City && m.Region == p.Region && m.Country == p.Country && m.CountryCode == p.CountryCode {
		return false
	}
	m.City, m.Region, m.Country, m.CountryCode = p.City, p.Region, p.Country, p.CountryCode
	return true
}

// completeMeta reads the metadata of the indexed files under the walk that
// have none, probes again the videos an older clipidx read, then brings
// the place names up to the embedded table.
func (b *builder) completeMeta(ctx context.Context, wk *walker) error {
	var todo []metaTodo
	places, err := geo.Version()
	if err != nil {
		return err
	}
	var stale bool
	err = b.w.View(func(s *store.Snapshot) error {
		stale = s.PlacesVersion() != places
		look := func(f found) error {
			// Most records have metadata this reader would not read
			// again: the record itself is looked up only for the others.
			m, has, err := s.Meta(f.path)
			if err != nil {
				return err
			}
			whole := !has || m.TakenSource == store.TakenMtime && s.MetaRead(f.path) < photoMetaVersion
			if !whole && m.MotionRead {
				return nil
			}
			rec, ok, err := s.File(f.path)
			if err != nil {
				return err
			}
			if ok && !rec.Failed() {
				// None yet, or dated by an older reader by the file's
				// time: read again; else only looked at for a video.
				t := metaTodo{found: f}
				if !whole {
					t.old = &m
				}
				todo = append(todo, t)
			}
			return nil
		}
		for _, f := range wk.files {
			if err := look(f); err != nil {
				return err
			}
		}
		for r := range b.old.all() { // the files the walk found unchanged
			if r.flags&recSame != 0 {
				if err := look(b.old.statOf(r)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := b.readMissingMeta(ctx, todo); err != nil {
		return err
	}
	if err := b.refreshVideoMeta(ctx, wk); err != nil { // videometa.go
		return err
	}
	if !stale {
		return nil
	}
	// Every record, not only those under the roots: the version is the
	// index's. Only the records whose names change are written.
	type change struct {
		path string
		m    store.Meta
	}
	var changes []change
	err = b.w.View(func(s *store.Snapshot) error {
		return s.EachMeta(func(p string, m store.Meta) error {
			if resolvePlace(&m) {
				changes = append(changes, change{p, m})
			}
			return ctx.Err()
		})
	})
	if err != nil {
		return err
	}
	for _, c := range changes {
		b.batch.PutMeta(c.path, c.m)
		b.pending++
		if err := b.maybeCommit(false); err != nil {
			return err
		}
	}
	b.batch.SetPlacesVersion(places)
	b.pending++
	return b.maybeCommit(true)
}

// readMotion sets the Motion Photo fields of m from the file r of size
// bytes (its JPEG headers and last bytes, or its HEIF boxes' headers, are
// read; a Motion Photo's video is checked where they say it is).
func readMotion(m *store.Meta, r io.ReaderAt, size int64) {
	_, m.Motion = preprocess.FindMotionVideo(r, size)
	m.MotionRead = true
}

// metaTodo is a file whose metadata completeMeta reads: whole, or, with
// old, only whether it is a Motion Photo (a record of an older clipidx).
type metaTodo struct {
	found
	old *store.Meta
}

// headerMeta reads the metadata of t from the bytes that hold it (a JPEG's
// headers, other files whole: preprocess.MetaBytes), or only whether it is
// a Motion Photo; nil when the file changed since the walk or cannot be
// read.
func (b *builder) headerMeta(t metaTodo) *store.Meta {
	fh, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() != t.size || st.ModTime().UnixNano() != t.mtimeNs {
		return nil
	}
	m := t.old
	if m == nil {
		data, err := preprocess.MetaBytes(fh, t.size, b.opts.MaxFileBytes)
		if err != nil {
			return nil
		}
		m = fileMeta(data, t.mtimeNs)
	}
	readMotion(m, fh, t.size)
	return m
}

// readMissingMeta reads the files of todo on the workers and records their
// metadata. A file that changed since the walk, or cannot be read now, is
// left for the next build (its record is not this step's to change).
func (b *builder) readMissingMeta(ctx context.Context, todo []metaTodo) error {
	return metaPass(ctx, b, todo, b.headerMeta, func(t metaTodo, m *store.Meta) string {
		if m != nil {
			b.putFileMeta(t.path, m)
			b.pending++
		}
		return t.path
	})
}

// metaPass runs read on each item of todo on the build's workers, and
// record with its result on this goroutine (it returns the path the
// progress names), committing as it goes; it stops handing out items once
// ctx is done.
func metaPass[T any](ctx context.Context, b *builder, todo []T, read func(T) *store.Meta, record func(T, *store.Meta) string) error {
	if len(todo) == 0 {
		return nil
	}
	type done struct {
		item T
		m    *store.Meta
	}
	in := make(chan T)
	out := make(chan done, b.opts.Workers)
	var wg sync.WaitGroup
	for range b.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range in {
				out <- done{it, read(it)}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, it := range todo {
			select {
			case in <- it:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	n := 0
	for d := range out {
		n++
		path := record(d.item, d.m)
		b.event(Event{Phase: "meta", Done: n, Total: len(todo), Path: path})
		if err := b.maybeCommit(false); err != nil {
			for range out { // let the workers finish
			}
			return err
		}
	}
	if err := b.maybeCommit(true); err != nil {
		return err
	}
	return ctx.Err()
}
