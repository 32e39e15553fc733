package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkForgetFreesVectors forgets a folder of n files, each with a
// vector of its own, so that every vector is freed. The time per file
// stays about the same from 10k to 40k files (it grew with n when the
// whole forget was one transaction: 0.5 s of CPU for 10k, 7 s for 40k on
// an AMD EPYC Zen 3). Compare the ns/file of the sizes in one run:
//
//	go test ./store -run '^$' -bench ForgetFreesVectors -benchtime 1x
func BenchmarkForgetFreesVectors(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var spent time.Duration
			for range b.N {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "x.db")
				w, err := OpenWriter(path, testID, WriterOptions{NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				var batch Batch
				for i := range n {
					batch.Put(fmt.Sprintf("/photos/%06d.jpg", i), File{Hash: hashOf(fmt.Sprint(i))}, vec(uint64(i+1), 8))
				}
				if err := w.Commit(&batch); err != nil {
					b.Fatal(err)
				}
				w.Close()
				b.StartTimer()
				t0 := time.Now()
				got, err := Forget(path, []string{"/photos"}, WriterOptions{NoSync: true})
				spent += time.Since(t0)
				if err != nil || got != n {
					b.Fatalf("forgot %d (%v), want %d", got, err, n)
				}
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*n), "ns/file")
		})
	}
}

// TestForgetAcrossTransactions: a forget of more records than one of its
// transactions removes leaves a sound index: every record under the
// folder gone, a vector shared by two of them (in different
// transactions) freed once, one shared with a file outside kept.
func TestForgetAcrossTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := openW(t, path)
	var b Batch
	n := 2*forgetBatch + 100
	for i := range n {
		// Files i and i+forgetBatch share their content (one vector).
		k := i % forgetBatch
		b.Put(fmt.Sprintf("/photos/%06d.jpg", i), File{Hash: hashOf(fmt.Sprint(k))}, vec(uint64(k+1), 8))
	}
	b.Put("/other/keep.jpg", File{Hash: hashOf("7")}, vec(8, 8)) // shares file 7's
	commit(t, w, &b)
	closeW(t, w)

	got, err := Forget(path, []string{"/photos"}, WriterOptions{NoSync: true})
	if err != nil || got != n {
		t.Fatalf("Forget: %d, %v; want %d", got, err, n)
	}
	mustCheck(t, path, false)
	view(t, path, func(s *Snapshot) {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Images != 1 || st.Vectors != 1 {
			t.Errorf("after the forget: %d images, %d vectors; want the 1 file outside and its vector", st.Images, st.Vectors)
		}
		if _, ok, _ := s.File("/other/keep.jpg"); !ok {
			t.Error("the file outside the folder is gone")
		}
	})
}
