package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultTimeout bounds how long a reader waits for another process's lock.
// Builds hold the write lock only for one commit, so this is generous.
const DefaultTimeout = 30 * time.Second

// DefaultWriteTimeout bounds how long a commit waits for readers (a long
// `status --check` holds its shared lock while it reads everything).
const DefaultWriteTimeout = 5 * time.Minute

// ErrBusy is returned when the index stayed locked for longer than the
// timeout (a very long commit, or a foreign process holding the file).
var ErrBusy = errors.New("index is locked by another process")

func openBolt(path string, readOnly bool, timeout time.Duration) (*bolt.DB, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if readOnly {
		// Pass the gate (a commit waiting has priority: lock_unix.go),
		// and leave it once this reader holds its own lock on the index.
		// The gate is advice: a reader waits there at most readerGateWait,
		// then goes on to the index's lock (a commit held up by a long
		// reader inside, a check or an export, must not stop every other
		// reader: serve's requests give up after 5 s).
		gate, _ := enterGate(path, false, time.Now().Add(min(timeout/4, readerGateWait)))
		defer leaveGate(gate)
	}
	if err := validatePath(path, readOnly, timeout); err != nil {
		return nil, err
	}
	// bbolt panics on some damage it meets while opening (a free-list page
	// of the wrong type): guard turns that into ErrCorrupt, and the file it
	// opened is closed here so that its lock does not outlive the failure.
	var file *os.File
	var db *bolt.DB
	err := guard(func() error {
		var err error
		db, err = bolt.Open(path, 0o644, &bolt.Options{
			Timeout:      timeout,
			ReadOnly:     readOnly,
			FreelistType: bolt.FreelistMapType,
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				file = f
				return f, err
			},
		})
		return err
	})
	if errors.Is(err, ErrCorrupt) && db == nil && file != nil {
		file.Close()
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w (waited %v)", path, ErrBusy, timeout)
	}
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
		return nil, fmt.Errorf("open %s: %w (%v)", path, ErrCorrupt, err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return nil, err // "open PATH: permission denied" already
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// validatePath runs validateFile on path before bbolt maps it. A reader
// holds a shared lock while it reads, so that a build's commit cannot
// rewrite the pages in between; a writer already holds the build lock.
// A reader treats an empty file as a missing one (ErrNoIndex): bbolt would
// try to initialise it through the read-only handle ("bad file descriptor"),
// while a writer initialises it as it would create a missing file.
func validatePath(path string, readOnly bool, timeout time.Duration) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if target, lerr := os.Readlink(path); lerr == nil {
			// A link to an index on a disk not mounted now: never create
			// a new, empty index where it leads.
			return fmt.Errorf("%s is a link to %s, which does not exist (its disk not mounted?); not created there", path, target)
		}
		if readOnly {
			return fmt.Errorf("%s: %w", path, ErrNoIndex)
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if readOnly {
		if err := lockShared(f, timeout); err != nil {
			if errors.Is(err, ErrBusy) {
				return fmt.Errorf("open %s: %w (waited %v)", path, ErrBusy, timeout)
			}
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		if fi.Size() == 0 {
			return fmt.Errorf("%s is empty (0 bytes): %w", path, ErrNoIndex)
		}
	}
	if err := validateFile(f); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	return nil
}

// noMeta says what a bbolt file without the meta bucket is: nil when it
// holds no bucket (a new file), ErrCorrupt when it holds any of an
// index's (an index whose meta bucket was lost: --reindex starts it over),
// else ErrNotIndex naming its buckets (another program's file).
func noMeta(tx *bolt.Tx) error {
	var names []string
	ours := false
	tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, fmt.Sprintf("%q", name))
		ours = ours || slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
		return nil
	})
	switch {
	case len(names) == 0:
		return nil
	case ours:
		return fmt.Errorf("%w: the meta bucket is missing (it holds the buckets %s)", ErrCorrupt, strings.Join(names, ", "))
	}
	return notIndex("a bbolt file holding the buckets " + strings.Join(names, ", "))
}

