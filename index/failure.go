package index

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/clipidx/clipidx/internal/video"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
)

// notTheFile lists the errors that say nothing about a file's content:
// the device or the machine failed, or the run was stopped. A file failing
// with one of them (as errors.Is tells) is reported but not recorded, so
// the next build tries it again:
//
//   - ErrEncoder: the model or its device failed on the image;
//   - syscall.EIO, ENXIO, ESTALE, ETIMEDOUT: the disk or the network share
//     failed or went away during the read;
//   - syscall.ENOMEM, ENFILE, EMFILE: the machine ran short of memory or
//     of open files;
//   - fs.ErrPermission: clipidx may not read the file now; chmod leaves the
//     mtime alone, so a recorded failure would never be retried;
//   - fs.ErrNotExist: the file went away between the walk and the read
//     (the next build forgets it);
//   - context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded:
//     the build was cancelled, or a decode or read timed out.
//
// The decoder has no out-of-memory error of its own: its HEIC/AVIF
// memory bound is a limit per file, like the pixel limit, and is recorded.
var notTheFile = []error{
	ErrEncoder,
	syscall.EIO, syscall.ENXIO, syscall.ESTALE, syscall.ETIMEDOUT,
	syscall.ENOMEM, syscall.ENFILE, syscall.EMFILE,
	fs.ErrPermission, fs.ErrNotExist,
	context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded,
}

// transient reports whether err is one of notTheFile.
func transient(err error) bool {
	for _, e := range notTheFile {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// failKind is the store.File.Kind of a failure of the file's own.
func failKind(err error) string {
	switch {
	case errors.Is(err, ErrNotImage), errors.Is(err, ErrUnsupported):
		return store.FailFormat
	case errors.Is(err, ErrTooLarge), errors.Is(err, preprocess.ErrTooLarge), errors.Is(err, video.ErrTooLarge):
		return store.FailTooLarge
	case errors.Is(err, ErrEmpty):
		return store.FailEmpty
	case errors.Is(err, preprocess.ErrCorrupt), errors.Is(err, video.ErrNotVideo):
		return store.FailCorrupt
	}
	return store.FailOther
}
