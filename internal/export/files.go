package export

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/clipidx/clipidx/internal/flock"
	"github.com/clipidx/clipidx/store"
)

// ErrExists is returned when an output file exists already: export never
// overwrites one.
var ErrExists = errors.New("exists already; export never overwrites a file: remove it or choose another output")

// outFile is an output written under a temporary name beside its final
// name and linked there only when complete, so that a file of the final
// name is always whole and never replaced (link fails when it exists).
type outFile struct {
	final string
	f     *os.File
	*bufio.Writer
	n int64 // bytes written
}

func createOut(final string) (*outFile, error) {
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("%s: %w", final, ErrExists)
	}
	f, err := createTemp(filepath.Dir(final), "."+filepath.Base(final)+".tmp-")
	if err != nil {
		// Named by the final file, not its hidden temporary name.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("create %s: %w", final, err)
	}
	if tempCreated != nil {
		tempCreated(f.Name())
	}
	// Held while it is written, so that another export tells it from a
	// killed one's (flock.Busy); where locks are not to be had (some
	// network filesystems) it is written all the same. Until it is held it
	// looks like a killed export's: FaissFlat creates its files under the
	// lock of their folder, which another FaissFlat takes to look for
	// leftovers (a clip-retrieval folder is locked whole).
	_ = flock.Hold(f)
	o := &outFile{final: final, f: f}
	o.Writer = bufio.NewWriterSize(countWriter{o}, 4<<20)
	return o, nil
}

// createTemp creates a new file named prefix and a random number in dir
// with mode 0o666 less the umask, the mode os.Create gives: the file is
// published under its final name as it is (os.CreateTemp would make it
// 0600, unreadable to the group that reads the export).
func createTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// tempCreated, when set (by tests), is called with the name of each
// temporary file as soon as it is created, before it is held.
var tempCreated func(name string)

// folderWait is how long FaissFlat waits for the lock of its file's
// folder, which another export holds while it looks for leftovers and
// creates its temporary files there (or, a clip-retrieval export, while
// it writes into that folder).
var folderWait = 5 * time.Second

// lockFolder takes the lock of the folder dir, waiting up to folderWait
// while another export holds it; then it fails with flock.ErrHeld.
func lockFolder(dir string) (*flock.File, error) {
	deadline := time.Now().Add(folderWait)
	for {
		l, err := flock.TryLockDir(dir)
		if !errors.Is(err, flock.ErrHeld) || !time.Now().Before(deadline) {
			return l, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type countWriter struct{ o *outFile }

// writeFile writes to an output's temporary file; a variable so that tests
// can make a write fail as on a full disk.
var writeFile = (*os.File).Write

func (c countWriter) Write(p []byte) (int, error) {
	n, err := writeFile(c.o.f, p)
	c.o.n += int64(n)
	return n, err
}

// finish flushes and syncs the temporary file (still unnamed); publish
// closes it.
func (o *outFile) finish(noSync bool) error {
	if err := o.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.final, err)
	}
	if !noSync {
		if err := o.f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", o.final, err)
		}
	}
	if !flock.Supported {
		// Nothing is held; some systems refuse to link an open file.
		if err := o.f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", o.final, err)
		}
	}
	return nil
}

// publish gives the finished file its final name, failing with ErrExists
// when another process created that name meanwhile. The temporary file is
// held (open) until it has its final name: another export that found it
// unheld before would take it for a killed export's and remove it.
func (o *outFile) publish() error {
	err := os.Link(o.f.Name(), o.final)
	cerr := o.f.Close()
	if !flock.Supported {
		cerr = nil // closed by finish
	}
	os.Remove(o.f.Name())
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s: %w", o.final, ErrExists)
	case err != nil:
		return err
	case cerr != nil:
		os.Remove(o.final)
		return fmt.Errorf("write %s: %w", o.final, cerr)
	}
	return nil
}

// discard closes (if still open) and removes the temporary file.
func (o *outFile) discard() {
	o.f.Close()
	os.Remove(o.f.Name())
}

// group is the set of files one export writes: all published, or none.
type group []*outFile

func (g group) abort() {
	for _, o := range g {
		o.discard()
	}
}

// commit finishes every file, then publishes them in order and syncs
// their folders; a failure removes the files this group published
// already, the last published first (so the last file of a group is
// there only while all the others are).
func (g group) commit(noSync bool) (int64, error) {
	var bytes int64
	for _, o := range g {
		if err := o.finish(noSync); err != nil {
			g.abort()
			return 0, err
		}
		bytes += o.n
	}
	for i, o := range g {
		if err := o.publish(); err != nil {
			for _, p := range slices.Backward(g[:i]) {
				os.Remove(p.final)
			}
			for _, q := range g[i+1:] {
				q.discard()
			}
			return 0, err
		}
	}
	if !noSync {
		if err := g.syncFolders(); err != nil {
			for _, o := range slices.Backward(g) {
				os.Remove(o.final)
			}
			return 0, err
		}
	}
	return bytes, nil
}

// syncFolders makes the new names durable: the folder of each published
// file, and that folder's own folder, which may have been created for it
// (img_emb/ in the output folder).
func (g group) syncFolders() error {
	done := map[string]bool{}
	for _, o := range g {
		dir := filepath.Dir(o.final)
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if done[d] {
				continue
			}
			done[d] = true
			if err := syncDir(d); err != nil {
				return fmt.Errorf("sync folder %s: %w", d, err)
			}
		}
	}
	return nil
}

// syncDir fsyncs a folder (store.SyncDir); a variable so that tests can
// see which folders are synced.
var syncDir = store.SyncDir
