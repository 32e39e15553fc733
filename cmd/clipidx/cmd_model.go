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
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/hub"
	"github.com/clipidx/clipidx/internal/userdir"
)

// defaultRepo is the checkpoint `clipidx model pull` fetches by default; its
// folder is defaultModelDir().
const defaultRepo = clipnpu.DefaultRepo

// pullBackoff is the first wait before retrying a failed transfer (doubled
// each time); tests shorten it.
var pullBackoff = time.Second

// optionalFiles may be absent from a checkpoint: the tokenizer falls back to
// its defaults without them.
var optionalFiles = map[string]bool{"tokenizer_config.json": true, "special_tokens_map.json": true}

func init() { subcommands = append(subcommands, newModelCmd) }

func newModelCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "model",
		Short: "Download a CLIP checkpoint, show where models live, or write a random stand-in",
	}
	c.AddCommand(newModelPullCmd(), newModelPathCmd(), newModelRandomCmd())
	return c
}

// pullSummary is what `model pull --json` prints.
type pullSummary struct {
	Repo     string       `json:"repo"`
	Revision string       `json:"revision"`
	Endpoint string       `json:"endpoint"`
	Dir      string       `json:"dir"`
	Commit   string       `json:"commit,omitempty"`
	Files    []hub.Result `json:"files"`
	Missing  []string     `json:"missing_optional,omitempty"`
	Fetched  int64        `json:"bytes_fetched"`
	Seconds  float64      `json:"seconds"`
}

