package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newStatusCmd) }

// statusJSON is the --json output of clipidx status.
type statusJSON struct {
	Images int `json:"images"`
	Failed int `json:"failed"`
	// LiveVideos counts the Live Photo movies left out, their stills
	// indexed (not in Failed).
	LiveVideos int              `json:"live_videos"`
	Videos     int              `json:"videos"` // videos with frames
	Frames     int              `json:"frames"` // their frames (counted in images)
	Model      string           `json:"model"`
	Dim        int              `json:"dim"`
	Weights    string           `json:"weights"` // "stored", or the type weights were rounded to at load ("f16")
	DBBytes    int64            `json:"db_bytes"`
	FreeBytes  int64            `json:"free_bytes"` // the file's free pages, which clipidx compact gives back
	Device     string           `json:"device"`     // where the last build ran the model ("" = unknown)
	LastBuild  *store.LastBuild `json:"last_build"`
	Folders    []string         `json:"folders"` // every folder or tar shard ever indexed, by any build or merge
	// FoldersBytes is, beside Folders and only when one of them is not
	// UTF-8, each folder's bytes (base64) or null for a UTF-8 one.
	FoldersBytes [][]byte         `json:"folders_bytes,omitempty"`
	Offline      []store.Offline  `json:"offline"`  // folders whose disk was away at the last build, their entries kept
	Build        store.BuildState `json:"build"`    // a build running now (any process), or the last one's progress
	Metadata     metaStats        `json:"metadata"` // dates, GPS and places read from the files (photometa.go)
	// Unused counts the vectors no file uses any more, kept for a while
	// for a file moved to a folder not built yet (store.KeepUnused).
	Unused int `json:"unused_vectors"`
}