// readMeta checks the schema and returns the identity (zero if unset).
func readMeta(tx *bolt.Tx) (Identity, error) {
	var id Identity
	m := tx.Bucket(bMeta)
	if m == nil {
		if err := noMeta(tx); err != nil {
			return id, err
		}
		return id, ErrSchema
	}
	switch v := getU64(append(make([]byte, 4), m.Get(kSchema)...)); {
	case v > SchemaVersion:
		return id, fmt.Errorf("%w (index schema %d; this clipidx reads %d): upgrade clipidx; `clipidx build --reindex DIR...` would start over, keeping this file beside it as .newer-TIME", ErrNewerSchema, v, SchemaVersion)
	case v != SchemaVersion:
		return id, fmt.Errorf("%w: file has version %d, this clipidx writes %d; `clipidx build --reindex DIR...` starts over, keeping this file beside it as .corrupt-TIME", ErrSchema, v, SchemaVersion)
	}
	for _, b := range allBuckets {
		if tx.Bucket(b) == nil {
			return id, fmt.Errorf("%w: bucket %s missing", ErrSchema, b)
		}
	}
	if v := m.Get(kIdentity); v != nil {
		if err := json.Unmarshal(v, &id); err != nil {
			return id, fmt.Errorf("%w: identity: %v", ErrCorrupt, err)
		}
	}
	return id, nil
}

// initialize creates the buckets of an empty file, or wipes every bucket
// when reset is true, and records the schema and identity.
func initialize(tx *bolt.Tx, id Identity, reset bool) error {
	if reset {
		if err := wipeOptional(tx); err != nil {
			return err
		}
	}
	for _, b := range allBuckets {
		if reset && tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	m := tx.Bucket(bMeta)
	if err := m.Put(kSchema, []byte{0, 0, 0, SchemaVersion}); err != nil {
		return err
	}
	js, err := json.Marshal(id)
	if err != nil {
		return err
	}
	return m.Put(kIdentity, js)
}

// Reader is a read-only handle: a shared lock that never blocks a build for
// longer than one View.
type Reader struct {
	db   *bolt.DB
	path string
}

// ReaderOptions configures OpenReader. The zero value waits DefaultTimeout.
type ReaderOptions struct {
	Timeout time.Duration
}

// OpenReader opens an existing index read-only. It returns an error
// wrapping ErrNoIndex when the file does not exist or is empty (0 bytes:
// a build fills it) and ErrSchema when it is not a clipidx index of this
// schema version.
func OpenReader(path string, opts ReaderOptions) (*Reader, error) {
	for try := 0; ; try++ {
		before, _ := os.Stat(path)
		r, err := openReader(path, opts)
		if err == nil || !maybeTorn(err) || before == nil {
			return r, err
		}
		// A file rewritten in place (a backup restored with cp onto the
		// index) reads as a torn header or a half-copied file while it is
		// written: that is no damage, and no --reindex is called for. A
		// file that stays as it was is what it looks like.
		time.Sleep(rewriteSettle)
		after, serr := os.Stat(path)
		if serr != nil {
			return nil, err
		}
		same := os.SameFile(before, after) && before.Size() == after.Size() && before.ModTime().Equal(after.ModTime())
		if same && time.Since(after.ModTime()) > rewriteRecent {
			return nil, err
		}
		if try == rewriteTries {
			// ErrFault for serve (503: read again), and err as it was for
			// a caller that waits no longer (a file damaged just now).
			return nil, fmt.Errorf("%s: %w (it was being written while it was read: %w)", path, ErrFault, err)
		}
	}
}

// rewriteSettle and rewriteTries bound how long OpenReader waits for a
// file being rewritten in place to settle: well inside serve's 5 s.
// A file written within rewriteRecent counts as one being written even
// when it did not change over rewriteSettle (a copy that paused).
const (
	rewriteSettle = 100 * time.Millisecond
	rewriteTries  = 5
	rewriteRecent = 5 * time.Second
)

// maybeTorn reports whether err is what reading a file half rewritten may
// give: damage, another schema, or bbolt initialising a file emptied
// between the check and its open ("bad file descriptor").
func maybeTorn(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrSchema) || errors.Is(err, syscall.EBADF)
}

