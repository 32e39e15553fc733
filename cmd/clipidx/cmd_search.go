package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/termimg"
	"github.com/clipidx/clipidx/internal/web"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() { subcommands = append(subcommands, newSearchCmd) }

func newSearchCmd() *cobra.Command {
	var k int
	var sortBy string
	var asJSON, pathsOnly, null, exact, preview, frames, long bool
	var threshold float32
	var under, images []string
	c := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find the indexed images that best match a text or an image",
		Long: `Rank every indexed image by cosine similarity to the query and print
"score<TAB>path" lines, best first.

Several query terms combine as a weighted sum in embedding space (each term's
embedding normalised first, the sum normalised after):

  beach            add "beach" (weight 1)
  +sunset          add (weight 1)
  -people          subtract (weight -1)
  +2:dog  -0.5:car explicit weights (the sign is required)
  @photo.jpg       an image file instead of a text (also -@x.jpg, +0.5:@x.jpg)
  \-5 degrees      a text starting with - + @ or \

Terms that start with "-" must come after "--" so they are not read as flags:

  clipidx search "a beach" -- -people +0.5:sunset
  clipidx search --image ~/Photos/cat.jpg -k 20

Qualifiers keep only the records that match, before ranking: the results
are the best of those records. They go inside the query, with the terms or
alone:

  after:2019-06-01  taken on or after that day (also after:2019-06, after:2019)
  before:2019-09    taken before that month began (before:2019-09-15, before:2020)
  year:2019         taken in 2019 (year:2017..2019: in any of those years)
  place:chamonix    city, region or country, any case or accent; whole words
                    (place:"new york"), or the country code (place:fr); parts
                    between commas must each match (place:paris,us)
  near:45.92,6.87,10km  GPS within 10 km (or 500m, 2mi) of that point
  camera:"pentax k-1"   the camera's make and model hold these letters and
                    numbers, spaces and hyphens aside (camera:xt4 is X-T4)
  lens:31mm         the lens's name holds these (lens:24-70 is EF24-70mm)
  kind:photo        photos only; kind:video video frames only; kind:motion
                    Motion Photos (a video inside the still); kind:live Live
                    Photos' stills; kind:live|motion either

Dates compare the camera's clock (the date it showed). year:, place:, near:,
camera: and lens: given twice match either value; different qualifiers must all
match; a record without that metadata matches none of them. A query of
qualifiers only lists the records they keep, newest first (--sort date:
oldest first), as "date<TAB>path" lines, 100 unless -k says otherwise. A
qualifier that cannot be read is an error; write \year:2019 for the text.

  clipidx search "snow year:2019 place:chamonix"
  clipidx search "year:2019 place:paris" -k 50
  clipidx search --sort date "a birthday cake after:2020-01"

A text query loads only the text tower. An image already in the index is
looked up by its content and needs no model at all.

A video is one result, its best frame, printed with its time as
VIDEO#t=SECONDS (the W3C media-fragment form); --frames lists every matching
frame. --paths-only and --null print the video's own path, once.

A result on a disk that was away at the last build (see clipidx build --help)
is still found; its line ends with <TAB>(offline), and --json marks it
"offline": true.`,
		Example: `  clipidx search "a red bicycle"
  clipidx search -0 -k 50 "receipts" | xargs -0 cp -t ~/receipts
  clipidx search --under ~/Photos/2023 --json "birthday cake"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if k <= 0 {
				return usageError("-k takes a number of results ≥ 1, not %d", k)
			}
			if err := outputFlags(asJSON, pathsOnly, null, preview, long); err != nil {
				return err
			}
			if t := float64(threshold); math.IsNaN(t) || math.IsInf(t, 0) {
				return usageError("--threshold takes a finite cosine such as 0.25, not %v", threshold)
			}
			order, err := search.ParseOrder(sortBy)
			if err != nil {
				return usageError("--%v", err)
			}
			var req search.Request
			if len(args) > 0 {
				if req, err = search.ParseRequest(args); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			terms := req.Terms
			for _, im := range images {
				if im == "" {
					return usageError("--image needs a file's path, not an empty one")
				}
				terms = append(terms, search.Term{Weight: 1, Image: im})
			}
			listing := len(terms) == 0 && req.Filter.Qualified()
			switch {
			case len(terms) == 0 && !listing:
				return usageError("nothing to search for: give a text, --image FILE or qualifiers such as year:2019")
			case listing && cmd.Flags().Changed("sort") && order == search.ByScore:
				return usageError("--sort score needs a text or image to score by: the qualifiers %q list by date", req.Filter.String())
			case listing && cmd.Flags().Changed("threshold"):
				return usageError("--threshold needs a text or image to score by: the qualifiers %q list by date", req.Filter.String())
			case listing && !cmd.Flags().Changed("k"):
				k = listK
			}
			var dirs []string
			if len(under) > 0 {
				var empty bool
				if dirs, empty, err = resolveUnder(g.db, under, cmd.ErrOrStderr()); err != nil {
					return err
				}
				if empty { // nothing to rank: no model, no results
					return printHits(cmd, nil, asJSON, pathsOnly, null, preview, long)
				}
			}
			opts := search.Options{K: k, Under: dirs, Threads: g.threads, Exact: exact, Frames: frames,
				Filter: req.Filter, Order: order, Meta: metaSource, Damaged: tellDamaged(cmd.ErrOrStderr())}
			if cmd.Flags().Changed("threshold") {
				opts.Threshold = &threshold
			}
			// The model is opened only when a term needs it (an image in
			// the index is found by its content), and then only the
			// towers the query needs are loaded.
			var m *clipnpu.Model
			defer func() {
				if m != nil {
					m.Close()
				}
			}()
			model := func() (search.Encoder, error) {
				var err error
				if m, err = openFace(clipnpu.TextTower, true); err != nil {
					return nil, err
				}
				return indexFace{m}, nil
			}
			keptKernels() // the scan kernel measured fastest here, if known
			// The offline folders are read in the session that ranks.
			view := viewIndex(g.db)
			var offline []store.Offline
			res, err := search.Query(cmd.Context(), func(fn func(*store.Snapshot) error) error {
				return view(func(s *store.Snapshot) error {
					var err error
					if offline, err = s.Offline(); err != nil {
						return err
					}
					return fn(s)
				})
			}, terms, model, opts)
			if errors.Is(err, search.ErrEmptyQuery) || errors.Is(err, search.ErrBadWeight) {
				// The terms, not the index or the model: a query error,
				// like one that does not parse.
				return &exitError{code: 2, err: err}
			}
			if err != nil {
				return err
			}
			hits := markOffline(res, offline, listing)
			if asJSON || long {
				if err := addMeta(g.db, hits); err != nil { // photometa.go
					return err
				}
			}
			return printHits(cmd, hits, asJSON, pathsOnly, null, preview, long)
		},
	}
	f := c.Flags()
	f.IntVarP(&k, "k", "k", 10, "number of results")
	f.BoolVar(&asJSON, "json", false, `print [{"path": P, "score": S}] (score = cosine; "offline": true on a result whose disk was away at the last build; a video frame adds "video": its file and "time": seconds; a Live Photo's still "live": its movie; a Motion Photo (a still that carries its video) "motion": true; "taken", "taken_source", "place", "gps", "camera" from the file when known; "taken_offset_unknown": true when "taken" has no UTC offset; "path_bytes": the path's bytes in base64 when they are not UTF-8)`)
	f.BoolVar(&long, "long", false, "add the capture date (~ before a modification time) and place columns: score<TAB>path<TAB>date<TAB>place (a listing of qualifiers alone: path<TAB>date<TAB>place)")
	f.BoolVar(&pathsOnly, "paths-only", false, "print only paths, one a line, each file once (for xargs)")
	f.BoolVarP(&null, "null", "0", false, "print only paths, each ended by a NUL byte (for xargs -0; with or without --paths-only)")
	f.Float32Var(&threshold, "threshold", 0, "drop results with a cosine below this")
	f.StringArrayVar(&under, "under", nil, "only results inside this folder, or samples of this tar shard (repeatable)")
	f.StringArrayVar(&images, "image", nil, "find images similar to this file (repeatable; same as the term @FILE)")
	f.BoolVar(&preview, "preview", false, "draw a thumbnail under each result (terminals with kitty graphics or iTerm2 inline images)")
	f.BoolVar(&frames, "frames", false, "list every matching frame of a video (VIDEO#t=SECONDS), not only each video's best")
	f.StringVar(&sortBy, "sort", "score", "order of the results: score (best first), date (oldest first) or -date (newest first); records without a date last")
	f.BoolVar(&exact, "exact", false, "scan the full float32 vectors (slower; same results)")
	f.MarkHidden("exact")
	return c
}

// tellDamaged returns a search.Options.Damaged that names each damaged
// vector's files on w, once, with what to do.
func tellDamaged(w io.Writer) func(paths []string) {
	var mu sync.Mutex
	told := map[string]bool{}
	return func(paths []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range paths {
			if !told[p] {
				told[p] = true
				fmt.Fprintf(w, "clipidx: the index's vector of %s is damaged (not a unit vector) and was left out of the results: `clipidx status --check` lists the damage, `clipidx build --reindex` starts the index over\n", shown(p))
			}
		}
	}
}

// outputFlags refuses flags that ask for different outputs: --json,
// --paths-only (or -0) and --preview each choose the output; --long adds
// columns to the plain lines, with or without --preview. --paths-only with
// -0 agree: paths, each ended by a NUL byte.
func outputFlags(asJSON, pathsOnly, null, preview, long bool) error {
	paths := "--paths-only"
	if null {
		paths = "--null"
	}
	switch {
	case preview && (asJSON || pathsOnly || null):
		return usageError("--preview draws images beside the default output; it does not go with --json, --paths-only or --null")
	case long && (asJSON || pathsOnly || null):
		return usageError("--long adds columns to the default output; it does not go with --json, --paths-only or --null")
	case asJSON && (pathsOnly || null):
		return usageError("--json and %s each choose the output: give one of them", paths)
	}
	return nil
}

// printHits prints the results in the output the flags chose.
func printHits(cmd *cobra.Command, hits []hit, asJSON, pathsOnly, null, preview, long bool) error {
	out := cmd.OutOrStdout()
	switch {
	case asJSON:
		if hits == nil {
			hits = []hit{}
		}
		for i := range hits {
			hits[i].forJSON()
		}
		return json.NewEncoder(out).Encode(hits)
	case null, pathsOnly:
		end := "\n"
		if null {
			end = "\x00"
		}
		// A file once, where it first ranks: --frames lists a video's
		// frames, but xargs wants each file once.
		seen := map[string]bool{}
		for _, x := range hits {
			if p := filePath(x.Path); !seen[p] {
				seen[p] = true
				fmt.Fprint(out, p, end)
			}
		}
	case preview:
		return printPreviews(cmd, hits, long)
	default:
		for _, x := range hits {
			fmt.Fprintln(out, x.text(long))
		}
	}
	return nil
}

// listK is the default -k of a listing (qualifiers and no term): a
// listing is read through, not skimmed for the best few.
const listK = 100

// hit is a search result as printed: offline when its folder's disk was
// away at the last build (its file may not be readable now). A listing
// (qualifiers only) has no score.
type hit struct {
	search.Result
	Score   *float32 `json:"score,omitempty"`
	Offline bool     `json:"offline,omitempty"`
	Video   string   `json:"video,omitempty"` // a frame's video file
	Time    *float64 `json:"time,omitempty"`  // a frame's time in seconds
	Live    string   `json:"live,omitempty"`  // a Live Photo still's movie file (left out of the index)
	// PathBytes is the path's bytes (base64 in JSON) when they are not
	// UTF-8, which "path" can only show with U+FFFD in their place.
	PathBytes []byte `json:"path_bytes,omitempty"`
	metaJSON         // photometa.go: filled for --json and --long
}

// forJSON fills the fields only --json prints.
func (h *hit) forJSON() {
	if !utf8.ValidString(h.Path) {
		h.PathBytes = []byte(h.Path)
	}
}

// markOffline marks the results that lie in an offline folder.
func markOffline(res []search.Result, offline []store.Offline, listing bool) []hit {
	out := make([]hit, len(res))
	for i, r := range res {
		_, off := store.OfflineFor(offline, r.Path)
		out[i] = hit{Result: r, Offline: off}
		if v, t, ok := store.SplitFrame(r.Path); ok {
			out[i].Video, out[i].Time = v, &t
		}
		if !listing {
			out[i].Score = &res[i].Score
		}
	}
	return out
}

// filePath is the file a result lives in: a frame's video, or the path.
func filePath(p string) string {
	if v, _, ok := store.SplitFrame(p); ok {
		return v
	}
	return p
}

// line is the plain output of a hit: score<TAB>path (date<TAB>path in a
// listing), and <TAB>(offline).
func (h hit) line() string {
	l := fmt.Sprintf("%.4f\t%s", h.Result.Score, shown(h.Path))
	if h.Score == nil {
		l = takenText(h.Meta) + "\t" + shown(h.Path)
	}
	if h.Offline {
		l += "\t(offline)"
	}
	return l
}

// text is the plain line of a hit, with the --long columns if long.
func (h hit) text(long bool) string {
	if long {
		return h.lineLong()
	}
	return h.line()
}

// lineLong is line with the --long columns before the offline mark; a
// listing's date is then a --long column: path<TAB>date<TAB>place.
func (h hit) lineLong() string {
	l := fmt.Sprintf("%.4f\t%s", h.Result.Score, shown(h.Path)) + h.longColumns()
	if h.Score == nil {
		l = shown(h.Path) + h.longColumns()
	}
	if h.Offline {
		l += "\t(offline)"
	}
	return l
}

// previewSize is the longest side of a --preview thumbnail in pixels.
const previewSize = 160

// printPreviews prints each result with its thumbnail drawn inline when the
// terminal can show images, and says why not otherwise.
func printPreviews(cmd *cobra.Command, res []hit, long bool) error {
	out := cmd.OutOrStdout()
	proto, why := termimg.Detect(os.Getenv)
	if f, ok := out.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		proto, why = termimg.None, "the output is not a terminal"
	}
	if proto == termimg.None {
		fmt.Fprintf(cmd.ErrOrStderr(), "clipidx: --preview shows no images here: %s; printing the results only\n", why)
	}
	for _, x := range res {
		fmt.Fprintln(out, x.text(long))
		if proto == termimg.None || x.Offline {
			continue
		}
		data, err := os.ReadFile(x.Path)
		if x.Video != "" {
			err = errors.New("no preview of a video frame in the terminal (clipidx serve shows it)")
		}
		if err == nil {
			var img *image.RGBA
			if img, err = web.ThumbImage(data, x.Path, previewSize); err == nil {
				err = termimg.Write(out, proto, img)
			}
		}
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "clipidx: no preview of %s: %v\n", x.Path, err)
		}
	}
	return nil
}

// errFound stops a walk of the index at its first record.
var errFound = errors.New("found")

// resolveUnder turns each --under into the folders (or tar shards) to
// search: the path as given, made absolute, in every form the index may
// hold it as (search.UnderForms: through links). It says on w which --under
// holds no indexed file, and whether it exists; empty reports that none
// holds any, so there is nothing to rank.
func resolveUnder(db string, under []string, w io.Writer) (dirs []string, empty bool, err error) {
	empty = true
	err = viewIndex(db)(func(s *store.Snapshot) error {
		for _, u := range under {
			abs, err := filepath.Abs(u)
			if err != nil {
				return err
			}
			forms, err := search.UnderForms(s, []string{abs})
			if err != nil {
				return err
			}
			held := false
			for _, d := range forms {
				if !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
				if !held {
					err := s.FilesWithin(d, func(_ string, f store.File) error {
						if f.Failed() {
							return nil
						}
						return errFound
					})
					if held = errors.Is(err, errFound); !held && err != nil {
						return err
					}
				}
			}
			if held {
				empty = false
				continue
			}
			why := "no indexed file is at or under it"
			if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
				why = "it does not exist, and " + why
			}
			fmt.Fprintf(w, "clipidx: --under %s: %s (clipidx status names the indexed folders)\n", u, why)
		}
		return nil
	})
	return dirs, empty, err
}

// indexFace is the model face as search and the server take it: the
// identity an index records is made here, from the face's description,
// so the face knows no index.
type indexFace struct{ *clipnpu.Model }

func (f indexFace) Identity(exif bool) store.Identity { return indexIdentity(f.Describe(exif)) }

// indexIdentity is the identity an index records of the model described.
func indexIdentity(d clipnpu.Description) store.Identity {
	return store.Identity{Model: d.Name, WeightsHash: d.WeightsHash, Arch: d.Arch, Weights: d.Weights, Dim: d.Dim, Preprocess: d.Preprocess, EXIF: d.EXIF}
}

// viewIndex opens the index at path for each read of a query and closes
// it after, so no lock is held while the model works.
func viewIndex(path string) search.View {
	return func(fn func(*store.Snapshot) error) error {
		r, err := store.OpenReader(path, store.ReaderOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		return r.View(fn)
	}
}
