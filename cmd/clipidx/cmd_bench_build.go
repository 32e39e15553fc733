package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/preprocess"
	"github.com/spf13/cobra"
)

func init() { benchCommands = append(benchCommands, newBenchBuildCmd) }

// benchBuildOptions are the flags of `clipidx bench build`.
type benchBuildOptions struct {
	runs    int
	passes  int
	workers int
	exif    bool
	json    bool
}

func newBenchBuildCmd() *cobra.Command {
	var o benchBuildOptions
	c := &cobra.Command{
		Use:   "build DIR...",
		Short: "Time a build of the folders against the model alone: how much of a build is the model",
		Long: `Builds the folders into a temporary index --runs times, as clipidx build
would (the same decoding, workers and model passes; videos are left out),
and before and after each build times --passes model passes alone on a
batch of pixels. A build's time per photo is taken in its steady state: from
the end of its first model pass to the end of its last, over the photos of
all passes but the first, so that loading, the walk and the first decode do
not count. The model's share of the build is its time per image alone over
that time per photo: 1.0 when decoding, hashing and storing cost nothing
beside the model.

The folders need at least two passes' worth of photos (twice the model's
batch); a few dozen 12 MP photos give a steady figure. The steady state
counts the photos decoded while the first pass ran: when decoding is slower
than the model (HEICs), a run of only a few passes flatters the build, and
the output says so; the whole build's time per photo, loading included, is
given beside it. Nothing is written
outside the temporary folder, which is removed at the end.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.runs < 1 || o.passes < 1 || o.workers < 0 {
				return usageError("--runs and --passes take a count ≥ 1, --workers a count ≥ 0")
			}
			// Ctrl-C stops the build; the temporary index is removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := runBenchBuild(ctx, cmd.OutOrStdout(), args, o)
			if errors.Is(err, context.Canceled) {
				return &exitError{code: 130, err: errors.New("interrupted: nothing measured is kept")}
			}
			return err
		},
	}
	f := c.Flags()
	f.IntVar(&o.runs, "runs", 3, "builds, each between two timings of the model alone")
	f.IntVar(&o.passes, "passes", 3, "model passes in each timing of the model alone")
	f.IntVar(&o.workers, "workers", 0, "goroutines reading and decoding images ahead of the model (0 = one per core), as clipidx build --workers")
	f.BoolVar(&o.exif, "exif", true, "turn photos upright by their EXIF orientation, as clipidx build --exif")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return c
}

// benchBuildRun is one build of `clipidx bench build`.
type benchBuildRun struct {
	Photos        int     `json:"photos"`          // images the model embedded
	Failed        int     `json:"failed"`          // files that failed (not timed)
	WallS         float64 `json:"wall_s"`          // the whole build
	SteadyPhotos  int     `json:"steady_photos"`   // photos in the passes after the first
	PhotoS        float64 `json:"photo_s"`         // build time per photo in the steady state
	ModelImageS   float64 `json:"model_image_s"`   // model alone, per image: mean of the timings before and after
	ModelShare    float64 `json:"model_share"`     // ModelImageS / PhotoS
	PassBusyShare float64 `json:"pass_busy_share"` // share of the steady state with a model pass running
	// SteadyPasses is the passes after the first. With fewer than
	// steadyPassesWanted, photos decoded while the first pass ran can make
	// up much of the steady state, which then flatters a build whose
	// decoding is slower than the model (HEICs): WholePhotoS, the whole
	// build's time per photo, loading included, bounds it from the other side.
	SteadyPasses    int     `json:"steady_passes"`
	WholePhotoS     float64 `json:"whole_photo_s"`
	WholeModelShare float64 `json:"whole_model_share"` // ModelImageS / WholePhotoS
}

// steadyPassesWanted is the passes after the first below which bench build
// says its steady state may be flattered.
const steadyPassesWanted = 4

// benchBuildResult is the JSON of `clipidx bench build`.
type benchBuildResult struct {
	Device           string          `json:"device"`
	Precision        string          `json:"precision"`
	Batch            int             `json:"batch"`
	Runs             []benchBuildRun `json:"runs"`
	MedianModelShare float64         `json:"median_model_share"`
	// HEVC is what decoded HEICs' HEVC pictures: an ffmpeg's path or
	// "builtin"; HEVCFailures the HEICs that ffmpeg failed to decode
	// (the built-in decoder read them).
	HEVC         string `json:"hevc"`
	HEVCFailures int64  `json:"hevc_failures"`
}

// passClock is the build's Encoder: the model, with the end of each pass
// and its images noted.
type passClock struct {
	enc   index.Encoder
	mu    sync.Mutex
	start []time.Time
	end   []time.Time
	n     []int
}

func (p *passClock) EncodeImages(pixels []float32, n int) ([]float32, error) {
	t0 := time.Now()
	out, err := p.enc.EncodeImages(pixels, n)
	t1 := time.Now()
	if err == nil {
		p.mu.Lock()
		p.start, p.end, p.n = append(p.start, t0), append(p.end, t1), append(p.n, n)
		p.mu.Unlock()
	}
	return out, err
}

// steady returns the photos of the passes after the first, the time from
// the end of the first pass to the end of the last, and the time a pass
// was running within it.
func (p *passClock) steady() (photos int, span, busy time.Duration) {
	if len(p.end) < 2 {
		return 0, 0, 0
	}
	for i := 1; i < len(p.end); i++ {
		photos += p.n[i]
		busy += p.end[i].Sub(p.start[i])
	}
	return photos, p.end[len(p.end)-1].Sub(p.end[0]), busy
}

func runBenchBuild(ctx context.Context, w io.Writer, dirs []string, o benchBuildOptions) error {
	m, err := openFace(clipnpu.ImageTower, false)
	if err != nil {
		return err
	}
	defer m.Close()
	proc, err := m.Processor(o.exif)
	if err != nil {
		return err
	}
	info := m.Info()
	batch := info.ImageBatch // as clipidx build: the device's batch, or the index's
	if batch <= 0 {
		batch = index.DefaultBatchSize
	}
	px := 3 * info.ImageSize * info.ImageSize
	tmp, err := os.MkdirTemp("", "clipidx-bench-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The model alone runs on pixels in the normalised range; its time
	// does not depend on them.
	pixels := make([]float32, batch*px)
	x := uint32(1)
	for i := range pixels {
		x = x*1664525 + 1013904223
		pixels[i] = float32(x>>8)/float32(1<<24)*4 - 2
	}
	alone := func() (float64, error) {
		t0 := time.Now()
		for range o.passes {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if _, err := m.EncodeImages(pixels, batch); err != nil {
				return 0, err
			}
		}
		return time.Since(t0).Seconds() / float64(o.passes*batch), nil
	}
	if _, err := alone(); err != nil { // warm-up: weights faulted in, packed
		return err
	}
	before, err := alone()
	if err != nil {
		return err
	}
	res := benchBuildResult{Device: info.Device, Precision: g.precision, Batch: batch}
	for r := range o.runs {
		clock := &passClock{enc: m}
		opts := index.Options{
			Encoder:        clock,
			Preprocess:     proc.Bytes,
			Reach:          preprocess.Formats(),
			Identity:       indexIdentity(m.Describe(o.exif)),
			BatchSize:      batch,
			Workers:        o.workers,
			PixelsPerImage: px,
			Device:         info.Device,
			DeviceNote:     info.DeviceNote,
			Weights:        info.Rounded,
			Precision:      g.precision,
			Command:        "clipidx bench build",
		}
		t0 := time.Now()
		sum, err := index.Build(ctx, filepath.Join(tmp, fmt.Sprintf("run%d.db", r)), dirs, opts)
		wall := time.Since(t0).Seconds()
		if err != nil {
			return err
		}
		photos, span, busy := clock.steady()
		if photos == 0 {
			return fmt.Errorf("the build ran %d model %s: a steady state needs at least 2 (give at least %d photos that decode)",
				len(clock.n), plural(len(clock.n), "pass", "passes"), 2*batch)
		}
		after, err := alone()
		if err != nil {
			return err
		}
		run := benchBuildRun{Failed: sum.Failed, WallS: wall, SteadyPhotos: photos,
			PhotoS: span.Seconds() / float64(photos), ModelImageS: (before + after) / 2,
			PassBusyShare: busy.Seconds() / span.Seconds()}
		for _, n := range clock.n {
			run.Photos += n
		}
		run.ModelShare = run.ModelImageS / run.PhotoS
		run.SteadyPasses = len(clock.n) - 1
		run.WholePhotoS = wall / float64(run.Photos)
		run.WholeModelShare = run.ModelImageS / run.WholePhotoS
		res.Runs = append(res.Runs, run)
		before = after
	}
	shares := make([]float64, len(res.Runs))
	for i, r := range res.Runs {
		shares[i] = r.ModelShare
	}
	slices.Sort(shares)
	res.MedianModelShare = shares[len(shares)/2]
	res.HEVC = "builtin"
	if p := preprocess.HEVCDecoder(); p != "" {
		res.HEVC = p
	}
	res.HEVCFailures, _ = preprocess.FFmpegFailures()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "model    %s, %s products, passes of %d\n", res.Device, res.Precision, batch)
	fmt.Fprintf(w, "HEIC     HEVC decoded by %s\n", res.HEVC)
	printFFmpegFailures(w)
	for i, r := range res.Runs {
		fmt.Fprintf(w, "run %d    %d photos in %.2f s; steady state %.3f s a photo over %d photos; model alone %.3f s an image: model share %.3f (a pass running %.0f%% of the time)\n",
			i+1, r.Photos, r.WallS, r.PhotoS, r.SteadyPhotos, r.ModelImageS, r.ModelShare, 100*r.PassBusyShare)
		fmt.Fprintf(w, "         whole build, loading included: %.3f s a photo, model share %.3f\n", r.WholePhotoS, r.WholeModelShare)
		if r.Failed > 0 {
			fmt.Fprintf(w, "         %d %s failed and were not timed\n", r.Failed, plural(r.Failed, "file", "files"))
		}
	}
	if p := res.Runs[0].SteadyPasses; p < steadyPassesWanted {
		fmt.Fprintf(w, "note     the steady state spans %d %s after the first; with fewer than %d, photos decoded during the first pass can fill it, which flatters a build whose decoding is slower than the model: give more photos, or read the whole-build figure\n",
			p, plural(p, "pass", "passes"), steadyPassesWanted)
	}
	fmt.Fprintf(w, "median   model share %.3f\n", res.MedianModelShare)
	return nil
}
