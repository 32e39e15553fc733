package gemm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The kernels are chosen by measurement, once per CPU: a vendor's name
// says little about which kernel is fastest (on Zen 5 the AVX-512 kernel
// runs 1.7x the AVX2 one, on Zen 4 about as fast), so Choose times each
// kernel the CPU can run on slices of the model's own products and keeps
// the fastest, in a small file its caller names, keyed by the CPU.
const (
	// chooseVersion is the cache file's format and the kernel set's
	// version: raise it when a kernel changes enough to re-measure.
	chooseVersion = 1
	// chooseRounds: each kernel runs this many times, interleaved with
	// the others, and its best time counts (the first run of each also
	// faults its buffers in and packs its weights).
	chooseRounds = 4
	// chooseMargin: another kernel replaces the incumbent (the vendor
	// default, or float32 for the precision) only when it is more than
	// 5% faster, so that noise does not flip the choice.
	chooseMargin = 1.05
)

// The trial products, [M, K] · [K, N]ᵀ, slices of ViT-H/14's: the image
// tower's first MLP product (K = 1280, N = 5120; a pass of 4 images has
// M = 4·257) and the text tower's (K = 1024, N = 4096). M = 84 rows is a
// multiple of the float32 tiles' 6 and 14 rows and the bf16 kernel's 12;
// on the Zen 5 development machine (2 cores) the four rounds of all
// kernels, with their set-up, took about 0.45 s of CPU time.
var trialShapes = []struct{ m, k, n int }{{84, 1280, 5120}, {84, 1024, 4096}}

// Contest names of a Choice.
const (
	ContestF32       = "f32"       // the float32 micro-kernel (SetKernel's names)
	ContestBF16      = "bf16"      // the bf16 kernel (SetBF16Kernel's names)
	ContestPrecision = "precision" // "bf16" when its best kernel beats float32's
)

// Contest is a set of interchangeable kernels timed against each other.
// Choose runs its own (float32, bf16); a caller adds others (the search
// scan) through ChooseOptions.Extra.
type Contest struct {
	Name      string    // key in Choice.Contests
	Unit      string    // of the figures, e.g. "GB/s"
	Incumbent string    // kept unless another entrant is more than 5% faster
	Entrants  []Entrant // the kernels this CPU can run
}

// Entrant is one kernel of a Contest.
type Entrant struct {
	Name string
	Work float64 // units of Contest.Unit (times a second) one Run does
	Run  func()  // one trial; never called when ChooseOptions.Time is a fake
}

// Outcome is one contest's result.
type Outcome struct {
	Chosen  string             `json:"chosen"`
	Unit    string             `json:"unit"`
	Figures map[string]float64 `json:"figures"` // per entrant, best round
}

// Choice is what Choose measured (or found kept) for this CPU.
type Choice struct {
	Version  int                `json:"version"`
	Key      string             `json:"key"` // CPU, features and kernel set
	Measured time.Time          `json:"measured"`
	Seconds  float64            `json:"seconds"` // the measurement's wall time
	Contests map[string]Outcome `json:"contests"`

	Path   string `json:"path,omitempty"`   // the file it is kept in ("" if none)
	Cached bool   `json:"cached,omitempty"` // read from Path, nothing measured
}

// BF16Faster reports whether bf16 products were measured faster than
// float32 ones (false on a CPU without a bf16 kernel).
func (c *Choice) BF16Faster() bool {
	return c != nil && c.Contests[ContestPrecision].Chosen == "bf16"
}

