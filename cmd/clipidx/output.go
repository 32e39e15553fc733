package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/store"
)

// writeFile runs write on the file at path. A regular file (or a new path)
// is written through a temporary file beside it and a rename, so a failed
// run never leaves a truncated output; a device, FIFO or symbolic link is
// written through, never replaced. Errors name path, never the temporary
// file.
func writeFile(path string, write func(io.Writer) error) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		return f.Close()
	}
	f, tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return nil
}

// checkOutput fails, naming path, when writeFile could not create it (a
// missing folder, no permission, a folder in its place), so that a command
// finds out before its work rather than after. It leaves nothing behind:
// the temporary file it creates is removed at once. An existing device,
// FIFO or link is left for the write to open (opening a FIFO would wait for
// its reader, then end its input). "" and "-" are standard output.
func checkOutput(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("create %s: it is a folder; name a file", path)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil
	}
	f, tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(tmp)
}

// createTemp creates a new temporary file beside path, for a rename over
// it; an error names path.
func createTemp(path string) (*os.File, string, error) {
	// Created with mode 0666 so the umask applies as it does to os.Create.
	tmp := fmt.Sprintf("%s.tmp%d-%d", path, os.Getpid(), time.Now().UnixNano())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, "", fmt.Errorf("create %s: %w", path, unwrapPath(err))
	}
	return f, tmp, nil
}

// unwrapPath is the cause inside an *fs.PathError or *os.LinkError, whose
// message names the temporary file rather than the output.
func unwrapPath(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// namedError is "path: msg", or msg alone when it names the path already
// (decoder errors do), so a failure line never repeats the file.
func namedError(path, msg string) string {
	// It names the path when the path is followed by ": " and comes
	// before any parenthesis: "decode PATH: ..." does; "unreachable; ...
	// (open PATH: permission denied)" says what failed about it, not
	// which file it is.
	if i := strings.Index(msg, path+": "); i >= 0 && !strings.Contains(msg[:i], "(") {
		return msg
	}
	return path + ": " + msg
}

// shown is s for a line of plain output: each control character (C0, DEL,
// C1) as \xNN, so that a file name cannot end a line early or send the
// terminal an escape sequence. Other bytes, invalid UTF-8 included, are
// kept; -0 and --json give paths exactly.
func shown(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 && r == utf8.RuneError || !isControl(r) {
			b.WriteString(s[i : i+n])
		} else {
			fmt.Fprintf(&b, `\x%02x`, r)
		}
		i += n
	}
	return b.String()
}

// isControl reports a C0 or C1 control character, or DEL.
func isControl(r rune) bool { return r < 0x20 || 0x7f <= r && r <= 0x9f }

// waitForLock runs fn, and again every lockPoll while a build holds the
// index (store.ErrBuildRunning), saying once who holds it; Ctrl-C stops
// the wait (exit 130), as --no-wait does at once.
func waitForLock(cmd *cobra.Command, noWait bool, fn func() error) error {
	told := false
	for {
		err := fn()
		if noWait || !errors.Is(err, store.ErrBuildRunning) {
			return err
		}
		if !told {
			fmt.Fprintf(cmd.ErrOrStderr(), "waiting: %v (Ctrl-C to stop; --no-wait fails at once)\n", err)
			told = true
		}
		// Signals are caught here only while waiting: during fn, the
		// command's own handling applies (forget's writes are one
		// transaction; merge stops and removes its copy).
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		select {
		case <-ctx.Done():
			stop()
			return &exitError{code: 130, err: errors.New("interrupted while waiting: the index is as it was")}
		case <-time.After(lockPoll):
		}
		stop()
	}
}

// lockPoll is how often a command waiting for a build tries the lock.
const lockPoll = 500 * time.Millisecond
