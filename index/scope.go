package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/clipidx/clipidx/store"
)

// A partial build (Options.Within) looks at some folders or files under
// the roots, as a watcher asks after events: it walks only them and
// reads only the records within them, so that it can remove or mark
// offline nothing else. Everything else is the build's usual code: the
// same change detection, reuse, offline and failure rules, the same
// commits. A root among them is built whole (a root that went away is
// kept offline, as in a full build); a path that no longer exists was
// deleted (with whatever the index holds within it).

// errWithinShard refuses a partial build of a machine's share.
var errWithinShard = errors.New("index: Options.Within cannot be combined with Shard/Shards")

// scopeOf returns the paths a build looks at: within (absolute, clean,
// outermost only, each under a root) or, when within is empty, the roots.
func scopeOf(roots, within []string) ([]string, error) {
	if len(within) == 0 {
		return roots, nil
	}
	abs, err := absRoots(within)
	if err != nil {
		return nil, err
	}
	var keep []string
	for _, p := range abs {
		// The innermost root holding p: a hidden folder or a shard built
		// as a root of its own is looked at, though the walk of a root
		// around it skips it.
		i := -1
		for j, r := range roots {
			if store.Within(p, r) && (i < 0 || len(r) > len(roots[i])) {
				i = j
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("index: %s is not under the folders being built (%v)", p, roots)
		}
		if !Skips(roots[i], p) {
			// A photo's change may change what the movie of its name is
			// (live.go): that movie is looked at too.
			keep = append(append(keep, p), moviesBeside(p)...)
		}
	}
	if len(keep) == 0 {
		return []string{}, nil // only hidden paths: nothing to look at
	}
	return store.Outermost(keep), nil
}

// WalkRoots returns, of the roots an index holds (sorted), those a build
// of them all walks: the outermost, and each within another that the walk
// of that one never enters (a hidden folder, a tar shard: see Skips).
func WalkRoots(sorted []string) []string {
	var out []string
	for _, p := range sorted {
		if !slices.ContainsFunc(out, func(r string) bool { return store.Within(p, r) && !Skips(r, p) && !IsShardName(p) }) {
			out = append(out, p)
		}
	}
	return out
}

// Skips reports whether a build of root never looks at path (under root):
// a name on the way is hidden or clutter (see skipName).
func Skips(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return false
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if skipName(name) {
			return true
		}
	}
	return false
}

// walkScope walks the scope of a partial build: a root as Build walks
// one (awayRoots), any other path if it still exists.
func walkScope(wk *walker, scope []string, isRoot func(string) bool) ([]string, error) {
	var walked []string
	for _, p := range scope {
		if isRoot(p) {
			present, err := awayRoots(wk, []string{p}, wk.held)
			if err != nil {
				return nil, err
			}
			walked = append(walked, present...)
			continue
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue // deleted: its records go unless a former mount point (goneMounts)
		}
		walked = append(walked, p)
	}
	for _, p := range walked {
		if err := wk.walkRoot(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) && !isRoot(p) {
				continue // deleted between the check and the walk
			}
			return walked, err
		}
	}
	return walked, wk.followLinks()
}

// lockPoll is how often a build waiting for another one tries the lock.
const lockPoll = 500 * time.Millisecond

// openWriter takes the build lock, waiting while another build holds it
// when Options.LockWait is set (told once, with the error naming the
// holder), until ctx is done.
func openWriter(ctx context.Context, dbPath string, opts Options) (*store.Writer, error) {
	wo := store.WriterOptions{Reindex: opts.Reindex, Timeout: opts.LockTimeout, Command: opts.Command}
	told := false
	for {
		w, err := store.OpenWriter(dbPath, opts.Identity, wo)
		if err == nil || !errors.Is(err, store.ErrBuildRunning) || opts.LockWait == nil {
			return w, err
		}
		if !told {
			opts.LockWait(err)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