func openReader(path string, opts ReaderOptions) (*Reader, error) {
	db, err := openBolt(path, true, opts.Timeout)
	if err != nil {
		return nil, err
	}
	r := &Reader{db: db, path: path}
	// adviseReader reads the map too (bbolt's Info): under the guard.
	if err := guard(func() error {
		adviseReader(db, path)
		return db.View(func(tx *bolt.Tx) error { _, err := readMeta(tx); return err })
	}); err != nil {
		closeDB(db)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// View runs fn on a consistent snapshot. Slices handed out by the snapshot
// are valid only until fn returns.
func (r *Reader) View(fn func(s *Snapshot) error) error {
	return guard(func() error {
		return r.db.View(func(tx *bolt.Tx) error {
			id, err := readMeta(tx)
			if err != nil {
				return err
			}
			return fn(&Snapshot{tx: tx, id: id})
		})
	})
}

// Close releases the shared lock.
func (r *Reader) Close() error { return closeDB(r.db) }

// closeDB closes db, giving up after closeWait: a memory fault that guard
// caught while bbolt began a transaction (reading the meta page of a file
// rewritten under it) leaves bbolt's meta lock held, and its Close would
// wait for it for ever. The file and its mapping are then left open until
// the process ends, rather than the caller (a serve request) hanging.
func closeDB(db *bolt.DB) error {
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeWait):
		return fmt.Errorf("close %s: %w (a read faulted part way; the file stays open)", db.Path(), ErrFault)
	}
}

// closeWait bounds closeDB; a Close with no transaction open takes
// microseconds.
const closeWait = 2 * time.Second

// WriterOptions configures OpenWriter; the zero value works.
type WriterOptions struct {
	// Reindex wipes an index built with another model (or schema) instead of
	// refusing with ErrModelMismatch.
	Reindex bool
	// Timeout bounds the wait for readers' shared locks at each commit;
	// 0 = DefaultWriteTimeout.
	Timeout time.Duration
	// NoSync skips fsync at commit (for benchmarks only: a crash may then
	// corrupt the file).
	NoSync bool
	// Command names what holds the lock, for the ErrBuildRunning another
	// process gets ("clipidx watch"; see Holder).
	Command string
}

// Writer adds and removes files. It holds the build lock from OpenWriter to
// Close, but the database itself only during each call.
type Writer struct {
	path   string
	id     Identity
	opts   WriterOptions
	lock   *os.File
	backup string // where a damaged index was moved (see Backup)
	holder Holder
	// progress is written by the next Commit or Finish (StageProgress).
	progress *Progress
}

// OpenWriter takes the build lock for path, creates the index if needed and
// checks that it was built with identity id. It returns ErrBuildRunning when
// another build runs, ErrModelMismatch, ErrSchema or ErrCorrupt (unless
// opts.Reindex: then an index of another model is wiped, and a damaged one,
// found by Check, is moved aside to Backup() and replaced by an empty one).
func OpenWriter(path string, id Identity, opts WriterOptions) (*Writer, error) {
	if id.Dim <= 0 {
		return nil, fmt.Errorf("%w: dimension %d", ErrBadVector, id.Dim)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lock, err := lockFile(path + ".lock")
	if errors.Is(err, ErrBuildRunning) {
		err = heldError(path + ".lock")
	}
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, id: id, opts: opts, lock: lock, holder: newHolder(opts.Command)}
	if err := writeHolder(lock, w.holder); err != nil {
		w.Close()
		return nil, fmt.Errorf("lock %s.lock: %w", path, err)
	}
	_, serr := os.Lstat(path)
	created := errors.Is(serr, fs.ErrNotExist)
	if err := w.open(); err != nil {
		if created {
			// A new index whose first write failed (a full disk) would be
			// a file of a few pages that later runs call damaged: it was
			// never an index, and the build lock keeps others off it.
			os.Remove(path)
		}
		w.Close()
		return nil, err
	}
	return w, nil
}

