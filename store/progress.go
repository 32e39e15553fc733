package store

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A build says what it is doing in two places, so that any process can
// tell: the build lock file names who holds the index (Holder, written
// when the lock is taken, emptied when it is released), and the optional
// meta key progress (Progress, written with the build's commits) says how
// far it got. An index without the key is a valid schema-1 index.
var kProgress = []byte("progress")

// Holder names the process that holds the build lock.
type Holder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Command string `json:"command,omitempty"` // what runs, for people ("clipidx watch")
	Since   string `json:"since"`             // RFC 3339, UTC
}

// String says who holds the index, for an error message.
func (h Holder) String() string {
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Host != "" {
		s += " on " + h.Host
	}
	if h.Command != "" {
		s += " (" + h.Command + ")"
	}
	if t, err := time.Parse(time.RFC3339, h.Since); err == nil {
		s += ", since " + t.Local().Format("15:04:05")
	}
	return s
}

// newHolder describes this process.
func newHolder(command string) Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC().Format(time.RFC3339)}
}

// writeHolder replaces the content of the lock file f with h.
func writeHolder(f *os.File, h Holder) error {
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(js, '\n'), 0)
	return err
}

// clearHolder empties the lock file before its lock is released.
func clearHolder(f *os.File) { f.Truncate(0) }

// readHolder reads who holds the lock file path; false when nobody wrote
// it (an older clipidx, or no build since).
func readHolder(path string) (Holder, bool) {
	var h Holder
	f, err := os.Open(path)
	if err != nil {
		return h, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil || json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return h, false
	}
	return h, true
}

// BuildHolder returns who holds the build lock of the index at dbPath,
// false when no build runs (nobody named in the lock file, or a process
// that is gone: a build killed without a chance to say so).
func BuildHolder(dbPath string) (Holder, bool) {
	h, ok := readHolder(dbPath + ".lock")
	if !ok || !h.alive() {
		return h, false
	}
	return h, true
}

// alive reports whether the holder's process still runs; a holder on
// another host counts as alive (nothing here can tell).
func (h Holder) alive() bool {
	if host, _ := os.Hostname(); h.Host != "" && host != "" && h.Host != host {
		return true
	}
	return processAlive(h.PID)
}

// heldError is ErrBuildRunning naming who holds the lock file path.
func heldError(path string) error {
	if h, ok := readHolder(path); ok {
		return fmt.Errorf("%w: held by %s", ErrBuildRunning, h)
	}
	return fmt.Errorf("%s: %w", path, ErrBuildRunning)
}

// Progress is how far a build got, as its last commit recorded it.
type Progress struct {
	// Phase is "scan" (walking the folders), "index" (reading and
	// embedding Total new or changed files), "done" or "stopped"
	// (interrupted; the next build continues).
	Phase  string `json:"phase"`
	Found  int    `json:"found"`  // image files found under the folders
	Total  int    `json:"total"`  // new or changed files to handle
	Done   int    `json:"done"`   // of Total, handled
	Failed int    `json:"failed"` // of Done, failed
	// Rate is files handled per second since the index phase began, ETA
	// the seconds left at that rate (0: unknown).
	Rate    float64 `json:"rate"`
	ETA     float64 `json:"eta_s"`
	Root    string  `json:"root,omitempty"` // the folder of the last file handled
	Started string  `json:"started"`        // RFC 3339, UTC
	Updated string  `json:"updated"`        // RFC 3339, UTC: the commit that wrote it
	Holder  Holder  `json:"holder"`
}

// Running reports whether p describes a build that still runs: not done
// or stopped, and its process alive.
func (p *Progress) Running() bool {
	return p != nil && p.Phase != "done" && p.Phase != "stopped" && p.Holder.alive()
}

// Progress returns the progress the last build recorded, nil when none
// did.
func (s *Snapshot) Progress() (*Progress, error) {
	v := s.tx.Bucket(bMeta).Get(kProgress)
	if v == nil {
		return nil, nil
	}
	var p Progress
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, fmt.Errorf("%w: progress: %v", ErrCorrupt, err)
	}
	return &p, nil
}

// StageProgress sets the progress the next Commit or Finish writes, in
// its own transaction, naming this process as its holder.
func (w *Writer) StageProgress(p Progress) {
	p.Holder = w.holder
	p.Updated = time.Now().UTC().Format(time.RFC3339)
	w.progress = &p
}

// WriteProgress writes p now (a phase that starts before any commit).
func (w *Writer) WriteProgress(p Progress) error {
	w.StageProgress(p)
	return w.update(w.putProgress)
}

// putProgress writes the staged progress, if any, in tx.
func (w *Writer) putProgress(tx *bolt.Tx) error {
	if w.progress == nil {
		return nil
	}
	js, err := json.Marshal(w.progress)
	if err != nil {
		return err
	}
	w.progress = nil
	return tx.Bucket(bMeta).Put(kProgress, js)
}

// BuildState is what any process can tell of the build on an index.
type BuildState struct {
	Running bool    `json:"running"`
	Holder  *Holder `json:"holder,omitempty"` // who runs it (Running only)
	// Progress is the running build's (nil while it scans, before its
	// first record), or the last build's when none runs.
	Progress *Progress `json:"progress,omitempty"`
}

// StateOf tells the build on the index at dbPath, given the progress its
// snapshot holds (Snapshot.Progress).
func StateOf(dbPath string, last *Progress) BuildState {
	h, ok := BuildHolder(dbPath)
	if !ok {
		return BuildState{Progress: last}
	}
	st := BuildState{Running: true, Holder: &h}
	// A record of this holder's that is not finished is the running
	// build's; a finished one is an earlier build of the same process (a
	// watcher's last batch): the running one still scans.
	if last != nil && last.Holder.PID == h.PID && last.Holder.Since == h.Since && last.Phase != "done" && last.Phase != "stopped" {
		st.Progress = last
	}
	return st
}