// Summary words one contest for `clipidx info`: "avx512 (chosen by
// measurement 2026-12-02: avx512 41 GFLOP/s, avx2 24 GFLOP/s)"; "" when
// the CPU has no kernel of that kind.
func (c *Choice) Summary(contest string) string {
	o, ok := c.Contests[contest]
	if !ok || o.Chosen == "" {
		return "" // no kernel of this kind on this CPU
	}
	if len(o.Figures) < 2 {
		return o.Chosen + " (nothing to measure it against on this CPU)"
	}
	names := make([]string, 0, len(o.Figures))
	for n := range o.Figures {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmpFloat(o.Figures[b], o.Figures[a]) })
	figs := make([]string, len(names))
	for i, n := range names {
		figs[i] = fmt.Sprintf("%s %.3g %s", n, o.Figures[n], o.Unit)
	}
	return fmt.Sprintf("%s (chosen by measurement %s: %s)", o.Chosen, c.Measured.Format("2006-01-02"), strings.Join(figs, ", "))
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ChooseOptions configure Choose. The zero value measures with the wall
// clock on every core and keeps nothing on disk.
type ChooseOptions struct {
	// Dir is the folder the choice is kept in, as kernels-<hash of the
	// key>.json; "" keeps nothing. A file that cannot be read, is corrupt
	// or describes another CPU or kernel set is measured again and
	// replaced (written atomically).
	Dir string
	// Time runs one trial and returns how long it took; nil times run()
	// with the wall clock. Tests inject timings here (and never run).
	Time func(contest, kernel string, run func()) time.Duration
	// Now dates a measurement; nil is time.Now.
	Now func() time.Time
	// Threads of the trial products, as many as the products the choice
	// is for will run on; 0 is GOMAXPROCS. A choice is kept per count.
	Threads int
	// Extra contests measured in the same rounds (the search scan).
	Extra []Contest
	// KeptOnly reads a kept choice and measures nothing: Choose returns
	// nil, nil when Dir holds none for this CPU (for commands that do not
	// run the model but may use a kept choice, such as a search on stored
	// vectors).
	KeptOnly bool
}

// ErrChoiceNotKept wraps a failure to write the choice's file: the choice
// itself is good and applied.
var ErrChoiceNotKept = errors.New("kernel choice not kept")

// Choose picks this CPU's kernels: it reads the choice kept in opts.Dir
// for this CPU and kernel set, or measures every kernel the CPU can run
// (float32, bf16, whether bf16 beats float32, and opts.Extra) and keeps
// the result there. It applies the float32 and bf16 choices (as SetKernel
// and SetBF16Kernel would); the caller applies its extra contests. It
// must run before any product (it changes the kernels). The error, when
// not nil, wraps ErrChoiceNotKept and the Choice is still valid.
func Choose(opts ChooseOptions) (*Choice, error) {
	p := thisCPU()
	if opts.Threads <= 0 {
		opts.Threads = runtime.GOMAXPROCS(0)
	}
	tr := &trials{threads: opts.Threads}
	defer tr.close()
	c, err := choose(p, tr.contests(p), opts)
	if c != nil {
		applyChoice(c)
	}
	return c, err
}

// cpuProfile is what the choice depends on: the processor and the
// kernels this build can run on it.
type cpuProfile struct {
	id       string   // vendor, family, model, stepping
	features []string // Features()
	f32      []string // float32 kernels it runs, best first ("go" last)
	f32Def   string   // the kernel chosen without measurement
	bf16     []string // bf16 kernels it runs, best first
}

// key names the profile, the threads the trials ran on (a kernel that
// wins on one core may lose on two, where the cores share the memory
// bandwidth) and the contests' kernel sets.
func (p cpuProfile) key(threads int, cs []Contest) string {
	parts := []string{fmt.Sprintf("clipidx kernels v%d", chooseVersion), p.id, strings.Join(p.features, " "), fmt.Sprintf("threads %d", threads)}
	for _, c := range cs {
		var names []string
		for _, e := range c.Entrants {
			names = append(names, e.Name)
		}
		parts = append(parts, c.Name+":"+strings.Join(names, ","))
	}
	return strings.Join(parts, "|")
}

// cacheFile is the file of key in dir.
func cacheFile(dir, key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(dir, "kernels-"+hex.EncodeToString(h[:6])+".json")
}