// open creates the index at w.path if needed and checks it, as OpenWriter
// describes; the caller holds the build lock.
func (w *Writer) open() error {
	id, opts := w.id, w.opts
	err := w.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta) == nil {
			if err := noMeta(tx); err != nil {
				return err // never write into another program's file
			}
			return initialize(tx, id, false)
		}
		have, err := readMeta(tx)
		if err == nil {
			err = have.Compatible(id, false)
		}
		if err == nil && have.Arch == "" && id.Arch != "" {
			// An index written before the architecture was recorded takes
			// it now, with everything else it recorded kept.
			have.Arch = id.Arch
			js, jerr := json.Marshal(have)
			if jerr != nil {
				return jerr
			}
			if err = tx.Bucket(bMeta).Put(kIdentity, js); err != nil {
				return err
			}
		}
		if err == nil && opts.Reindex {
			// Starting over is the way out of a damaged index: look.
			if cerr := (&Snapshot{tx: tx, id: have}).Check(true); cerr != nil {
				err = fmt.Errorf("%w: %v", ErrCorrupt, cerr)
			} else {
				err = repairColumn(tx)
			}
		}
		if err != nil && opts.Reindex && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrSchema) {
			return initialize(tx, id, true) // another model's index: its vectors go
		}
		return err
	})
	switch {
	case !opts.Reindex, errors.Is(err, ErrNotIndex):
		// Not an index: --reindex neither moves nor writes it.
	case errors.Is(err, ErrNewerSchema):
		err = w.startOver(".newer-")
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrSchema):
		err = w.startOver(".corrupt-")
	}
	return err
}

// startOver moves a damaged index, or one this clipidx cannot read, aside
// (path+suffix+TIME, never deleted) and creates an empty one in its place.
func (w *Writer) startOver(suffix string) error {
	backup := w.path + suffix + time.Now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(w.path, backup); err != nil {
		return fmt.Errorf("move the index aside: %w", err)
	}
	w.backup = backup
	return w.update(func(tx *bolt.Tx) error { return initialize(tx, w.id, false) })
}

// readerGateWait bounds a reader's wait at the gate: readers that overlap
// without a gap are all inside in less, and the commit then goes first.
const readerGateWait = 500 * time.Millisecond

// gateHold bounds how long a commit keeps new readers waiting at the gate
// while readers inside still hold the index (a foreign reader that never
// lets go must not stop serve): it then lets them through and queues again.
const gateHold = 10 * time.Second

// openForCommit opens the index for a write within timeout, with the gate
// taken (lock_unix.go), which the caller leaves when the write is done.
func (w *Writer) openForCommit(timeout time.Duration) (*bolt.DB, *os.File, error) {
	deadline := time.Now().Add(timeout)
	for {
		gate, err := enterGate(w.path, true, deadline)
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w (waited %v)", w.path, err, timeout)
		}
		slice := min(gateHold, time.Until(deadline))
		if slice < 10*time.Millisecond {
			slice = 10 * time.Millisecond
		}
		was, _ := os.Stat(w.path)
		db, err := openBolt(w.path, false, slice)
		if err == nil && was != nil && time.Now().Before(deadline) {
			// The file may have been replaced while the open waited for
			// its lock: a compaction or merge that reached it by another
			// name (a link), whose build lock is not this one, renames
			// its new file in as it lets go of the old, and a commit to
			// the old file would be lost with it. Open the new one.
			if now, serr := os.Stat(w.path); serr == nil && !os.SameFile(was, now) {
				closeDB(db)
				leaveGate(gate)
				continue
			}
		}
		if err == nil {
			return db, gate, nil
		}
		leaveGate(gate)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			os.Remove(w.path + ".gate")
		}
		if !errors.Is(err, ErrBusy) {
			return nil, nil, err
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("open %s: %w (waited %v for readers to let go of it)", w.path, ErrBusy, timeout)
		}
		time.Sleep(20 * time.Millisecond) // readers waiting at the gate go in
	}
}