func newStatusCmd() *cobra.Command {
	var asJSON, check, failed bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show what the index holds",
		Long: `Show the number of indexed and failed images, the model the index was built
with, when the last build ran and on which device, every folder indexed so far
(by any build or merge), and the folders whose disk
was away at the last build (their entries kept, see clipidx build --help). It
works while a build is running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := store.OpenReader(g.db, store.ReaderOptions{})
			if err != nil {
				return err
			}
			defer r.Close()
			var st store.Stats
			var videos, frames, live int
			var id store.Identity
			offline := []store.Offline{}
			folders := []string{}
			var prog *store.Progress
			var ms metaStats
			var free int64
			err = r.View(func(s *store.Snapshot) error {
				id = s.Identity()
				var err error
				if free, err = s.FreeBytes(); err != nil {
					return err
				}
				if ms, err = readMetaStats(s); err != nil {
					return err
				}
				if prog, err = s.Progress(); err != nil {
					return err
				}
				roots, err := s.Roots()
				if err != nil {
					return err
				}
				folders = append(folders, roots...)
				off, err := s.Offline()
				if err != nil {
					return err
				}
				offline = append(offline, off...)
				st, err = s.Stats()
				videos, frames = s.VideoCounts()
				if err == nil {
					live, err = s.LiveVideos(st)
					st.Failed -= live
				}
				if err == nil && check {
					if cerr := s.Check(true); cerr != nil {
						err = fmt.Errorf("%v\n%w", cerr, store.ErrCorrupt)
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			build := store.StateOf(g.db, prog)
			out := cmd.OutOrStdout()
			if failed {
				return listFailures(r, cmd, asJSON)
			}
			device := ""
			if st.LastBuild != nil {
				device = st.LastBuild.Device
			}
			if asJSON {
				e := json.NewEncoder(out)
				weights := id.Weights
				if weights == "" {
					weights = "stored"
				}
				js := statusJSON{Images: st.Images, Failed: st.Failed, LiveVideos: live, Videos: videos, Frames: frames, Model: id.Model, Dim: id.Dim, Weights: weights, DBBytes: st.Bytes, FreeBytes: free, Device: device, LastBuild: st.LastBuild, Folders: folders, Offline: offline, Build: build, Metadata: ms, Unused: st.Queued}
				js.FoldersBytes = store.PathsBytes(folders)
				return e.Encode(js)
			}
			fmt.Fprintf(out, "index:       %s (%s)\n", g.db, humanBytes(st.Bytes))
			if free > st.Bytes/10 {
				fmt.Fprintf(out, "free space:  %s (clipidx compact gives it back)\n", humanBytes(free))
			}
			fmt.Fprintf(out, "images:      %d (%d distinct)\n", st.Images, st.Vectors-st.Queued)
			if st.Queued > 0 {
				fmt.Fprintf(out, "unused:      %d %s no file uses any more, kept for a file moved to a folder not built yet (freed by a build of every folder, or by any build %d days on)\n",
					st.Queued, plural(st.Queued, "vector", "vectors"), int(store.KeepUnused.Hours()/24))
			}
			if videos > 0 {
				fmt.Fprintf(out, "videos:      %d (%d %s, counted in images)\n", videos, frames, plural(frames, "frame", "frames"))
			}
			if live > 0 {
				fmt.Fprintf(out, "live photos: %d %s left out, %s indexed\n", live, plural(live, "movie", "movies"),
					plural(live, "its still is", "their stills are"))
			}
			fmt.Fprintf(out, "failed:      %d\n", st.Failed)
			printBuildState(out, build)
			weights := ", weights as stored"
			if id.Weights != "" {
				weights = ", weights rounded to " + id.Weights + " at load"
			}
			fmt.Fprintf(out, "model:       %s (dim %d, preprocessing %s, EXIF orientation %v%s)\n", id.Model, id.Dim, id.Preprocess, id.EXIF, weights)
			if st.LastBuild == nil {
				fmt.Fprintln(out, "last build:  none finished")
			} else {
				when := st.LastBuild.Time
				if t, err := time.Parse(time.RFC3339, when); err == nil {
					when = fmt.Sprintf("%s (%s ago)", t.Local().Format("2006-01-02 15:04"), time.Since(t).Round(time.Second))
				}
				state := ""
				if n := len(st.LastBuild.Within); n > 0 {
					state = fmt.Sprintf(", within %d %s (a partial build of what changed, as watch runs)", n, plural(n, "path", "paths"))
				}
				if !st.LastBuild.Complete {
					state += ", interrupted"
				}
				fmt.Fprintf(out, "last build:  %s%s\n", when, state)
				if device != "" {
					if n := st.LastBuild.DeviceNote; n != "" {
						device += " (" + n + ")"
					}
					fmt.Fprintf(out, "device:      %s\n", device)
				}
				if p := st.LastBuild.Precision; p != "" {
					w := "as stored"
					if st.LastBuild.Weights != "" {
						w = "rounded to " + st.LastBuild.Weights + " at load"
					}
					fmt.Fprintf(out, "arithmetic:  %s products, weights %s (the index accepts any --precision and --weights of this model)\n", p, w)
				}
			}
			printMetaStats(out, ms, st.Images)
			if len(folders) > 0 {
				// A folder built on its own within another is the other's
				// (--json lists every one).
				outer := store.Outermost(slices.Sorted(slices.Values(folders)))
				line := strings.Join(outer, ", ")
				if n := len(folders) - len(outer); n > 0 {
					line += fmt.Sprintf(" (and %d %s within them, built on %s own)", n, plural(n, "folder", "folders"), plural(n, "its", "their"))
				}
				fmt.Fprintf(out, "folders:     %s\n", line)
			}
			printOffline(out, offline)
			if check {
				fmt.Fprintln(out, "check:       ok")
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().BoolVar(&check, "check", false, "also verify every invariant of the index (reads it all)")
	c.Flags().BoolVar(&failed, "failed", false, "list the files that could not be indexed, with the reason (path<TAB>reason, or JSON)")
	return c
}

// printOffline prints a line for each folder whose entries a build kept
// because its disk looked away (build and status print the same lines).
func printOffline(w io.Writer, list []store.Offline) {
	for _, o := range list {
		fmt.Fprintf(w, "offline: %s, %d %s kept; `clipidx forget %s` drops %s\n",
			shown(o.Dir), o.Entries, plural(o.Entries, "entry", "entries"), shown(o.Dir), plural(o.Entries, "it", "them"))
	}
}

// listFailures prints every failed file recorded in the index.
func listFailures(r *store.Reader, cmd *cobra.Command, asJSON bool) error {
	type failure struct {
		Path  string `json:"path"`
		Error string `json:"error"`
		// PathBytes is the path's bytes (base64) when they are not
		// UTF-8, as in search --json.
		PathBytes []byte `json:"path_bytes,omitempty"`
	}
	list := []failure{}
	err := r.View(func(s *store.Snapshot) error {
		return s.Files("", func(p string, f store.File) error {
			if _, live := f.LiveVideo(); f.Failed() && !live {
				list = append(list, failure{Path: p, Error: f.Err, PathBytes: store.PathBytes(p)})
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(list)
	}
	// path<TAB>reason, one failure a line: a tab, a line break or an
	// escape sequence in either is shown as \xNN, so that no file name
	// ends a record early or forges another (--json gives them exactly).
	for _, f := range list {
		fmt.Fprintf(out, "%s\t%s\n", shown(f.Path), shown(f.Error))
	}
	return nil
}

// backupWhy says why build --reindex moved an index aside to backup.
func backupWhy(backup string) string {
	if strings.Contains(filepath.Base(backup), ".newer-") {
		return "a newer clipidx wrote it"
	}
	return "it was damaged, or not an index this clipidx reads"
}
