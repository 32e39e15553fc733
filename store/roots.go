package store

import (
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Three optional meta keys (an index without them is a valid schema-1 index):
//
//	roots    JSON array of every folder or tar shard a build or merge ever
//	         indexed into this file (absolute, clean, sorted): what serve
//	         lets an indexed path lead to once its links are resolved
//	offline  JSON array of Offline: folders whose disk was away at the
//	         last build, their entries kept
//	mounts   JSON array of the folders builds found to be mount points
//	         (sorted): one that no longer is has lost its disk
var (
	kRoots   = []byte("roots")
	kOffline = []byte("offline")
	kMounts  = []byte("mounts")
)

// Offline is a folder whose entries a build kept because its disk looked
// away (a mount point without its disk, an unplugged drive's empty folder,
// a folder that could not be read) rather than deleted.
type Offline struct {
	Dir     string `json:"dir"`
	Since   string `json:"since"`   // RFC 3339, UTC: the build that first found it away
	Reason  string `json:"reason"`  // why it looked away, for people
	Entries int    `json:"entries"` // records kept under it at the last build
}

// OfflineFor returns the entry of list whose folder holds path (Within).
func OfflineFor(list []Offline, path string) (Offline, bool) {
	for _, o := range list {
		if Within(path, o.Dir) {
			return o, true
		}
	}
	return Offline{}, false
}

// Roots returns every folder or tar shard ever indexed into the index, by
// any build or merge, sorted. An index written before the registry existed
// answers the last build's roots until its next build or merge adds them.
func (s *Snapshot) Roots() ([]string, error) {
	m := s.tx.Bucket(bMeta)
	if v := m.Get(kRoots); v != nil {
		var roots []string
		if err := json.Unmarshal(v, &roots); err != nil {
			return nil, fmt.Errorf("%w: roots: %v", ErrCorrupt, err)
		}
		return readPaths(roots), nil
	}
	st, err := s.Stats()
	if err != nil || st.LastBuild == nil {
		return nil, err
	}
	return slices.Clone(st.LastBuild.Roots), nil
}

// Outermost returns the paths of a sorted list that lie within no other
// (what a build of every indexed folder walks: /p, not /p and /p/2024).
func Outermost(sorted []string) []string {
	var out []string
	for _, p := range sorted {
		if len(out) == 0 || !Within(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// Offline returns the folders kept offline by the last build, sorted.
func (s *Snapshot) Offline() ([]Offline, error) {
	return readOffline(s.tx)
}

func readOffline(tx *bolt.Tx) ([]Offline, error) {
	v := tx.Bucket(bMeta).Get(kOffline)
	if v == nil {
		return nil, nil
	}
	var list []Offline
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("%w: offline: %v", ErrCorrupt, err)
	}
	for i := range list {
		list[i].Dir = readPath(list[i].Dir)
	}
	return list, nil
}

func putOffline(tx *bolt.Tx, list []Offline) error {
	m := tx.Bucket(bMeta)
	if len(list) == 0 {
		return m.Delete(kOffline)
	}
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b Offline) int {
		switch {
		case a.Dir < b.Dir:
			return -1
		case a.Dir > b.Dir:
			return 1
		}
		return 0
	})
	for i := range list {
		list[i].Dir = keepPath(list[i].Dir)
	}
	js, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return m.Put(kOffline, js)
}

// Mounts returns the folders builds found to be mount points, sorted.
func (s *Snapshot) Mounts() ([]string, error) {
	return readMounts(s.tx)
}

func readMounts(tx *bolt.Tx) ([]string, error) {
	v := tx.Bucket(bMeta).Get(kMounts)
	if v == nil {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("%w: mounts: %v", ErrCorrupt, err)
	}
	return readPaths(list), nil
}

func putMounts(tx *bolt.Tx, list []string) error {
	if len(list) == 0 {
		return tx.Bucket(bMeta).Delete(kMounts)
	}
	list = slices.Clone(list)
	slices.Sort(list)
	js, err := json.Marshal(keepPaths(slices.Compact(list)))
	if err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kMounts, js)
}

// addRoots adds roots to the registry (a union, kept sorted). A root whose
// bytes are not UTF-8 replaces the lossy form an older clipidx recorded
// for it (lossyPath), a folder that does not exist.
func addRoots(tx *bolt.Tx, roots []string) error {
	have, err := (&Snapshot{tx: tx}).Roots()
	if err != nil {
		return err
	}
	for _, r := range roots {
		if l := lossyPath(r); l != r {
			have = slices.DeleteFunc(have, func(h string) bool { return h == l })
		}
	}
	return putRoots(tx, append(have, roots...))
}

// putRoots writes the registry: roots, sorted, each once.
func putRoots(tx *bolt.Tx, roots []string) error {
	roots = slices.Clone(roots)
	slices.Sort(roots)
	js, err := json.Marshal(keepPaths(slices.Compact(roots)))
	if err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kRoots, js)
}

// dropWithin removes from the registry, the offline list and the mount
// points every root and folder Within one of paths (what Forget forgot).
func dropWithin(tx *bolt.Tx, paths []string) error {
	within := func(p string) bool {
		return slices.ContainsFunc(paths, func(d string) bool { return Within(p, d) })
	}
	if tx.Bucket(bMeta).Get(kRoots) != nil {
		roots, err := (&Snapshot{tx: tx}).Roots()
		if err != nil {
			return err
		}
		if err := putRoots(tx, slices.DeleteFunc(roots, within)); err != nil {
			return err
		}
	}
	mounts, err := readMounts(tx)
	if err != nil {
		return err
	}
	if err := putMounts(tx, slices.DeleteFunc(mounts, within)); err != nil {
		return err
	}
	list, err := readOffline(tx)
	if err != nil {
		return err
	}
	return putOffline(tx, slices.DeleteFunc(list, func(o Offline) bool { return within(o.Dir) }))
}

// AddRoots records roots (absolute, clean) as indexed into this file. A
// build calls it before its first commit, so that a record is never in the
// index without the folder that lets serve show it.
func (w *Writer) AddRoots(roots []string) error {
	return w.update(func(tx *bolt.Tx) error { return addRoots(tx, roots) })
}

// SetOffline replaces the list of offline folders.
func (w *Writer) SetOffline(list []Offline) error {
	return w.update(func(tx *bolt.Tx) error { return putOffline(tx, list) })
}

// SetAway replaces the list of offline folders and that of mount points
// in one commit (what a build found).
func (w *Writer) SetAway(offline []Offline, mounts []string) error {
	return w.update(func(tx *bolt.Tx) error {
		if err := putMounts(tx, mounts); err != nil {
			return err
		}
		return putOffline(tx, offline)
	})
}
