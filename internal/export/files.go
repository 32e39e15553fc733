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
	// Held while it is written, so that another export tells it from a
	// killed one's (flock.Busy); where locks are not to be had (some
	// network filesystems) it is written all the same.
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

type countWriter struct{ o *outFile }

// writeFile writes to an output's temporary file; a variable so that tests
// can make a write fail as on a full disk.
var writeFile = (*os.File).Write

func (c countWriter) Write(p []byte) (int, error) {
	n, err := writeFile(c.o.f, p)
	c.o.n += int64(n)
	return n, err
}

// finish flushes, syncs and closes the temporary file (still unnamed).
func (o *outFile) finish(noSync bool) error {
	if err := o.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.final, err)
	}
	if !noSync {
		if err := o.f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", o.final, err)
		}
	}
	if err := o.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", o.final, err)
	}
	return nil
}

// publish gives the finished file its final name, failing with ErrExists
// when another process created that name meanwhile.
func (o *outFile) publish() error {
	err := os.Link(o.f.Name(), o.final)
	os.Remove(o.f.Name())
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", o.final, ErrExists)
	}
	return err
}

// discard removes the temporary file.
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
				os.Remove(q.f.Name())
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