func newModelPullCmd() *cobra.Command {
	var (
		revision, endpoint, dir string
		files                   []string
		asJSON, verify          bool
	)
	c := &cobra.Command{
		Use:   "pull [REPO]",
		Short: "Download a Hugging Face CLIP checkpoint (default " + defaultRepo + ")",
		Long: `Download a CLIP checkpoint in the Hugging Face layout (config.json,
model.safetensors, vocab.json, merges.txt, preprocessor_config.json and the
tokenizer configs) from the Hugging Face hub.

The default checkpoint (` + defaultRepo + `, 3.9 GB) goes to the default
model folder, where every other command looks for it; another repository
goes to a folder of its own (printed at the end; pass it with --model).

Files are written as <file>.part and renamed once their size and SHA-256
match what the hub advertises. An interrupted pull (Ctrl-C, a lost
connection) resumes where it stopped when run again; files already
downloaded and verified are skipped.

Environment: HF_TOKEN (an access token, for gated or private repositories;
sent to the hub only, never to the storage it redirects to), HF_ENDPOINT
(a mirror of the hub, same as --endpoint).`,
		Example: `  clipidx model pull
  clipidx model pull openai/clip-vit-base-patch32
  HF_ENDPOINT=https://hf-mirror.com clipidx model pull --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := repoArg(args)
			if err != nil {
				return err
			}
			if dir == "" {
				dir = pullDir(repo)
			}
			if len(files) == 0 {
				files = hub.CLIPFiles
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var bar *pullBar
			if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				bar = &pullBar{w: f}
			}
			stderr := cmd.ErrOrStderr()
			opts := hub.Options{
				Endpoint: endpoint, Revision: revision, Token: os.Getenv("HF_TOKEN"),
				Verify: verify, UserAgent: "clipidx (model pull)", Backoff: pullBackoff,
				OnRetry: func(_ string, err error, wait time.Duration) {
					if bar != nil {
						fmt.Fprintln(stderr) // leave the bar's line
					}
					fmt.Fprintf(stderr, "%v; retrying in %v\n", err, wait)
				},
			}
			if bar != nil {
				opts.Progress = bar.update
			}
			sum := pullSummary{Repo: repo, Revision: revision, Endpoint: endpoint, Dir: dir}
			start := time.Now()
			for _, f := range files {
				r, err := hub.DownloadFile(ctx, repo, f, dir, opts)
				bar.stop()
				if errors.Is(err, hub.ErrNotFound) && optionalFiles[f] {
					sum.Missing = append(sum.Missing, f)
					continue
				}
				if err != nil {
					return pullError(ctx, err, repo, opts.Token != "")
				}
				sum.Files = append(sum.Files, r)
				sum.Fetched += r.Fetched
				if r.Commit != "" {
					sum.Commit = r.Commit
				}
			}
			sum.Seconds = time.Since(start).Seconds()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			printPull(cmd.OutOrStdout(), sum, dir != g.model)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&revision, "revision", "main", "branch, tag or commit of the repository")
	f.StringVar(&endpoint, "endpoint", envOr("HF_ENDPOINT", hub.DefaultEndpoint), "Hugging Face hub or mirror URL [env HF_ENDPOINT]")
	f.StringVar(&dir, "dir", "", "destination folder (default: REPO's folder in the user's cache, which clipidx model path REPO prints, whatever --model says)")
	f.StringSliceVar(&files, "file", nil, "download only these files of the repository (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print a JSON summary instead of text")
	f.BoolVar(&verify, "verify", false, "re-hash files already downloaded instead of trusting their records")
	return c
}

// pullDir is where REPO goes without --dir: a folder of its own,
// <user cache>/clipidx/models/<owner>/<name>, whatever --model or
// CLIPIDX_MODEL say, so that a pull never overwrites the weights of the
// model a user points at. The default checkpoint's folder is
// defaultModelDir(), where every command looks when --model is not given.
func pullDir(repo string) string {
	return filepath.Join(modelsRoot(), filepath.FromSlash(repo))
}

// repoArg is the repository of `model pull [REPO]` and `model path
// [REPO]`: the default checkpoint, or REPO when the hub's check of a
// repository id passes (a usage error otherwise), so that path never names
// a folder pull would not fill, such as one outside the models folder.
func repoArg(args []string) (string, error) {
	if len(args) == 0 {
		return defaultRepo, nil
	}
	if err := hub.CheckRepo(args[0]); err != nil {
		return "", usageError("%v", err)
	}
	return args[0], nil
}

// pullError adds what to do next to a download error.
func pullError(ctx context.Context, err error, repo string, haveToken bool) error {
	switch {
	case ctx.Err() != nil:
		return &exitError{code: 130, err: fmt.Errorf("%w\ninterrupted: the partial file is kept; run the same command to resume", err)}
	case errors.Is(err, hub.ErrUnauthorized) && haveToken:
		return fmt.Errorf("%w\nthe token in HF_TOKEN was sent but has no access to %s: accept the model's terms on its page, or use a token of an account that has", err, repo)
	case errors.Is(err, hub.ErrUnauthorized):
		return fmt.Errorf("%w\nif %s is gated or private, set HF_TOKEN to an access token (https://huggingface.co/settings/tokens); otherwise check the repository name", err, repo)
	case errors.Is(err, hub.ErrChecksum):
		return fmt.Errorf("%w\nthe file will be downloaded again from the start on the next run", err)
	}
	return err
}

func printPull(w io.Writer, s pullSummary, otherDir bool) {
	commit := ""
	if len(s.Commit) >= 12 {
		commit = " (commit " + s.Commit[:12] + ")"
	}
	fmt.Fprintf(w, "%s@%s%s\n", s.Repo, s.Revision, commit)
	for _, r := range s.Files {
		state := "downloaded"
		switch {
		case r.Skipped:
			state = "already verified"
		case r.Resumed > 0:
			state = "resumed at " + humanBytes(r.Resumed)
		}
		if r.SHA256 != "" {
			state += ", sha256 " + r.SHA256[:12] + "…"
		}
		fmt.Fprintf(w, "  %-26s %10s  %s\n", r.File, humanBytes(r.Size), state)
	}
	for _, m := range s.Missing {
		fmt.Fprintf(w, "  %-26s %10s  not in the repository (optional)\n", m, "-")
	}
	fmt.Fprintf(w, "fetched %s in %.1f s; model ready in %s\n", humanBytes(s.Fetched), s.Seconds, s.Dir)
	if otherDir {
		fmt.Fprintf(w, "use it with: clipidx --model %q ...\n", s.Dir)
	}
}

// humanBytes formats n with a decimal unit (as the hub shows sizes).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTP"[i])
}

// pullBar draws one progress bar per file (rate and ETA) on a terminal.
type pullBar struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	file  string
	stage hub.Stage
	base  int64 // bytes already there when the bar started (a resume)
}

