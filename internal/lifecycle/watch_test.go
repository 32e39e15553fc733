package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/watch"
	"github.com/clipidx/clipidx/store"
)

// TestLifecycleWatch lives a library's life under `watch`: files are
// added (some twice), changed, copied, renamed and deleted and a folder
// moves, while a watcher over lib builds what changed (the filesystem's
// own events, no rescan). After every few steps, once the changes have
// settled, the index must be what a build of lib would make of the index
// as the steps began. CLIPIDX_LIFECYCLE_STEPS sets the steps (default 60).
func TestLifecycleWatch(t *testing.T) {
	steps := int(envInt("CLIPIDX_LIFECYCLE_STEPS", 60))
	if testing.Short() {
		steps = 15
	}
	l := newLab(t, "TestLifecycleWatch", steps)
	l.build("lib")
	l.watching = true

	var mu sync.Mutex
	var faults []string
	var embedded []store.Hash // by the watcher's builds since the steps began
	running := 0              // the watcher's builds under way
	watching := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- watch.Run(ctx, watch.Options{
			Roots:    []string{l.path("lib")},
			Rescan:   -1,
			RootPoll: 100 * time.Millisecond,
			Settle:   40 * time.Millisecond,
			MaxWait:  400 * time.Millisecond,
			Build: func(ctx context.Context, within []string) error {
				mu.Lock()
				running++
				mu.Unlock()
				enc := newEnc()
				o := buildOptions(enc, l.reach, &videoSampler{enc: enc})
				o.Within = within
				_, err := index.Build(ctx, l.db, []string{l.path("lib")}, o)
				mu.Lock()
				embedded = append(embedded, enc.embedded...)
				running--
				mu.Unlock()
				return err
			},
			Notify: func(n watch.Note) {
				switch {
				case n.Kind == "watching":
					once.Do(func() { close(watching) })
				case n.Err != nil, n.Kind == "overflow", n.Kind == "limit":
					mu.Lock()
					faults = append(faults, n.Kind+" "+n.Path+": "+n.Text+" "+errText(n.Err))
					mu.Unlock()
				}
			},
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Errorf("watch: %v", err)
		}
	}()
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher set no watches in 10 s")
	}

	// settled waits until the index is exp, and stays so, and no build is
	// under way: the next steps' check of what was embedded must not count
	// the end of a build that began before them (a build's records are
	// all there a while before it returns its encoder's account).
	settled := func(exp map[string]rec, what string) {
		deadline := time.Now().Add(time.Minute) // generous: the machine may be busy
		var bad []string
		for same := 0; same < 3; {
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			busy := running > 0
			mu.Unlock()
			if bad = diff(l.index(), exp); len(bad) > 0 || busy {
				same = 0
			} else {
				same++
			}
			if time.Now().After(deadline) && len(bad) > 0 {
				l.fatalf("a minute after %s, the watched index differs from what a build makes:\n  %s", what, strings.Join(bad, "\n  "))
			}
			if time.Now().After(deadline) && busy {
				l.fatalf("a minute after %s, the watched index is as a build makes it, but a build is still under way", what)
			}
		}
	}
	for i := 0; i < steps; {
		prev := l.index()
		kept := l.held()
		mu.Lock()
		embedded = nil
		mu.Unlock()
		if l.rng.Intn(12) == 0 {
			l.rootAway(prev, settled)
			i++
		}
		for n := 1 + l.rng.Intn(4); n > 0 && i < steps; n, i = n-1, i+1 {
			if l.rng.Intn(10) == 0 {
				l.moveFolder()
			} else {
				l.fileStep(l.rng.Intn(44))
			}
		}
		settled(l.expectBuild(prev, "lib"), "the changes")
		mu.Lock()
		if len(faults) > 0 {
			l.fatalf("the watcher said: %s", strings.Join(faults, "; "))
		}
		// A moved, renamed or copied file takes its vector from the
		// index, even when its old path's removal is built first.
		l.checkEmbedded(prev, kept, embedded)
		mu.Unlock()
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// rootAway takes the watched root away, as an unplugged disk: renamed, or
// left as an empty mount point. The watcher must keep its entries. A
// photo is added to the disk meanwhile (on another machine), and the disk
// comes back, which raises no event in the folders watched: the watcher
// must find it (watch.Options.RootPoll), index the photo, and drop the
// root from the offline list (once a root that came back stayed offline,
// unwatched, until the next rescan).
func (l *lab) rootAway(prev map[string]rec, settled func(map[string]rec, string)) {
	lib, gone := l.path("lib"), l.path("lib.away")
	empty := l.rng.Intn(2) == 0
	l.step("the disk of lib is away (empty mount point: %v)", empty)
	if err := os.Rename(lib, gone); err != nil {
		l.t.Fatal(err)
	}
	if empty {
		if err := os.Mkdir(lib, 0o755); err != nil {
			l.t.Fatal(err)
		}
	}
	settled(prev, "lib went away")
	data := l.content()
	p := l.newName("lib/a", extFor(data))
	l.step("add %s (%s) on the away disk", p, kindOf(data))
	l.write(filepath.Join(gone, "a", filepath.Base(p)), data)
	if empty {
		if err := os.Remove(lib); err != nil {
			l.t.Fatal(err)
		}
	}
	l.step("the disk of lib is back")
	if err := os.Rename(gone, lib); err != nil {
		l.t.Fatal(err)
	}
	settled(l.expectBuild(prev, "lib"), "lib came back")
	deadline := time.Now().Add(time.Minute)
	for len(l.offline()) > 0 {
		if time.Now().After(deadline) {
			l.fatalf("a minute after lib came back, it is still offline: %+v", l.offline())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// offline lists the folders the index keeps offline.
func (l *lab) offline() []store.Offline {
	r, err := store.OpenReader(l.db, store.ReaderOptions{Timeout: 10 * time.Second})
	if err != nil {
		l.t.Fatal(err)
	}
	defer r.Close()
	var off []store.Offline
	if err := r.View(func(s *store.Snapshot) error {
		off, err = s.Offline()
		return err
	}); err != nil {
		l.t.Fatal(err)
	}
	return off
}
