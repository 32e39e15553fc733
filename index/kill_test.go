package index

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// envKillChild makes TestKillChildBuild run a slow build (in a child process
// started by TestSIGKILLMidBuild) on the folder and index it names.
const envKillChild = "CLIPIDX_TEST_KILL_CHILD"

func TestKillChildBuild(t *testing.T) {
	spec := os.Getenv(envKillChild)
	if spec == "" {
		t.Skip("helper process for TestSIGKILLMidBuild")
	}
	dir, db := filepath.Dir(spec), filepath.Join(filepath.Dir(filepath.Dir(spec)), "i.db")
	o := opts(&fakeEnc{delay: 15 * time.Millisecond})
	o.BatchSize, o.CommitEvery = 2, 4
	Build(context.Background(), db, []string{dir}, o)
	t.Error("the build finished before it was killed")
}

func TestSIGKILLMidBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	root := t.TempDir()
	d := filepath.Join(root, "photos")
	db := filepath.Join(root, "i.db")
	const n = 200
	for i := range n {
		write(t, filepath.Join(d, fmt.Sprintf("p%03d.png", i)), fmt.Sprintf("%s%d", png, i))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChildBuild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKillChild+"="+filepath.Join(d, "x"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until a few batches are committed, then kill without warning.
	deadline := time.Now().Add(30 * time.Second)
	images := 0
	for images < 20 {
		if time.Now().After(deadline) {
			t.Fatal("the child build committed nothing in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
		r, err := store.OpenReader(db, store.ReaderOptions{})
		if err != nil {
			continue // not created yet
		}
		r.View(func(s *store.Snapshot) error { st, _ := s.Stats(); images = st.Images; return nil })
		r.Close()
	}
	cmd.Process.Kill()
	cmd.Wait()

	if err := store.Check(db); err != nil {
		t.Fatalf("index after SIGKILL: %v", err)
	}
	img, _ := verify(t, db)
	if img < 20 || img >= n {
		t.Fatalf("after the kill the index holds %d images, want between 20 and %d", img, n)
	}
	// The build lock died with the process: a new build runs, and resumes.
	enc := &fakeEnc{}
	sum, err := Build(context.Background(), db, []string{d}, opts(enc))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Added != n-img || sum.Unchanged != img || enc.images.Load() != int64(n-img) {
		t.Errorf("resume: %s with %d model images, want %d added and %d unchanged", sumOf(sum), enc.images.Load(), n-img, img)
	}
	if got, _ := verify(t, db); got != n {
		t.Errorf("index holds %d images after resuming, want %d", got, n)
	}
}
