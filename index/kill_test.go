package index

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// envKillChild makes TestKillChildBuild run a build (in a child process
// started by TestSIGKILLMidBuild) on the folder and index it names.
const envKillChild = "CLIPIDX_TEST_KILL_CHILD"

// killAfter is how many records the child commits before it tells the
// parent to kill it; its encoder then embeds at most killSlack more images
// and blocks, so the build can never finish before the kill lands.
const (
	killAfter  = 20
	killSlack  = 10
	killMarker = "clipidx-kill-child: committed"
)

// stuckEnc is fakeEnc that blocks for ever once it has embedded limit
// images.
type stuckEnc struct {
	fakeEnc
	limit int64
}

func (e *stuckEnc) EncodeImages(pix []float32, n int) ([]float32, error) {
	for e.images.Load()+int64(n) > e.limit {
		// The parent kills the process here at the latest. (A sleep, not
		// an empty select: the runtime must not see a deadlock and exit.)
		time.Sleep(time.Hour)
	}
	return e.fakeEnc.EncodeImages(pix, n)
}

func TestKillChildBuild(t *testing.T) {
	spec := os.Getenv(envKillChild)
	if spec == "" {
		t.Skip("helper process for TestSIGKILLMidBuild")
	}
	dir, db := filepath.Dir(spec), filepath.Join(filepath.Dir(filepath.Dir(spec)), "i.db")
	o := opts(nil)
	o.Encoder = &stuckEnc{limit: killAfter + killSlack}
	o.BatchSize, o.CommitEvery = 2, 4
	told := false
	o.committed = func(records int) {
		if !told && records >= killAfter {
			told = true
			// The parent reads this line and kills the process; the build
			// goes on meanwhile, so the kill lands at whatever point it has
			// reached (a commit, a pass, a wait), but before its end.
			fmt.Printf("%s %d\n", killMarker, records)
		}
	}
	_, err := Build(context.Background(), db, []string{dir}, o)
	t.Errorf("the build returned (%v) before it was killed", err)
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
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("kill the child: %v", err)
		}
	}
	defer kill()
	// Only a child that never reports (a broken hook) meets this bound: its
	// output then ends and the test fails instead of hanging.
	stopper := time.AfterFunc(2*time.Minute, kill)
	defer stopper.Stop()

	// Wait for the child to say it has committed killAfter records, then
	// kill it without warning. No clock: the child is stuck before it can
	// finish, however slow or fast the machine is.
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), killMarker) {
		lines = append(lines, sc.Text())
	}
	reported := strings.HasPrefix(sc.Text(), killMarker)
	kill()
	if _, err := io.Copy(io.Discard, out); err != nil {
		t.Errorf("read the child's output: %v", err)
	}
	err = cmd.Wait() // stderr is complete only now
	if !reported {
		t.Fatalf("the child never reported %d committed records (%v, %v); its output:\n%s\n%s", killAfter, sc.Err(), err, strings.Join(lines, "\n"), stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 { // -1: ended by a signal
		t.Fatalf("the child ended with %v, want killed by a signal; stderr:\n%s", err, stderr.String())
	}

	if err := store.Check(db); err != nil {
		t.Fatalf("index after SIGKILL: %v", err)
	}
	img, _ := verify(t, db)
	t.Logf("the index held %d images after the kill", img)
	if img < killAfter || img > killAfter+killSlack {
		t.Fatalf("after the kill the index holds %d images, want between %d and %d", img, killAfter, killAfter+killSlack)
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
