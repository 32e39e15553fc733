package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// replaceIndex runs fn on a Writer of a copy of the index at out, made
// beside it, and renames the copy over out once fn succeeded and the copy
// is on disk. It holds out's build lock from before the copy to after the
// rename, so no build writes out meanwhile. On any failure, ctx done
// included (looked at during the copy and before the rename), the copy is
// removed and out is left as it was. Before the copy it removes the
// copies that killed merges left, telling onLeftover (see
// removeLeftovers).
func replaceIndex(ctx context.Context, out string, id Identity, opts WriterOptions, onLeftover func(Leftover), fn func(w *Writer) error) (err error) {
	target, err := resolveLink(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	release, err := lockReplaced(out, target, opts.Command, onLeftover)
	if err != nil {
		return err
	}
	defer release()
	tmp, err := copyBeside(ctx, target, opts.Timeout)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr) // an *fs.PathError naming the copy
		}
	}()
	w := &Writer{path: tmp, id: id, opts: opts}
	if err := w.open(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := fn(w); err != nil {
		return err
	}
	return renameOver(ctx, tmp, target, opts.NoSync)
}

// lockReplaced takes the build locks of the index named out, whose file
// is target (resolveLink), for a command that replaces target whole, and
// returns what releases them. A build that names a link locks out's lock
// file, one that names the file itself the target's: it holds both. With
// them held, it removes the copies of target that killed merges or
// compactions left, telling onLeftover (see removeLeftovers).
func lockReplaced(out, target, command string, onLeftover func(Leftover)) (release func(), err error) {
	locks := []string{out + ".lock"}
	if target != out {
		locks = append(locks, target+".lock")
	}
	var held []*os.File
	release = func() {
		for _, f := range held {
			clearHolder(f)
			unlockFile(f)
		}
	}
	h := newHolder(command)
	for _, p := range locks {
		lock, err := lockFile(p)
		if errors.Is(err, ErrBuildRunning) {
			err = heldError(p)
		}
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, lock)
		// Who holds it, for a build that waits (as a build's own lock
		// says; an earlier holder's words would name the wrong command).
		if err := writeHolder(lock, h); err != nil {
			release()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
	}
	// Every command that replaces target holds target's lock (out's, or
	// both), so no copy of target is in use now.
	for _, l := range removeLeftovers(target) {
		if onLeftover != nil {
			onLeftover(l)
		}
	}
	return release, nil
}

// renameOver syncs tmp (unless noSync), made beside target, and renames
// it over target, then syncs their folder. ctx is looked at last before
// the rename: done, it returns ctx.Err() and target is as it was (the
// caller removes tmp).
func renameOver(ctx context.Context, tmp, target string, noSync bool) error {
	if !noSync {
		if err := syncPath(tmp); err != nil {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
	}
	// The last point where stopping leaves target as it was.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	if noSync {
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
// the mode a new index gets. It stops with ctx.Err() (and removes the
// new file) once ctx is done.
func copyBeside(ctx context.Context, path string, timeout time.Duration) (_ string, err error) {
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
	// In chunks, to look at ctx between them; io.CopyN keeps the
	// kernel's file-to-file copy (copy_file_range) where there is one.
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := io.CopyN(dst, src, copyChunk)
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("copy %s: %w", path, err)
		}
		if n < copyChunk {
			return dst.Name(), nil
		}
	}
}

// copyChunk is how many bytes copyBeside copies between looks at its
// context: a fraction of a second on a disk.
const copyChunk = 64 << 20

// createBeside creates a new file named after path and a random number,
// in path's folder (so that renaming it over path is atomic).
func createBeside(path string, mode fs.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := path + mergeInfix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// mergeInfix joins an index's name and the random number (base 36 of a
// uint64) that name its copy (createBeside, isMergeCopy).
const mergeInfix = ".merge-"

// isMergeCopy reports whether name is one createBeside gives a copy of
// the index named base (in the same folder), or the commit gate of one
// (name + ".gate", see enterGate).
func isMergeCopy(base, name string) bool {
	num, ok := strings.CutPrefix(name, base+mergeInfix)
	if !ok {
		return false
	}
	num = strings.TrimSuffix(num, ".gate")
	if num == "" || strings.Trim(num, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
		return false
	}
	_, err := strconv.ParseUint(num, 36, 64)
	return err == nil
}

// flockExcludes is whether lockFile keeps other processes out: it does
// with flock (lock_unix.go), not where lock_other.go only creates the file.
var flockExcludes = !slices.Contains([]string{"windows", "plan9", "js", "wasip1"}, runtime.GOOS)

// removeLeftovers removes, from target's folder, the copies of target
// (and their commit gates) that merges killed part-way left, and returns
// what it found: each removed copy and its size (not the gates), or why
// one stayed. A merge removes its copy whenever it returns, so one is
// left only by a process that was killed (SIGKILL, a power cut). The
// caller holds target's build lock, which a merge into target holds as
// long as its copy lives, so a copy found now is nobody's. A name that
// has a lock file beside it was used as an index of its own and is kept,
// as is anything but a regular file. Where the lock does not keep other
// processes out, nothing is removed.
func removeLeftovers(target string) []Leftover {
	if !flockExcludes {
		return nil
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []Leftover{{Path: dir, Err: fmt.Errorf("could not look for copies left by interrupted merges: %w", err)}}
	}
	var found []Leftover
	for _, e := range entries {
		if !e.Type().IsRegular() || !isMergeCopy(base, e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(strings.TrimSuffix(p, ".gate") + ".lock"); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.Remove(p)
		}
		switch {
		case err != nil:
			found = append(found, Leftover{Path: p, Err: fmt.Errorf("could not remove a copy left by an interrupted compact or merge (delete it by hand): %w", err)})
		case !strings.HasSuffix(p, ".gate"): // a gate is empty: not worth a word
			found = append(found, Leftover{Path: p, Size: fi.Size()})
		}
	}
	return found
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
