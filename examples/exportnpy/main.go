// Command exportnpy exports the vectors of a clipidx index for numpy, FAISS
// and friends: PREFIX.npy holds float32 [N, D] (NPY format 1.0, one
// L2-normalised row per indexed photo, so a dot product is the cosine) and
// PREFIX.paths.txt the photos' paths, one per line: row i is line i.
//
//	go run ./examples/exportnpy -out photos
//	go run ./examples/exportnpy -db ~/photos.db -under ~/Pictures/2024 -unique -out 2024
//
// and then, in Python:
//
//	import numpy as np, faiss
//	v = np.load("photos.npy"); paths = open("photos.paths.txt").read().splitlines()
//	ix = faiss.IndexFlatIP(v.shape[1]); ix.add(v); scores, rows = ix.search(v[:1], 5)
//
// With -unique, photos with identical bytes (which share one vector) give
// one row, and its line lists all their paths separated by tabs.
//
// For the formats other tools read directly, use the command instead:
// `clipidx export --format clip-retrieval OUT` (the embeddings folder of
// clip-retrieval and autofaiss: float16 .npy partitions and Parquet
// metadata) or `clipidx export --format faiss-flat OUT.index`.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/internal/export"
	"github.com/clipidx/clipidx/store"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "exportnpy:", err)
		os.Exit(1)
	}
}

// row is one output row: a vector and the paths it stands for.
type row struct {
	id    store.VecID
	paths []string
}

func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("exportnpy", flag.ContinueOnError)
	fl.SetOutput(stderr)
	db := fl.String("db", store.DefaultPath(), "index database file")
	out := fl.String("out", "clipidx", "output prefix: writes PREFIX.npy and PREFIX.paths.txt")
	under := fl.String("under", "", "only photos inside this folder")
	unique := fl.Bool("unique", false, "one row per distinct vector (identical files share it)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 0 {
		return errors.New("no arguments expected; see -h")
	}
	dir := ""
	if *under != "" {
		abs, err := filepath.Abs(*under)
		if err != nil {
			return err
		}
		dir = abs
	}
	r, err := store.OpenReader(*db, store.ReaderOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	var n, d int
	err = r.View(func(s *store.Snapshot) error {
		rows, err := collect(s, dir, *unique)
		if err != nil {
			return err
		}
		n, d = len(rows), s.Dim()
		return write(s, rows, *out)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s.npy (float32 [%d, %d]) and %s.paths.txt\n", *out, n, d, *out)
	return nil
}

// collect lists the rows in path order (the index's order).
func collect(s *store.Snapshot, dir string, unique bool) ([]row, error) {
	var rows []row
	at := map[store.VecID]int{}
	err := s.Files(dir, func(p string, f store.File) error {
		if f.Vec == 0 {
			return nil // a file that failed to index has no vector
		}
		if strings.ContainsAny(p, "\n\r") || unique && strings.Contains(p, "\t") {
			return fmt.Errorf("path %q cannot be written as one line of the paths file", p)
		}
		if i, ok := at[f.Vec]; ok && unique {
			rows[i].paths = append(rows[i].paths, p)
			return nil
		}
		at[f.Vec] = len(rows)
		rows = append(rows, row{id: f.Vec, paths: []string{p}})
		return nil
	})
	return rows, err
}

func write(s *store.Snapshot, rows []row, prefix string) error {
	vf, err := os.Create(prefix + ".npy")
	if err != nil {
		return err
	}
	defer vf.Close()
	vw := bufio.NewWriterSize(vf, 1<<20)
	if err := writeNPYHeader(vw, len(rows), s.Dim()); err != nil {
		return err
	}
	buf := make([]byte, 4*s.Dim())
	for _, r := range rows {
		v := s.Vector(r.id)
		if len(v) != s.Dim() {
			return fmt.Errorf("vector of %s is missing from the index (run clipidx check)", r.paths[0])
		}
		for i, x := range v {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		if _, err := vw.Write(buf); err != nil {
			return err
		}
	}
	if err := vw.Flush(); err != nil {
		return err
	}
	if err := vf.Close(); err != nil {
		return err
	}

	pf, err := os.Create(prefix + ".paths.txt")
	if err != nil {
		return err
	}
	defer pf.Close()
	pw := bufio.NewWriter(pf)
	for _, r := range rows {
		fmt.Fprintln(pw, strings.Join(r.paths, "\t"))
	}
	if err := pw.Flush(); err != nil {
		return err
	}
	return pf.Close()
}

// writeNPYHeader writes the NPY format 1.0 preamble of a C-order
// little-endian float32 array [rows, cols] (internal/export's writer, the
// one `clipidx export` uses).
func writeNPYHeader(w io.Writer, rows, cols int) error {
	return export.WriteNPYHeader(w, "<f4", rows, cols)
}
