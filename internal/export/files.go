package export

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	f, err := os.CreateTemp(filepath.Dir(final), "."+filepath.Base(final)+".tmp-*")
	if err != nil {
		return nil, err
	}
	o := &outFile{final: final, f: f}
	o.Writer = bufio.NewWriterSize(countWriter{o}, 4<<20)
	return o, nil
}

type countWriter struct{ o *outFile }

func (c countWriter) Write(p []byte) (int, error) {
	n, err := c.o.f.Write(p)
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

// commit finishes every file, then publishes them; a failure removes the
// files this group published already.
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
			for _, p := range g[:i] {
				os.Remove(p.final)
			}
			for _, q := range g[i+1:] {
				os.Remove(q.f.Name())
			}
			return 0, err
		}
	}
	return bytes, nil
}