// choose is Choose on profile p with the contests cs (the float32 and
// bf16 ones first), without applying the result.
func choose(p cpuProfile, cs []Contest, opts ChooseOptions) (*Choice, error) {
	cs = append(cs, opts.Extra...)
	key := p.key(opts.Threads, cs)
	path := ""
	if opts.Dir != "" {
		path = cacheFile(opts.Dir, key)
		if c := readChoice(path, key, cs); c != nil {
			return c, nil
		}
	}
	if opts.KeptOnly {
		return nil, nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	t0 := time.Now()
	c := &Choice{Version: chooseVersion, Key: key, Measured: now().UTC(), Contests: measure(cs, opts.Time), Path: path}
	c.Seconds = time.Since(t0).Seconds()
	if path == "" {
		return c, nil
	}
	if err := writeChoice(path, c); err != nil {
		c.Path = ""
		return c, fmt.Errorf("%w: %v", ErrChoiceNotKept, err)
	}
	return c, nil
}

// measure times every entrant chooseRounds times, interleaved, and picks
// each contest's winner; the precision contest compares the chosen bf16
// kernel with the chosen float32 one.
func measure(cs []Contest, timer func(string, string, func()) time.Duration) map[string]Outcome {
	if timer == nil {
		timer = func(_, _ string, run func()) time.Duration {
			t := time.Now()
			run()
			return time.Since(t)
		}
	}
	best := make([][]time.Duration, len(cs))
	for i, c := range cs {
		best[i] = make([]time.Duration, len(c.Entrants))
	}
	for range chooseRounds {
		for i, c := range cs {
			if len(c.Entrants) < 2 && (c.Name != ContestBF16 || len(c.Entrants) == 0) {
				continue // nothing to choose between (a lone bf16 kernel still runs against float32)
			}
			for j, e := range c.Entrants {
				if d := timer(c.Name, e.Name, e.Run); best[i][j] == 0 || d < best[i][j] {
					best[i][j] = d
				}
			}
		}
	}
	out := map[string]Outcome{}
	for i, c := range cs {
		o := Outcome{Chosen: c.Incumbent, Unit: c.Unit, Figures: map[string]float64{}}
		for j, e := range c.Entrants {
			if d := best[i][j]; d > 0 {
				o.Figures[e.Name] = e.Work / d.Seconds()
			}
		}
		o.Chosen = winner(c.Incumbent, o.Figures)
		if o.Chosen == "" && len(c.Entrants) > 0 {
			o.Chosen = c.Entrants[0].Name
		}
		out[c.Name] = o
	}
	out[ContestPrecision] = precisionOutcome(out[ContestF32], out[ContestBF16])
	return out
}

// winner is the fastest of figures, or the incumbent unless the fastest
// is more than chooseMargin faster ("" when there are no figures and no
// incumbent).
func winner(incumbent string, figures map[string]float64) string {
	top, topFig := "", 0.0
	for n, f := range figures {
		if f > topFig || f == topFig && n < top {
			top, topFig = n, f
		}
	}
	if inc, ok := figures[incumbent]; ok && topFig <= inc*chooseMargin {
		return incumbent
	}
	if top == "" {
		return incumbent
	}
	return top
}

// precisionOutcome keeps float32 unless the chosen bf16 kernel was more
// than chooseMargin faster than the chosen float32 one.
func precisionOutcome(f32, bf16 Outcome) Outcome {
	o := Outcome{Chosen: "f32", Unit: f32.Unit, Figures: map[string]float64{}}
	if v, ok := f32.Figures[f32.Chosen]; ok {
		o.Figures["f32"] = v
	}
	if v, ok := bf16.Figures[bf16.Chosen]; ok {
		o.Figures["bf16"] = v
	}
	o.Chosen = winner("f32", o.Figures)
	return o
}

// readChoice returns the choice kept at path for key, or nil when there
// is none, it cannot be read, or it is for another CPU, kernel set or
// format (its contests must name kernels of cs).
func readChoice(path, key string, cs []Contest) *Choice {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var c Choice
	if json.Unmarshal(b, &c) != nil || c.Version != chooseVersion || c.Key != key {
		return nil
	}
	for _, ct := range cs {
		o, ok := c.Contests[ct.Name]
		if !ok || len(ct.Entrants) > 0 && !slices.ContainsFunc(ct.Entrants, func(e Entrant) bool { return e.Name == o.Chosen }) {
			return nil
		}
	}
	if _, ok := c.Contests[ContestPrecision]; !ok {
		return nil
	}
	c.Path, c.Cached = path, true
	return &c
}

// writeChoice writes c to path atomically: a temporary file in the same
// folder, synced, then renamed over path.
func writeChoice(path string, c *Choice) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".kernels-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// applyChoice makes c's float32 and bf16 kernels the current ones, with
// the figures as the reason Kernel() gives.
func applyChoice(c *Choice) {
	if o, ok := c.Contests[ContestF32]; ok {
		for _, k := range kernels() {
			if k.ok && k.kr.name == o.Chosen {
				chosen.Store(&kernelChoice{k.kr, c.Summary(ContestF32)})
			}
		}
	}
	if o, ok := c.Contests[ContestBF16]; ok && o.Chosen != "" {
		if impl, err := bf16ByName(o.Chosen); err == nil && impl != bf16GoImpl {
			bf16State.Store(&bf16Choice{impl, nil})
		}
	}
}
