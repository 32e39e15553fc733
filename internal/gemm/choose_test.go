package gemm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	// zen5 is an AMD EPYC Zen 5: AVX-512 with full-width units and
	// AVX512_BF16, no AMX; the kernel chosen without measuring is AVX2.
	zen5 = cpuProfile{id: "AuthenticAMD family 0x1a model 0x2 stepping 1",
		features: []string{"AVX2", "FMA", "F16C", "AVX-512F", "AVX512BW", "AVX512VL", "AVX512_BF16"},
		f32:      []string{"avx512", "avx2"}, f32Def: "avx2", bf16: []string{"avx512bf16"}}
	// avx2Only is a CPU without AVX-512.
	avx2Only = cpuProfile{id: "AuthenticAMD family 0x19 model 0x21 stepping 0",
		features: []string{"AVX2", "FMA", "F16C"}, f32: []string{"avx2"}, f32Def: "avx2"}
	// sapphire has AMX and AVX512_BF16.
	sapphire = cpuProfile{id: "GenuineIntel family 0x6 model 0x8f stepping 8",
		features: []string{"AVX2", "FMA", "F16C", "AVX-512F", "AVX512BW", "AVX512VL", "AVX512_BF16", "AMX-TILE", "AMX-BF16"},
		f32:      []string{"avx512", "avx2"}, f32Def: "avx512", bf16: []string{"amx", "avx512bf16"}}
)

// fakeTimes is a ChooseOptions.Time that never runs a trial: it returns
// ms milliseconds for each "contest/kernel" and counts the calls.
type fakeTimes struct {
	ms    map[string]float64
	calls int
}

