package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newBuildCmd) }

// maxListedFailures bounds the failures printed by a human-readable build.
const maxListedFailures = 30

func newBuildCmd() *cobra.Command {
	var asJSON, reindex, exif, captions, retryFailed, noWait bool
	var batch, workers int
	var shard string
	var vf videoFlags
	c := &cobra.Command{
		Use:   "build [DIR...]",
		Short: "Index the images under folders (incremental; safe to interrupt)",
		Long: `Index every image under the folders, picked by extension (any case) and
confirmed from the content:
  ` + formatList(preprocess.Formats()) + `.
JPEG XL files are listed as unsupported. Hidden files and folders and
operating-system clutter (.DS_Store, ._*, @eaDir, .thumbnails, Thumbs.db) are
skipped; symbolic links to folders are followed once.

A re-run only embeds new and changed files; a file whose content is already in
the index (a rename, a move, a copy) reuses its vector without running the
model; files that disappeared from the folders are forgotten (their vectors are
kept, out of searches, for a file moved to a folder built later: 7 days, or
until a build of every indexed folder). Work is committed
every 64 files or 2 seconds, so Ctrl-C (or a crash) loses at most that much:
run the same command again to continue. Files that cannot be indexed are listed
with the reason and retried when they change, when a newer clipidx reads a
format it could not (a failure records what it could read), or with
--retry-failed. Errors that are not the file's (the disk or the model failing,
memory running short, a time-out, Ctrl-C) are listed but not recorded: the
next build tries those files again.

Without DIR, every folder indexed so far (by any build or merge; see clipidx
status) is indexed again. search and
status work while a build runs. A build started while another holds the
index (a clipidx watch batch) waits for it, naming it; --no-wait fails
instead. A folder that does not exist and never held
entries (a typo) is reported and skipped (exit status 1 once the others are
built).

A disk that is away is not a deletion. The entries under a folder that held
entries and now
  - is a folder given to build, or a mount point, that lists nothing (an
    unmounted share, the empty folder of an unplugged disk),
  - cannot be read (a link to a disk that is not mounted, a folder that may
    not be entered; also listed with the failures),
  - was a mount point (on another device than its parent) and no longer is
    one, or no longer exists (the disk is gone; the bare folder is not read),
  - or is a folder given to build that no longer exists,
are kept offline, with their vectors: still found by search, and listed by
build and status ("offline: DIR, N entries kept"). When the disk is back
its unchanged files need no model run. clipidx forget DIR drops them (a
folder renamed for good). A plain folder that was emptied, and files deleted
from a folder that is there, are deletions. Mount points are not detected
on Windows, where only the other cases apply.

Videos (mp4, mov, m4v, mkv, webm, avi, mts, m2ts, 3gp, wmv) are read through
ffprobe and ffmpeg (on PATH, or --ffmpeg DIR / CLIPIDX_FFMPEG; version 4.4 or
newer): a frame where the scene changes (--video-scene), at least one every
--video-interval, none closer than a second, at most --video-frames a video,
near-identical neighbours dropped; each frame is indexed as VIDEO#t=SECONDS.
A changed video is sampled again, a renamed one reuses its frames. Without
ffmpeg, videos are skipped (their frames already indexed are kept) and the
build says how many; the next build with ffmpeg picks them up. A video that
ffmpeg cannot read within its time limit (--video-timeout) fails by name.

Webdataset tar shards (as img2dataset writes them) are roots too, also as a
quoted brace pattern ('shards/{00000..00099}.tar'): they are read as streams,
each sample indexed as SHARD.tar#KEY with its caption (.txt) and JSON kept for
clipidx export; an unchanged shard is skipped. --captions also embeds the
captions. --shard I/N builds one machine's share of the inputs (N machines
with the same arguments cover everything once); clipidx merge joins their
indexes. A --shard build refuses an index that holds records of other shares
(it would remove them as gone) and says how many.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch < 0 || workers < 0 || g.threads < 0 {
				return usageError("--batch, --workers and --threads take a count ≥ 0 (0 = automatic)")
			}
			if len(args) == 0 {
				var err error
				if args, err = indexedRoots(); err != nil {
					return err
				}
			}
			shardI, shardN, err := parseShardFlag(shard)
			if err != nil {
				return err
			}
			if args, err = expandPatterns(args); err != nil {
				return usageError("%v", err)
			}
			args, missing := splitMissing(args, cmd.ErrOrStderr())
			if len(args) == 0 {
				return missingError(missing)
			}
			m, err := openFace(buildTowers(captions), true)
			if err != nil {
				return err
			}
			defer m.Close()
			proc, err := m.Processor(exif)
			if err != nil {
				return err
			}
			sampler, framePre, err := vf.sampler(proc)
			if err != nil {
				return err
			}
			if _, err := os.Stat(g.db); reindex || errors.Is(err, fs.ErrNotExist) {
				// The index is about to be created or reset: load the
				// model first, so that one that cannot load changes
				// nothing on disk.
				if err := m.Load(clipnpu.ImageTower); err != nil {
					return err
				}
			}
			info := m.Info()
			if batch <= 0 {
				batch = info.ImageBatch
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			finished := make(chan struct{})
			defer close(finished) // runs before stop: see announceStop
			go announceStop(ctx, stop, finished, cmd.ErrOrStderr())

			bar := newProgress("scanning", "files", -1)
			var problems []index.Failure // everything OnError heard of
			opts := index.Options{
				OnError: func(path string, err error) {
					problems = append(problems, index.Failure{Path: path, Error: err.Error()})
				},
				Encoder:     m,
				Ready:       func() error { return m.Load(clipnpu.ImageTower) },
				Preprocess:  proc.Bytes,
				Reach:       preprocess.Formats(), // what proc.Bytes decodes
				RetryFailed: retryFailed,
				Identity:    indexIdentity(m.Describe(exif)),
				Reindex:     reindex,
				BatchSize:   batch,
				Workers:     workers,
				// [3, S, S] per image (the face matched the crop to S)
				PixelsPerImage:  3 * info.ImageSize * info.ImageSize,
				Device:          info.Device,
				DeviceNote:      info.DeviceNote,
				DeviceAtEnd:     deviceNow(m),
				Weights:         info.Rounded,
				Precision:       g.precision,
				Shard:           shardI,
				Shards:          shardN,
				Captions:        captions,
				PreprocessFrame: framePre,
				Command:         "clipidx build",
				LockWait:        buildLockWait(noWait, cmd.ErrOrStderr()),
				Progress: func(e index.Event) {
					switch e.Phase {
					case "scan":
						bar.set(e.Done)
					case "index":
						bar.describe("indexing")
						bar.setTotal(e.Total)
						bar.set(e.Done)
					case "meta":
						bar.describe("reading dates, places and cameras")
						bar.setTotal(e.Total)
						bar.set(e.Done)
					case "remove":
						bar.describe("removing deleted files")
					}
				},
			}
			if sampler != nil {
				opts.Video = sampler
			}
			if captions {
				opts.TextEncoder = m // the text tower loads with the first caption
			}
			sum, err := index.Build(ctx, g.db, args, opts)
			bar.done()
			if sum == nil {
				if errors.Is(err, context.Canceled) {
					// Stopped before it began (waiting for another build).
					return &exitError{code: 130, err: errors.New("interrupted before the build began: the index is as it was")}
				}
				return err
			}
			if sum.Backup != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "the index was moved to %s (%s); a new one was built\n", sum.Backup, backupWhy(sum.Backup))
			}
			// Folders and files the walk could not read are not in the
			// summary (which counts files handled): list them with it.
			listed := map[string]bool{}
			for _, f := range sum.Failures {
				listed[f.Path] = true
			}
			for _, p := range problems {
				if !listed[p.Path] {
					sum.Failures = append(sum.Failures, p)
				}
			}
			slices.SortStableFunc(sum.Failures, func(a, b index.Failure) int { return strings.Compare(a.Path, b.Path) })
			out := cmd.OutOrStdout()
			if asJSON {
				if e := json.NewEncoder(out).Encode(sum); e != nil {
					return e
				}
			} else {
				printBuildSummary(cmd, sum)
			}
			if errors.Is(err, context.Canceled) {
				return interrupted(err)
			}
			if err == nil && len(missing) > 0 {
				err = missingError(missing)
			}
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, `print one summary object {"added","updated","unchanged","reused","removed","failed","failures":[{"path","error","transient"}],"offline":[{"dir","since","reason","entries"}],"frames","videos_skipped","live_videos"} (failures also lists folders that could not be read; "transient": true marks an error that is not the file's, not recorded and retried next build; "live_videos" counts the Live Photo movies found and left out, their stills indexed; "unsaved" counts the records of these a failed save (a full disk) did not keep, which the next build redoes; "path_bytes" and "dir_bytes" give a path's bytes in base64 when they are not UTF-8)`)
	f.BoolVar(&reindex, "reindex", false, "start over when the index was built with another model or settings (its vectors are dropped), or is damaged (the damaged file is kept as DB.corrupt-TIME)")
	f.BoolVar(&exif, "exif", true, "turn photos upright by their EXIF orientation (changing it needs --reindex)")
	f.IntVar(&batch, "batch", 0, "images per model pass (0 = what the device prefers)")
	f.IntVar(&workers, "workers", 0, "goroutines reading and decoding images ahead of the model (0 = one per core)")
	f.StringVar(&shard, "shard", "", "build only share I of N (I/N, I from 0) of the inputs: whole tar shards, files by a hash of their path; merge the N indexes with clipidx merge")
	f.BoolVar(&retryFailed, "retry-failed", false, "read every file recorded as failed again, changed or not (a build already retries the formats it newly reads)")
	f.BoolVar(&noWait, "no-wait", false, "fail at once when another build (a clipidx watch, serve --watch or build) holds the index, instead of waiting for it")
	vf.register(f)
	f.BoolVar(&captions, "captions", false, "also embed each webdataset sample's caption (.txt) as a text vector (exported as text_emb)")
	return c
}

// announceStop waits for the first Ctrl-C (ctx done) and says that the
// build is saving its work, then restores the default handling so that a
// second Ctrl-C kills the process at once (the index stays consistent
// either way). It says nothing when the build finished first: finished is
// closed before the deferred stop cancels ctx, so a ctx done with finished
// closed is the end of the command, not a signal.
func announceStop(ctx context.Context, stop func(), finished <-chan struct{}, w io.Writer) {
	select {
	case <-ctx.Done():
		select {
		case <-finished:
			return
		default:
		}
		stop()
		fmt.Fprintln(w, "\nstopping: saving finished work (Ctrl-C again to quit at once)")
	case <-finished:
	}
}

// formatNames name preprocess.Formats() in build --help, in this order.
var formatNames = []struct{ id, name string }{
	{"jpeg", "JPEG"}, {"png", "PNG"}, {"gif", "GIF"}, {"webp", "WebP"}, {"webp-anim", "animated WebP (its first frame)"}, {"bmp", "BMP"}, {"tiff", "TIFF"},
	{"heic", "HEIC/HEIF"}, {"avif", "AVIF"}, {"raw", "camera RAW (through its embedded preview)"},
}

// formatList names formats for the help: "A, B and C", the ones
// formatNames does not know last, upper case.
func formatList(ids []string) string {
	var names []string
	for _, f := range formatNames {
		if slices.Contains(ids, f.id) {
			names = append(names, f.name)
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(formatNames, func(f struct{ id, name string }) bool { return f.id == id }) {
			names = append(names, strings.ToUpper(id))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// usageError is a bad flag value: exit status 2, like cobra's own.
func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

func printBuildSummary(cmd *cobra.Command, s *index.Summary) {
	out := cmd.OutOrStdout()
	line := fmt.Sprintf("added %d, updated %d, unchanged %d, reused %d, removed %d, failed %d",
		s.Added, s.Updated, s.Unchanged, s.Reused, s.Removed, s.Failed)
	// The walk's own problems (a folder or link not read) are listed with
	// the files' failures but are not files that failed: say they follow.
	if n := len(s.Failures) - s.Failed; n > 0 {
		line += fmt.Sprintf(" (and %d %s not read, listed below)", n, plural(n, "path", "paths"))
	}
	fmt.Fprintln(out, line)
	if s.Unsaved > 0 {
		fmt.Fprintf(out, "not saved: %s of these (the save failed, below); run the same command again to redo them\n", unsavedText(s.Unsaved))
	}
	printOffline(out, s.Offline)
	printVideoNotes(out, s)
	errw := cmd.ErrOrStderr()
	printFFmpegFailures(errw)
	for i, f := range s.Failures {
		if i == maxListedFailures {
			n := len(s.Failures) - i
			fmt.Fprintf(errw, "... and %d more %s (clipidx build --json lists them all)\n", n, plural(n, "failure", "failures"))
			break
		}
		if f.Transient {
			fmt.Fprintf(errw, "failed, not recorded (will be retried): %s\n", shown(namedError(f.Path, f.Error)))
			continue
		}
		fmt.Fprintf(errw, "failed: %s\n", shown(namedError(f.Path, f.Error)))
	}
}

// splitMissing returns the roots to build and those that do not exist and
// are skipped, and says on w what becomes of each missing one: a path the
// index holds entries under no longer exists (it is built, which keeps
// them offline until clipidx forget), any other simply does not exist (a
// typo). Lstat: a link to an unmounted disk exists; the build keeps its
// entries offline, as it does a folder it may not enter.
func splitMissing(roots []string, w io.Writer) (present, skipped []string) {
	var missing []string
	for _, a := range roots {
		if _, err := os.Lstat(a); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, a)
		} else {
			present = append(present, a)
		}
	}
	if len(missing) == 0 {
		return present, nil
	}
	entries := make([]int, len(missing))
	r, err := store.OpenReader(g.db, store.ReaderOptions{Timeout: time.Second})
	if err == nil {
		err = r.View(func(s *store.Snapshot) error {
			for i, m := range missing {
				abs, err := filepath.Abs(m)
				if err != nil {
					return err
				}
				if err := s.FilesWithin(abs, func(string, store.File) error { entries[i]++; return nil }); err != nil {
					return err
				}
			}
			return nil
		})
		r.Close()
	}
	if err != nil {
		// No index yet, or one the build may replace (--reindex): it
		// holds nothing to keep.
		clear(entries)
	}
	for i, m := range missing {
		if n := entries[i]; n > 0 {
			fmt.Fprintf(w, "%s no longer exists: its %d %s kept offline; run `clipidx forget %s` to drop %s\n",
				m, n, plural(n, "entry is", "entries are"), m, plural(n, "it", "them"))
			present = append(present, m)
		} else {
			fmt.Fprintf(w, "%s does not exist\n", m)
			skipped = append(skipped, m)
		}
	}
	return present, skipped
}

// missingError is the exit status of a build some of whose folders are
// missing (each already reported by splitMissing).
func missingError(missing []string) error {
	if len(missing) == 1 {
		return &exitError{code: 1, err: fmt.Errorf("%s was not found", missing[0])}
	}
	return &exitError{code: 1, err: fmt.Errorf("%d folders were not found", len(missing))}
}

// indexedRoots returns every folder (or tar shard) ever indexed into the
// index, those inside another left out unless its walk skips them (a
// hidden folder, a shard: index.WalkRoots): what a build without DIR
// walks.
func indexedRoots() ([]string, error) {
	r, err := store.OpenReader(g.db, store.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w (give the folders to index: clipidx build DIR...)", err)
	}
	defer r.Close()
	var roots []string
	err = r.View(func(s *store.Snapshot) error {
		var err error
		roots, err = s.Roots()
		return err
	})
	roots = index.WalkRoots(roots)
	if err == nil && len(roots) == 0 {
		err = errors.New("no folder indexed yet: give the folders to index (clipidx build DIR...)")
	}
	return roots, err
}

// interrupted is the exit of a build stopped by a signal: the finished work
// is saved, unless index.Build also reports that its last commit failed.
func interrupted(err error) *exitError {
	msg := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(err.Error()), context.Canceled.Error()))
	if msg == "" {
		return &exitError{code: 130, err: errors.New("interrupted: finished work is saved; run the same command again to continue")}
	}
	return &exitError{code: 130, err: fmt.Errorf("interrupted, and the work finished since the last save was not saved (%s); run the same command again to redo it", msg)}
}

// unsavedText is Summary.Unsaved in words.
func unsavedText(n int) string {
	return fmt.Sprintf("the last %d %s", n, plural(n, "record", "records"))
}

// deviceNow is index.Options.DeviceAtEnd for m: where it ran and its
// note as the build ends (set when a tower loaded, after the build began).
func deviceNow(m *clipnpu.Model) func() (string, string) {
	return func() (string, string) {
		i := m.Info()
		return i.Device, i.DeviceNote
	}
}
