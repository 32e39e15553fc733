// Command duplicates lists groups of near-duplicate photos found in a clipidx
// index: burst shots, resized or re-encoded copies, light edits. It needs no
// model: it reads the vectors `clipidx build` stored (package store) and asks
// package search for each vector's neighbours above a cosine threshold, then
// joins neighbours into groups (union-find). Files with identical bytes share
// one vector and always land in the same group.
//
//	go run ./examples/duplicates
//	go run ./examples/duplicates -db ~/photos.db -threshold 0.93 -under ~/Pictures/2024
//
// Each group prints as a header line and one line per photo: the cosine to
// the group's first photo (by name), then the path. Every vector is searched once
// against the whole index, so the cost grows with the square of the number of
// photos: seconds for a few thousand, minutes for a hundred thousand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "duplicates:", err)
		os.Exit(1)
	}
}

// group is a set of vectors (and their files) that are near each other.
type group struct {
	ids   []store.VecID
	paths []string
	score map[string]float32 // cosine to the group's first vector, per path
}

func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("duplicates", flag.ContinueOnError)
	fl.SetOutput(stderr)
	db := fl.String("db", store.DefaultPath(), "index database file")
	threshold := fl.Float64("threshold", 0.95, "cosine at or above which two photos are near-duplicates")
	k := fl.Int("k", 20, "neighbours looked at per photo")
	under := fl.String("under", "", "only photos inside this folder")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 0 {
		return errors.New("no arguments expected; see -h")
	}
	opts := search.Options{K: *k, Threshold: new(float32(*threshold))}
	if *under != "" {
		abs, err := filepath.Abs(*under)
		if err != nil {
			return err
		}
		opts.Under = []string{abs}
	}
	r, err := store.OpenReader(*db, store.ReaderOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	var groups []group
	err = r.View(func(s *store.Snapshot) error {
		var err error
		groups, err = findGroups(s, opts)
		return err
	})
	if err != nil {
		return err
	}
	files := 0
	for i, g := range groups {
		fmt.Fprintf(stdout, "group %d: %d photos\n", i+1, len(g.paths))
		for _, p := range g.paths {
			fmt.Fprintf(stdout, "  %.4f  %s\n", g.score[p], p)
		}
		files += len(g.paths)
	}
	fmt.Fprintf(stderr, "%d groups, %d photos\n", len(groups), files)
	return nil
}

// findGroups searches every vector's neighbours and joins them. Groups come
// largest first, then by first path; paths within a group by descending
// score, then name.
func findGroups(s *store.Snapshot, opts search.Options) ([]group, error) {
	dir := ""
	if len(opts.Under) == 1 {
		dir = opts.Under[0]
	}
	paths := map[store.VecID][]string{}
	err := s.Files(dir, func(p string, f store.File) error {
		if f.Vec != 0 {
			paths[f.Vec] = append(paths[f.Vec], p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([]store.VecID, 0, len(paths))
	for id := range paths {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })

	parent := map[store.VecID]store.VecID{}
	var find func(store.VecID) store.VecID
	find = func(x store.VecID) store.VecID {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	for _, id := range ids {
		res, err := search.Search(s, s.Vector(id), opts)
		if err != nil {
			return nil, fmt.Errorf("search neighbours of %s: %w", paths[id][0], err)
		}
		for _, r := range res {
			if r.ID == id || paths[r.ID] == nil {
				continue
			}
			if a, b := find(id), find(r.ID); a != b {
				parent[max(a, b)] = min(a, b) // the smaller id is the root
			}
		}
	}

	byRoot := map[store.VecID]*group{}
	var out []group
	for _, id := range ids { // ascending, so a root's own id comes first
		root := find(id)
		g := byRoot[root]
		if g == nil {
			g = &group{score: map[string]float32{}}
			byRoot[root] = g
		}
		g.ids = append(g.ids, id)
	}
	for _, id := range ids {
		g := byRoot[id]
		if g == nil {
			continue
		}
		// The anchor is the member with the first path in name order.
		anchor := g.ids[0]
		for _, m := range g.ids {
			if paths[m][0] < paths[anchor][0] {
				anchor = m
			}
		}
		first := s.Vector(anchor)
		for _, m := range g.ids {
			c := dot(first, s.Vector(m)) // stored vectors are unit length
			for _, p := range paths[m] {
				g.paths = append(g.paths, p)
				g.score[p] = c
			}
		}
		if len(g.paths) < 2 {
			continue
		}
		sort.SliceStable(g.paths, func(a, b int) bool {
			sa, sb := g.score[g.paths[a]], g.score[g.paths[b]]
			if sa != sb {
				return sa > sb
			}
			return g.paths[a] < g.paths[b]
		})
		out = append(out, *g)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if len(out[a].paths) != len(out[b].paths) {
			return len(out[a].paths) > len(out[b].paths)
		}
		return out[a].paths[0] < out[b].paths[0]
	})
	return out, nil
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