func (f *fakeTimes) time(contest, kernel string, _ func()) time.Duration {
	f.calls++
	ms, ok := f.ms[contest+"/"+kernel]
	if !ok {
		panic("no timing for " + contest + "/" + kernel)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// chooseOn runs the chooser on profile p with fake timings.
func chooseOn(t *testing.T, p cpuProfile, f *fakeTimes, dir string) *Choice {
	t.Helper()
	day := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	c, err := choose(p, (&trials{}).contests(p), ChooseOptions{Dir: dir, Time: f.time, Now: func() time.Time { return day }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChooseByMeasurement: the kernels come out as the timings say, not
// as the vendor says (Zen 5's AVX-512 over the AVX2 default), an AVX2-only
// CPU keeps AVX2 and float32, and a CPU with AMX picks between AMX and
// VDPBF16PS by their times.
func TestChooseByMeasurement(t *testing.T) {
	for _, tc := range []struct {
		name            string
		p               cpuProfile
		ms              map[string]float64
		f32, bf16, prec string
	}{
		{"zen5", zen5, map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 22}, "avx512", "avx512bf16", "bf16"},
		{"zen5 bf16 slower", zen5, map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 50}, "avx512", "avx512bf16", "f32"},
		{"avx2 only", avx2Only, map[string]float64{}, "avx2", "", "f32"},
		{"sapphire amx", sapphire, map[string]float64{"f32/avx512": 20, "f32/avx2": 40, "bf16/amx": 5, "bf16/avx512bf16": 12}, "avx512", "amx", "bf16"},
		{"sapphire vdpbf16ps", sapphire, map[string]float64{"f32/avx512": 20, "f32/avx2": 40, "bf16/amx": 12, "bf16/avx512bf16": 5}, "avx512", "avx512bf16", "bf16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chooseOn(t, tc.p, &fakeTimes{ms: tc.ms}, "")
			if got := c.Contests[ContestF32].Chosen; got != tc.f32 {
				t.Errorf("float32 kernel %q, want %q (%+v)", got, tc.f32, c.Contests)
			}
			if got := c.Contests[ContestBF16].Chosen; got != tc.bf16 {
				t.Errorf("bf16 kernel %q, want %q", got, tc.bf16)
			}
			if got := c.Contests[ContestPrecision].Chosen; got != tc.prec || c.BF16Faster() != (tc.prec == "bf16") {
				t.Errorf("precision %q, BF16Faster %v, want %q", got, c.BF16Faster(), tc.prec)
			}
		})
	}
}

// TestChooseSummary: info's line names the choice, the date and the
// figures, fastest first.
func TestChooseSummary(t *testing.T) {
	c := chooseOn(t, zen5, &fakeTimes{ms: map[string]float64{"f32/avx512": 43.83, "f32/avx2": 75.235, "bf16/avx512bf16": 22}}, "")
	// 1.806 GFLOP a trial: 41.2 and 24 GFLOP/s.
	want := "avx512 (chosen by measurement 2026-12-02: avx512 41.2 GFLOP/s, avx2 24 GFLOP/s)"
	if got := c.Summary(ContestF32); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// TestChooseSummaryNoBF16: where the CPU has no bf16 kernel, the bf16
// contest has no summary, so that `bench model` prints no empty choice.
func TestChooseSummaryNoBF16(t *testing.T) {
	c := chooseOn(t, avx2Only, &fakeTimes{ms: map[string]float64{"f32/avx2": 75}}, "")
	if got := c.Summary(ContestBF16); got != "" {
		t.Errorf("bf16 Summary on an AVX2-only CPU = %q, want none", got)
	}
	if got := c.Summary(ContestF32); !strings.HasPrefix(got, "avx2 ") {
		t.Errorf("float32 Summary = %q, want the avx2 kernel", got)
	}
}

// TestChooseTieKeepsIncumbent: a kernel at most 5% faster than the
// incumbent does not replace it, for the float32 kernel and for the
// precision.
func TestChooseTieKeepsIncumbent(t *testing.T) {
	c := chooseOn(t, zen5, &fakeTimes{ms: map[string]float64{"f32/avx512": 70, "f32/avx2": 73, "bf16/avx512bf16": 71}}, "")
	if got := c.Contests[ContestF32].Chosen; got != "avx2" {
		t.Errorf("float32 kernel %q on a 4%% difference, want the incumbent avx2", got)
	}
	if c.BF16Faster() {
		t.Errorf("bf16 chosen on a tie: %+v", c.Contests[ContestPrecision])
	}
	if got := winner("b", map[string]float64{"a": 10, "b": 10}); got != "b" {
		t.Errorf("winner of an exact tie = %q, want the incumbent", got)
	}
}

// TestChooseCache: a second run on the same CPU reads the kept choice and
// measures nothing; a changed feature list, a corrupt file or another
// CPU's file are measured again.
func TestChooseCache(t *testing.T) {
	dir := t.TempDir()
	ms := map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 22}
	first := &fakeTimes{ms: ms}
	c := chooseOn(t, zen5, first, dir)
	if first.calls == 0 || c.Cached || c.Path == "" {
		t.Fatalf("first run: %d timings, cached %v, path %q", first.calls, c.Cached, c.Path)
	}
	if _, err := os.Stat(c.Path); err != nil {
		t.Fatalf("choice not kept: %v", err)
	}
	again := &fakeTimes{ms: ms}
	c2 := chooseOn(t, zen5, again, dir)
	if again.calls != 0 || !c2.Cached || c2.Contests[ContestF32].Chosen != "avx512" || !c2.BF16Faster() {
		t.Errorf("cache hit: %d timings, cached %v, %+v", again.calls, c2.Cached, c2.Contests)
	}

	kept, err := choose(zen5, (&trials{}).contests(zen5), ChooseOptions{Dir: dir, KeptOnly: true, Time: again.time})
	if err != nil || kept == nil || !kept.Cached || again.calls != 0 {
		t.Errorf("KeptOnly with a kept choice: %v, %+v, %d timings", err, kept, again.calls)
	}
	if none, err := choose(zen5, (&trials{}).contests(zen5), ChooseOptions{Dir: t.TempDir(), KeptOnly: true, Time: again.time}); none != nil || err != nil || again.calls != 0 {
		t.Errorf("KeptOnly without a kept choice: %+v, %v, %d timings", none, err, again.calls)
	}

	changed := zen5
	changed.features = append([]string{}, zen5.features[:len(zen5.features)-1]...)
	changed.bf16 = nil
	re := &fakeTimes{ms: ms}
	c3 := chooseOn(t, changed, re, dir)
	if re.calls == 0 || c3.Cached || c3.Path == c.Path {
		t.Errorf("changed feature list: %d timings, cached %v, path %q (was %q)", re.calls, c3.Cached, c3.Path, c.Path)
	}

	if err := os.WriteFile(c.Path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := &fakeTimes{ms: ms}
	if c4 := chooseOn(t, zen5, corrupt, dir); corrupt.calls == 0 || c4.Cached {
		t.Errorf("corrupt file: %d timings, cached %v", corrupt.calls, c4.Cached)
	}
	if c5 := chooseOn(t, zen5, &fakeTimes{ms: ms}, dir); !c5.Cached {
		t.Error("the corrupt file was not replaced by a good one")
	}

	// Another CPU's file under this CPU's name (a copied cache folder).
	other := chooseOn(t, avx2Only, &fakeTimes{}, t.TempDir())
	b, err := os.ReadFile(other.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := &fakeTimes{ms: ms}
	if c6 := chooseOn(t, zen5, foreign, dir); foreign.calls == 0 || c6.Cached || c6.Contests[ContestF32].Chosen != "avx512" {
		t.Errorf("foreign file: %d timings, cached %v, %+v", foreign.calls, c6.Cached, c6.Contests)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".kernels-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestChooseNotKept: a cache folder that cannot be written still gives a
// choice, with an error wrapping ErrChoiceNotKept.
func TestChooseNotKept(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTimes{ms: map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 22}}
	c, err := choose(zen5, (&trials{}).contests(zen5), ChooseOptions{Dir: filepath.Join(file, "sub"), Time: f.time})
	if !errors.Is(err, ErrChoiceNotKept) || c == nil || c.Contests[ContestF32].Chosen != "avx512" || c.Path != "" {
		t.Errorf("choose into an unwritable folder: %v, %+v", err, c)
	}
}

// TestChooseExtra: a caller's contest is measured in the same rounds and
// part of the key.
func TestChooseExtra(t *testing.T) {
	ex := Contest{Name: "search", Unit: "GB/s", Incumbent: "avx512", Entrants: []Entrant{{Name: "avx512", Work: 1}, {Name: "avx512bf16", Work: 1}}}
	f := &fakeTimes{ms: map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 22, "search/avx512": 10, "search/avx512bf16": 8}}
	c, err := choose(zen5, (&trials{}).contests(zen5), ChooseOptions{Time: f.time, Extra: []Contest{ex}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Contests["search"].Chosen; got != "avx512bf16" {
		t.Errorf("search kernel %q, want avx512bf16 (25%% faster)", got)
	}
	if !strings.Contains(c.Key, "search:avx512,avx512bf16") {
		t.Errorf("key %q does not name the extra contest's kernels", c.Key)
	}
}

// TestChooseRealTrials runs the real trials once on this CPU (a short
// measurement): every kernel it runs gets a positive figure and the
// choice applies.
func TestChooseRealTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("times the kernels")
	}
	oldK, oldB := chosen.Load(), bf16State.Load()
	defer func() { chosen.Store(oldK); bf16State.Store(oldB) }()
	c, err := Choose(ChooseOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := thisCPU()
	f32 := c.Contests[ContestF32]
	if len(p.f32) > 1 && len(f32.Figures) != len(p.f32) {
		t.Errorf("float32 figures %v for kernels %v", f32.Figures, p.f32)
	}
	if len(p.bf16) > 0 && len(c.Contests[ContestBF16].Figures) != len(p.bf16) {
		t.Errorf("bf16 figures %v for kernels %v", c.Contests[ContestBF16].Figures, p.bf16)
	}
	if k := currentKernel().kr.name; k != f32.Chosen {
		t.Errorf("current kernel %s, chosen %s", k, f32.Chosen)
	}
	t.Logf("%s in %.2f s; %s; bf16 %s; precision %s", p.id, c.Seconds, c.Summary(ContestF32), c.Summary(ContestBF16), c.Summary(ContestPrecision))
}

// TestChooseKeptPerThreads: a choice measured on two threads is not what a
// run on one thread reads (the kernels compete for the memory bandwidth on
// two, not on one); each count is measured once and kept beside the other.
func TestChooseKeptPerThreads(t *testing.T) {
	dir := t.TempDir()
	on := func(threads int, ms map[string]float64) (*Choice, int) {
		f := &fakeTimes{ms: ms}
		c, err := choose(zen5, (&trials{}).contests(zen5), ChooseOptions{Dir: dir, Threads: threads, Time: f.time})
		if err != nil {
			t.Fatal(err)
		}
		return c, f.calls
	}
	two, calls := on(2, map[string]float64{"f32/avx512": 42, "f32/avx2": 73, "bf16/avx512bf16": 22})
	if calls == 0 || two.Cached {
		t.Fatalf("first run on 2 threads: %d timings, cached %v", calls, two.Cached)
	}
	one, calls := on(1, map[string]float64{"f32/avx512": 80, "f32/avx2": 73, "bf16/avx512bf16": 90})
	if calls == 0 || one.Cached {
		t.Fatalf("1 thread read the choice of 2: %d timings, cached %v", calls, one.Cached)
	}
	if one.Path == two.Path || one.Contests[ContestF32].Chosen != "avx2" || one.BF16Faster() {
		t.Errorf("1 thread: path %q (2 threads: %q), %+v", one.Path, two.Path, one.Contests)
	}
	again, calls := on(2, nil)
	if calls != 0 || !again.Cached || again.Contests[ContestF32].Chosen != "avx512" || !again.BF16Faster() {
		t.Errorf("2 threads again: %d timings, cached %v, %+v", calls, again.Cached, again.Contests)
	}
}