func (p *pullBar) update(ev hub.Progress) {
	// Small files take no time; the summary lists them.
	if ev.Stage == hub.StageSkipped || ev.Total >= 0 && ev.Total < 1<<20 {
		return
	}
	if p.bar == nil || ev.File != p.file || (ev.Stage != p.stage && ev.Stage != hub.StageDone) {
		p.stop()
		p.file, p.stage, p.base = ev.File, ev.Stage, 0
		desc := ev.File
		switch {
		case ev.Stage == hub.StageHashing:
			desc = "verifying " + ev.File
		case ev.Done > 0:
			// Count only this run's bytes so that rate and ETA are honest.
			p.base = ev.Done
			desc = ev.File + " (resumed)"
		}
		total := ev.Total
		if total >= 0 {
			total -= p.base
		}
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionFullWidth(),
		)
	}
	p.bar.Set64(ev.Done - p.base)
	if ev.Stage == hub.StageDone {
		p.bar.Finish()
		p.stop()
	}
}

// stop ends the current bar's line, keeping what it shows; a nil pullBar
// does nothing.
func (p *pullBar) stop() {
	if p == nil || p.bar == nil {
		return
	}
	p.bar.Exit()
	fmt.Fprintln(p.w)
	p.bar = nil
}

func newModelPathCmd() *cobra.Command {
	var packed bool
	c := &cobra.Command{
		Use:   "path [REPO]",
		Short: "Print the folder a checkpoint is (or would be) pulled into, or the packed-weights cache",
		Long: `Print the folder ` + "`clipidx model pull [REPO]`" + ` puts a checkpoint into (the
default checkpoint's is where every command looks when --model is not given).

With --packed, print the folder where the CPU keeps the model's weights
packed for its kernels (bf16, and float32 where the kernel gains by
packing), so that a start maps them instead of packing them again; how much
it holds, and how to remove it, go to stderr. Removing it is always safe:
the files are rebuilt at the next start that needs them.`,
		Example: `  clipidx model path
  clipidx model path --packed
  rm -r "$(clipidx model path --packed)"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if packed {
				return printPackCache(cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			repo, err := repoArg(args)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), pullDir(repo))
			return nil
		},
	}
	c.Flags().BoolVar(&packed, "packed", false, "print the packed-weights cache folder (its size and how to remove it on stderr)")
	return c
}

// packCacheDir is where the CPU keeps packed weights (Options.PackCache):
// clipidx/packed in the user's cache folder, "" (pack at every start)
// where the system names none.
func packCacheDir() string {
	dir, err := userdir.Cache()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "clipidx", "packed")
}

// printPackCache prints the packed-weights folder on out, and on info
// what it holds and how to remove it.
func printPackCache(out, info io.Writer) error {
	dir := packCacheDir()
	if dir == "" {
		return errors.New("this system names no user cache folder: packed weights are not kept (set HOME or XDG_CACHE_HOME)")
	}
	fmt.Fprintln(out, dir)
	n, size, err := packCacheSize(dir)
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(info, "no packed weights yet (the first start in bf16, or in f32 with the AVX-512 or AVX2 kernel, writes them)")
		return nil
	}
	fmt.Fprintf(info, "%.2f GB in %d files; rebuilt when needed, remove them with: rm -r %s\n", float64(size)/1e9, n, dir)
	return nil
}

// packCacheSize counts the files in the packed-weights folder dir and
// their bytes; a folder not made yet holds none.
func packCacheSize(dir string) (files int, bytes int64, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read packed-weights folder: %w", err)
	}
	for _, e := range ents {
		if st, err := e.Info(); err == nil && st.Mode().IsRegular() {
			files++
			bytes += st.Size()
		}
	}
	return files, bytes, nil
}
