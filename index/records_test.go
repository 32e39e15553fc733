package index

import (
	"crypto/sha256"
	"path/filepath"
	"slices"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// TestOldRecords: the records a build starts from, read scope path by
// scope path (a folder's records, then a shard's samples; one read
// twice), are found by path and by folder and name, listed once each,
// sorted when asked for paths; only failures, videos and frames keep the
// whole record, and frames are grouped by video in time order.
func TestOldRecords(t *testing.T) {
	if filepath.Separator != '/' {
		t.Skip("paths written with /")
	}
	ok := store.File{Size: 10, MtimeNs: 100, CtimeNs: 1000, Hash: store.Hash{1}, Vec: 1}
	bad := store.File{Size: 5, MtimeNs: 50, Err: "corrupt", Kind: store.FailCorrupt, Reach: "jpeg"}
	live := store.File{Size: 7, MtimeNs: 70, Err: store.LiveVideoNote + "IMG_1.HEIC", Kind: store.KindLiveVideo}
	order := []struct {
		path string
		f    store.File
	}{
		{"/top.png", ok},
		{"/a/b-c/x.png", ok},
		{"/a/b/y.png", ok},
		{"/a/bad.png", bad},
		{"/a/v.mp4#t=1.5", ok},
		{"/a/v.mp4#t=0.5", ok},
		{"/a/z.png", ok},
		{"/m/z.png", ok},
		{"/m/IMG_1.MOV", live},
		{"/m/s.tar#k1", ok}, // samples come after the folder's other records
		{"/m/s.tar#k0", ok},
		{"/a/z.png", ok}, // read twice
	}
	x := newOldRecords()
	for _, r := range order {
		x.add(r.path, r.f)
	}
	x.done()
	var want []string
	for _, r := range order {
		want = append(want, r.path)
		rec := x.find(r.path)
		if rec == nil || x.path(rec) != r.path || rec.size != r.f.Size || rec.mtimeNs != r.f.MtimeNs || rec.ctimeNs != r.f.CtimeNs {
			t.Fatalf("find(%s) = %+v", r.path, rec)
		}
		full := x.record(rec)
		if plain := r.f == ok && !IsVideoName(r.path); plain != (full == nil) {
			t.Errorf("%s: whole record %+v, want one %v", r.path, full, !plain)
		} else if full != nil && *full != r.f {
			t.Errorf("%s: whole record %+v, want %+v", r.path, *full, r.f)
		}
		folder, name := filepath.Split(r.path)
		if got := x.lookup(x.dirIndex(filepath.Clean(folder)), name); got != rec {
			t.Errorf("lookup(%s, %s) = %+v, want %+v", folder, name, got, rec)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if got := x.paths(); !slices.Equal(got, want) {
		t.Errorf("paths() = %q\nwant %q", got, want)
	}
	n := 0
	for range x.all() {
		n++
	}
	if n != len(want) {
		t.Errorf("all() yields %d records, want %d", n, len(want))
	}
	for _, p := range []string{"/a", "/a/b", "/a/zz.png", "/m/s.tar", "/m/s.tar#k2", "/b/y.png", "/z.png"} {
		if r := x.find(p); r != nil {
			t.Errorf("find(%s) = %+v, want none", p, r)
		}
	}
	if x.dirIndex("/nowhere") >= 0 || x.lookup(-1, "y.png") != nil {
		t.Error("a folder without records has some")
	}
	if fr := x.frames["/a/v.mp4"]; len(fr) != 2 || fr[0].t != 0.5 || fr[1].t != 1.5 || fr[0].f != ok {
		t.Errorf("frames of /a/v.mp4: %+v", fr)
	}
}

// TestOldRecordsSame: what the walk counts as unchanged (oldRecords.same)
// classify finds unchanged too, and never a record whose ctime the build
// stamps or a failure it may retry.
func TestOldRecordsSame(t *testing.T) {
	x := newOldRecords()
	plain := store.File{Size: 10, MtimeNs: 100, CtimeNs: 500, Hash: store.Hash{1}, Vec: 1}
	noCtime := store.File{Size: 10, MtimeNs: 100, Hash: store.Hash{2}, Vec: 2}
	failed := store.File{Size: 10, MtimeNs: 100, CtimeNs: 500, Err: "unsupported", Kind: store.FailFormat, Reach: "jpeg"}
	x.add("/p/plain.png", plain)
	x.add("/p/old.png", noCtime)
	x.add("/p/failed.png", failed)
	x.done()
	every := retryRule{all: true}
	for _, tc := range []struct {
		path string
		f    store.File
		st   found
		want bool
	}{
		{"/p/plain.png", plain, found{size: 10, mtimeNs: 100, ctimeNs: 500}, true},
		{"/p/plain.png", plain, found{size: 10, mtimeNs: 100, ctimeNs: 501}, false},
		{"/p/plain.png", plain, found{size: 10, mtimeNs: 100}, false}, // no ctime read: classify's to say
		{"/p/plain.png", plain, found{size: 11, mtimeNs: 100, ctimeNs: 500}, false},
		{"/p/plain.png", plain, found{size: 10, mtimeNs: 101, ctimeNs: 500}, false},
		{"/p/old.png", noCtime, found{size: 10, mtimeNs: 100, ctimeNs: 500}, false}, // its ctime is stamped
		{"/p/old.png", noCtime, found{size: 10, mtimeNs: 100}, true},
		{"/p/failed.png", failed, found{size: 10, mtimeNs: 100, ctimeNs: 500}, false},
	} {
		r := x.find(tc.path)
		got := x.same(r, tc.st)
		if got != tc.want {
			t.Errorf("%s %+v: same %v, want %v", tc.path, tc.st, got, tc.want)
		}
		if got && (classify(&tc.f, tc.st, nil, nil, every) != actUnchanged || stampsCtime(&tc.f, tc.st)) {
			t.Errorf("%s %+v: same, but classify says %v", tc.path, tc.st, classify(&tc.f, tc.st, nil, nil, every))
		}
	}
}

// TestHashSet: a sorted set of content hashes has exactly its members.
func TestHashSet(t *testing.T) {
	var in, out []store.Hash
	for i := range 200 {
		h := sha256.Sum256([]byte{byte(i)})
		if i%3 == 0 {
			out = append(out, h)
		} else {
			in = append(in, h)
		}
	}
	set := hashSet(slices.Clone(in))
	slices.SortFunc(set, compareHash)
	for _, h := range in {
		if !set.has(h) {
			t.Errorf("%x missing", h[:4])
		}
	}
	for _, h := range append(out, store.Hash{}, store.Hash{0xff, 0xff, 0xff}) {
		if set.has(h) {
			t.Errorf("%x found, not in the set", h[:4])
		}
	}
	if hashSet(nil).has(in[0]) {
		t.Error("the empty set has a member")
	}
}