// Backup is where OpenWriter with Reindex moved a damaged index, or one
// this clipidx cannot read, or "".
func (w *Writer) Backup() string { return w.backup }

func (w *Writer) update(fn func(tx *bolt.Tx) error) error {
	timeout := w.opts.Timeout
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	db, gate, err := w.openForCommit(timeout)
	if err != nil {
		return err
	}
	// The gate goes with the commit (no file is left beside a temporary
	// index): readers waiting on it pass it once it is let go, and the
	// next commit makes a new one.
	defer func() {
		if gate != nil {
			os.Remove(gate.Name())
		}
		leaveGate(gate)
	}()
	db.NoSync = w.opts.NoSync
	err = guard(func() error {
		return db.Update(func(tx *bolt.Tx) error {
			dirty := map[VecID]struct{}{}
			colDirty.Store(tx, dirty)
			defer colDirty.Delete(tx)
			if err := fn(tx); err != nil {
				return err
			}
			if err := syncLiveMeta(tx); err != nil {
				return err
			}
			return syncColumn(tx, dirty)
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrFault is returned when reading the index's memory map faulted: the
// file was cut short or rewritten in place under the reader (a backup
// restored with cp onto it), or its disk could not supply a page (an I/O
// error, a sparse copy on a full tmpfs). The next read may well succeed.
// The error also matches ErrCorrupt (see faultError).
var ErrFault = errors.New("the index file was changed in place or is damaged: search again; if it persists, clipidx status --check")

// faultError is a memory fault reading the index: ErrFault, and ErrCorrupt
// too, for the code that closes or moves aside a file that does not read.
type faultError struct {
	fault any    // what the runtime panicked with
	where string // the function that read, "search.unpack"
}

func (e *faultError) Error() string { return fmt.Sprintf("%v (%s: %v)", ErrFault, e.where, e.fault) }

func (e *faultError) Unwrap() []error { return []error{ErrFault, ErrCorrupt} }

// Guard runs fn as View runs its callback, for code that reads the slices
// a Snapshot hands out on goroutines of its own (View protects its own
// goroutine only): a memory fault reading the mapped file returns an error
// matching ErrFault instead of killing the process, a panic of bbolt or of
// this package on a damaged page one matching ErrCorrupt. Any other panic
// propagates. It costs two defers: call it once per goroutine, not per read.
func Guard(fn func() error) error { return guard(fn) }

// guard turns a panic of bbolt (or of this package's reading code) on a
// damaged page into ErrCorrupt. A panic raised by a caller's code, such as
// a View callback or a Files visitor, is no sign of a damaged index: it
// propagates unchanged.
//
// It also turns a memory fault into such a panic (debug.SetPanicOnFault),
// and that into ErrFault: bbolt reads the file through a memory map, and a
// page past the end of a file cut short under the reader faults instead of
// failing a bounds check. That covers reads on this goroutine only (Guard
// covers others); validateFile keeps bbolt's own goroutines (Tx.Check)
// within the file.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			where, ok := panickedInStore(r)
			switch {
			case !ok:
				panic(r)
			case isFault(r):
				err = &faultError{fault: r, where: where}
			default:
				err = fmt.Errorf("%w: %v", ErrCorrupt, r)
			}
		}
	}()
	return fn()
}

// isFault reports whether r, recovered, is a memory fault that
// debug.SetPanicOnFault turned into a panic: only those carry the faulting
// address (a nil dereference does not).
func isFault(r any) bool {
	_, rt := r.(runtime.Error)
	_, addr := r.(interface{ Addr() uintptr })
	return rt && addr
}

// panickedInStore reports whether the panic being recovered, r, was raised
// reading the index: anywhere in bbolt or in this package's non-test code,
// or, for a memory fault only, in package search's, which reads the
// vectors straight from the map (a bounds error or a nil dereference there
// is a bug, not damage: store checked the lengths of what it handed out).
// It also returns that function, without its import path. Called from
// guard's deferred function: the stack still holds the frames down to the
// panic.
func panickedInStore(r any) (where string, ok bool) {
	pc := make([]uintptr, 128)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	inPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			inPanic = true
		case inPanic && !strings.HasPrefix(f.Function, "runtime.") && !standardLibrary(f.Function):
			// The first frame below the runtime and the standard library
			// (fmt formatting a key of garbage length, bytes comparing
			// one) raised the panic.
			where = f.Function[strings.LastIndex(f.Function, "/")+1:]
			ours := !strings.HasSuffix(f.File, "_test.go")
			switch {
			case strings.HasPrefix(f.Function, "go.etcd.io/bbolt"):
				return where, true
			case strings.HasPrefix(f.Function, "github.com/clipidx/clipidx/store."):
				return where, ours
			case strings.HasPrefix(f.Function, "github.com/clipidx/clipidx/search."):
				return where, ours && isFault(r)
			}
			return where, false
		}
		if !more {
			return "", false
		}
	}
}

