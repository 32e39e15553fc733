package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// replaceIndex runs fn on a Writer of a copy of the index at out, made
// beside it, and renames the copy over out once fn succeeded and the copy
// is on disk. It holds out's build lock from before the copy to after the
// rename, so no build writes out meanwhile. On any failure the copy is
// removed and out is left as it was.
func replaceIndex(out string, id Identity, opts WriterOptions, fn func(w *Writer) error) (err error) {
	target, err := resolveLink(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// A build that names the link locks out's lock file, one that names
	// the file itself the target's: hold both.
	locks := []string{out + ".lock"}
	if target != out {
		locks = append(locks, target+".lock")
	}
	for _, p := range locks {
		lock, err := lockFile(p)
		if errors.Is(err, ErrBuildRunning) {
			err = heldError(p)
		}
		if err != nil {
			return err
		}
		defer unlockFile(lock)
	}
	tmp, err := copyBeside(target, opts.Timeout)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	w := &Writer{path: tmp, id: id, opts: opts}
	if err := w.open(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := fn(w); err != nil {
		return err
	}
	if !opts.NoSync {
		if err := syncPath(tmp); err != nil {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	if opts.NoSync {
		return nil
	}
	if err := SyncDir(filepath.Dir(target)); err != nil {
		return fmt.Errorf("sync folder of %s: %w", target, err)
	}
	return nil
}

// resolveLink returns the file a symbolic link named path leads to, or
// path itself when it is no link (or does not exist yet).
func resolveLink(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%s: a link that leads nowhere: %w", path, err)
	}
	return target, nil
}

// copyBeside copies the index at path (holding its shared lock, as a
// reader does) into a new file in its folder with its mode, and returns
// the copy's name. When path does not exist, the new file is empty, with
// the mode a new index gets.
func copyBeside(path string, timeout time.Duration) (_ string, err error) {
	src, err := os.Open(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	mode := fs.FileMode(0o644) // as bbolt creates an index, less the umask
	if src != nil {
		defer src.Close()
		fi, err := src.Stat()
		if err != nil {
			return "", err
		}
		mode = fi.Mode().Perm()
	}
	dst, err := createBeside(path, mode)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst.Name())
		}
	}()
	if src == nil {
		return dst.Name(), nil
	}
	// The umask may have taken bits of out's mode away.
	if err := dst.Chmod(mode); err != nil {
		return "", err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := lockShared(src, timeout); err != nil {
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	return dst.Name(), nil
}

// createBeside creates a new file named after path and a random number,
// in path's folder (so that renaming it over path is atomic).
func createBeside(path string, mode fs.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := path + ".merge-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// syncPath fsyncs the file at path.
func syncPath(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs the folder dir, so that a name just renamed into it
// survives a crash. Windows cannot sync a folder (nor needs to); a file
// system that refuses it (EINVAL) is not an error either.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
