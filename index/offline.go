package index

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clipidx/clipidx/store"
)

// A disk that is away is not a deletion. The walk marks as away (awayDir)
// a folder that cannot be read, a root or mount point that lists nothing,
// a former mount point that no longer is one (the bare folder of a disk
// that is gone), and Build a root or former mount point that no longer
// exists. The records under such a path are kept with their vectors and
// listed offline (store.Offline) until a build finds the path back, when
// its unchanged files need no model run; clipidx forget drops them.

// holdsRecords reports whether a sorted path list has dir, a path under it
// or a sample of the tar shard dir (store.Within).
func holdsRecords(sorted []string, dir string) bool {
	if i := sort.SearchStrings(sorted, dir); i < len(sorted) && sorted[i] == dir {
		return true
	}
	for _, prefix := range []string{strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator), dir + SampleSep} {
		if i := sort.SearchStrings(sorted, prefix); i < len(sorted) && strings.HasPrefix(sorted[i], prefix) {
			return true
		}
	}
	return false
}

// awayRoots splits roots into those to walk and those that no longer
// exist but hold records (marked away on wk). A missing root that holds
// nothing is an error: a typo, or a folder never indexed.
func awayRoots(wk *walker, roots []string, held func(string) bool) ([]string, error) {
	var walk []string
	for _, r := range roots {
		_, err := os.Lstat(r)
		switch {
		case err == nil || !errors.Is(err, fs.ErrNotExist):
			walk = append(walk, r)
		case held(r):
			wk.goAway(r, "no longer exists")
		default:
			return nil, err
		}
	}
	return walk, nil
}

// goneMounts marks away each former mount point under the walked roots
// that no longer exists at all (the folder went with its disk) and held
// records; one inside a folder already away is that folder's.
func goneMounts(wk *walker, roots []string) {
	for m := range wk.wasMount {
		if !slices.ContainsFunc(roots, func(r string) bool { return store.Under(m, r) }) || wk.awayWithin(m) {
			continue
		}
		if _, err := os.Lstat(m); errors.Is(err, fs.ErrNotExist) && wk.held(m) {
			wk.goAway(m, "its mount point no longer exists")
		}
	}
}

// awayWithin reports whether p is within a path marked away.
func (w *walker) awayWithin(p string) bool {
	return slices.ContainsFunc(w.away, func(a awayDir) bool { return store.Within(p, a.path) })
}

// withinCount counts the sorted paths Within dir for which keep is true.
func withinCount(sorted []string, dir string, keep func(string) bool) int {
	n := 0
	// Every path Within dir starts with dir; others that do ("dir-2")
	// are mixed in and skipped.
	for i := sort.SearchStrings(sorted, dir); i < len(sorted) && strings.HasPrefix(sorted[i], dir); i++ {
		if store.Within(sorted[i], dir) && keep(sorted[i]) {
			n++
		}
	}
	return n
}

// offline returns the paths marked away that kept records (outermost
// only), each with the number of records kept under it, the time it was
// first found away taken from prev when it was already offline.
func offline(away []awayDir, prev []store.Offline, sorted []string, kept func(string) bool, now string) []store.Offline {
	away = slices.Clone(away)
	slices.SortStableFunc(away, func(a, b awayDir) int { return strings.Compare(a.path, b.path) })
	list := []store.Offline{}
	for _, a := range away {
		if len(list) > 0 && store.Within(a.path, list[len(list)-1].Dir) {
			continue // inside a folder already listed
		}
		n := withinCount(sorted, a.path, kept)
		if n == 0 {
			continue // nothing was indexed there: nothing to keep
		}
		o := store.Offline{Dir: a.path, Since: now, Reason: a.reason, Entries: n}
		if i := slices.IndexFunc(prev, func(p store.Offline) bool { return p.Dir == a.path }); i >= 0 {
			o.Since = prev[i].Since
		}
		list = append(list, o)
	}
	return list
}

// recordAway writes what a complete build found: the offline folders
// (those of earlier builds outside this build's roots stay as they were)
// and the mount points (those under its roots replaced by what the walk
// saw, except under a folder that is away).
func (b *builder) recordAway(roots []string, wk *walker) error {
	var prev []store.Offline
	var mounts []string
	err := b.w.View(func(s *store.Snapshot) error {
		var err error
		if prev, err = s.Offline(); err != nil {
			return err
		}
		mounts, err = s.Mounts()
		return err
	})
	if err != nil {
		return err
	}
	kept := func(p string) bool { return !wk.saw(p) && !b.keepRecord(p) }
	if len(wk.away) > 0 {
		b.sum.Offline = offline(wk.away, prev, b.oldPaths(), kept, time.Now().UTC().Format(time.RFC3339))
	}
	underRoots := func(p string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return store.Within(p, r) })
	}
	list := slices.DeleteFunc(slices.Clone(prev), func(o store.Offline) bool { return underRoots(o.Dir) })
	list = append(list, b.sum.Offline...)
	slices.SortFunc(list, func(a, b store.Offline) int { return strings.Compare(a.Dir, b.Dir) })
	now := slices.DeleteFunc(slices.Clone(mounts), func(m string) bool { return underRoots(m) && !wk.awayWithin(m) })
	now = append(now, wk.mounts...)
	slices.Sort(now)
	now = slices.Compact(now)
	if slices.Equal(list, prev) && slices.Equal(now, mounts) {
		return nil // the usual case: spare a commit
	}
	return b.w.SetAway(list, now)
}

// missingWithoutIndex returns the error of the first root that does not
// exist when there is no index yet that could hold records under it, so
// that a mistyped folder creates no index.
func missingWithoutIndex(dbPath string, roots []string) error {
	if _, err := os.Stat(dbPath); err == nil {
		return nil
	}
	for _, r := range roots {
		if _, err := os.Lstat(r); errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