// standardLibrary reports whether fn (a runtime.Frame's Function, such as
// "fmt.(*pp).doPrintf" or "go.etcd.io/bbolt.(*Tx).page") belongs to the
// standard library, whose import paths have no dot in their first element.
// Package main has none either but is no library.
func standardLibrary(fn string) bool {
	fn, _, _ = strings.Cut(fn, "[") // type arguments may hold any path
	if first, _, ok := strings.Cut(fn, "/"); ok {
		return !strings.Contains(first, ".")
	}
	pkg, _, _ := strings.Cut(fn, ".")
	return pkg != "main"
}

// Identity is the identity the index was opened with.
func (w *Writer) Identity() Identity { return w.id }

// Path is the index file.
func (w *Writer) Path() string { return w.path }

// Commit applies b in one transaction, in order. Nothing of b is stored
// when it returns an error.
func (w *Writer) Commit(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return w.update(func(tx *bolt.Tx) error {
		t := newWtx(tx, w.id.Dim)
		for _, o := range b.ops {
			if err := t.apply(o); err != nil {
				return err
			}
		}
		if err := w.putProgress(tx); err != nil {
			return err
		}
		return t.flush()
	})
}

// GC frees vectors no file uses any more and returns how many.
func (w *Writer) GC() (int, error) { return w.gc(0) }

// KeepUnused is how long a build that does not look at every indexed
// folder keeps a vector that lost its last file: out of every search, but
// at hand for a file with its content found later (a photo moved to a
// folder built later). A complete build of every indexed folder, a merge
// and Forget free them all.
const KeepUnused = 7 * 24 * time.Hour

// GCQueuedBefore frees, of the vectors no file uses any more, those that
// lost their last file before t, and returns how many. The others stay
// queued: out of searches, but at hand for a file with their content that
// a later build finds (a photo moved to a folder that build looks at).
func (w *Writer) GCQueuedBefore(t time.Time) (int, error) {
	return w.gc(max(t.Unix(), 1))
}

func (w *Writer) gc(keepSince int64) (int, error) {
	var n int
	err := w.update(func(tx *bolt.Tx) error {
		t := newWtx(tx, w.id.Dim)
		var err error
		if n, err = t.collect(keepSince); err != nil {
			return err
		}
		return t.flush()
	})
	return n, err
}

// Finish records the end of a build.
func (w *Writer) Finish(lb LastBuild) error {
	lb.Roots, lb.Within = keepPaths(lb.Roots), keepPaths(lb.Within)
	js, err := json.Marshal(lb)
	if err != nil {
		return err
	}
	return w.update(func(tx *bolt.Tx) error {
		if err := w.putProgress(tx); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(kLastBuild, js)
	})
}

// View runs fn on a read-only snapshot (a shared lock for its duration).
func (w *Writer) View(fn func(s *Snapshot) error) error {
	r, err := OpenReader(w.path, ReaderOptions{Timeout: w.opts.Timeout})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.View(fn)
}

// Close releases the build lock.
func (w *Writer) Close() error {
	if w.lock == nil {
		return nil
	}
	clearHolder(w.lock)
	err := unlockFile(w.lock)
	w.lock = nil
	return err
}
