package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { benchCommands = append(benchCommands, newBenchSearchCmd) }

type benchSearchJSON struct {
	Vectors int     `json:"vectors"`
	Dim     int     `json:"dim"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

func newBenchSearchCmd() *cobra.Command {
	var n, dim, queries, k int
	var asJSON, exact bool
	var dir string
	c := &cobra.Command{
		Use:   "search --vectors N",
		Short: "Time searches over a temporary index of random unit vectors",
		Long: `Fill a temporary index with N random unit vectors (one file each), then time
top-k searches for random queries on this machine. It needs about 4·N·dim
bytes of disk under --dir (the system temporary folder by default).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n <= 0 || dim <= 0 || queries <= 0 || k <= 0 {
				return usageError("--vectors, --dim, --queries and --k take a count ≥ 1")
			}
			choice := chooseKernels() // the scan kernel this CPU runs fastest
			tmp, left, release, err := benchScratch(dir, "clipidx-bench-search-")
			noteLeftovers(cmd.ErrOrStderr(), left, "bench search")
			if err != nil {
				return err
			}
			defer release()
			// Ctrl-C or SIGTERM stops the fill or the queries; the
			// temporary index is removed.
			ctx, stop := stopContext(cmd.Context())
			defer stop()
			interrupted := func(err error) error {
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					return &exitError{code: interruptCode(ctx), err: fmt.Errorf("interrupted: removed the temporary index in %s", tmp)}
				}
				return err
			}
			path := filepath.Join(tmp, "bench.db")
			start := time.Now()
			if err := fillRandom(ctx, path, n, dim); err != nil {
				return interrupted(err)
			}
			fill := time.Since(start)
			r, err := store.OpenReader(path, store.ReaderOptions{})
			if err != nil {
				return err
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(2, 2))
			var ms []float64
			err = r.View(func(s *store.Snapshot) error {
				for i := range queries + 1 {
					if err := ctx.Err(); err != nil {
						return err
					}
					q := randomVector(rng, dim)
					t := time.Now()
					if _, err := search.Search(s, q, search.Options{K: k, Threads: g.threads, Exact: exact}); err != nil {
						return err
					}
					if i > 0 { // the first query warms the page cache
						ms = append(ms, float64(time.Since(t).Microseconds())/1000)
					}
				}
				return nil
			})
			if err != nil {
				return interrupted(err)
			}
			slices.Sort(ms)
			res := benchSearchJSON{Vectors: n, Dim: dim, P50: percentile(ms, 50), P99: percentile(ms, 99)}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			mode := "16-bit scan + exact re-rank"
			if exact {
				mode = "exact float32 scan"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d %s × %d (%s), %d %s, k=%d: p50 %.2f ms, p99 %.2f ms (index filled in %v)\n",
				n, plural(n, "vector", "vectors"), dim, mode, queries, plural(queries, "query", "queries"), k, res.P50, res.P99, fill.Round(time.Millisecond))
			if !exact {
				fmt.Fprintf(cmd.OutOrStdout(), "scan kernel %s%s\n", search.Kernel(), measuredAs(choice, contestSearch))
			}
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&n, "vectors", 100000, "number of vectors in the index")
	f.IntVar(&dim, "dim", 1024, "vector dimension")
	f.IntVar(&queries, "queries", 20, "number of timed queries")
	f.IntVar(&k, "k", 10, "results per query")
	f.BoolVar(&asJSON, "json", false, `print {"vectors","dim","p50_ms","p99_ms"}`)
	f.BoolVar(&exact, "exact", false, "scan the full float32 vectors (the slower reference path)")
	f.StringVar(&dir, "dir", "", "folder for the temporary index (default: the system temporary folder)")
	return c
}

// fillRandom writes n random unit vectors, one fake file each; ctx stops
// it between commits.
func fillRandom(ctx context.Context, path string, n, dim int) error {
	w, err := store.OpenWriter(path, store.Identity{Model: "bench-random", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		return err
	}
	defer w.Close()
	bar := newProgress("filling", "vectors", int64(n))
	defer bar.done()
	rng := rand.New(rand.NewPCG(1, 1))
	var b store.Batch
	for i := range n {
		h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		b.Put(fmt.Sprintf("/bench/%09d.jpg", i), store.File{Size: 1, Hash: h}, randomVector(rng, dim))
		if b.Len() == 1<<14 || i == n-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := w.Commit(&b); err != nil {
				return err
			}
			b.Reset()
			bar.set(i + 1)
		}
	}
	return nil
}

func randomVector(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// percentile of sorted xs (nearest rank).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(float64(len(xs))*p/100+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
