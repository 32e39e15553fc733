package hf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sync"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// RandomDtype validates a random model's config and parses its dtype
// ("" means f32).
func RandomDtype(cfg core.Config, dt string) (core.Dtype, error) {
	if err := cfg.Validate(); err != nil {
		return 0, fmt.Errorf("clipnpu: random model: %w", err)
	}
	switch dt {
	case "f32", "":
		return core.F32, nil
	case "f16":
		return core.F16, nil
	case "bf16":
		return core.BF16, nil
	}
	return 0, fmt.Errorf("clipnpu: random model: dtype %q (want f32, f16 or bf16)", dt)
}

// RandomModel allocates and fills the weights.
func RandomModel(cfg core.Config, seed uint64, d core.Dtype, towers core.Towers, threads int) *core.Model {
	m, g := plannedRandomModel(cfg, seed, d, towers)
	g.fill(threads)
	return m
}

// plannedRandomModel allocates the weights and lists the jobs that fill
// them, without running any: large slices are fresh from the system, so
// memory no job has touched is not resident yet (WriteRandom fills and
// writes one tensor at a time).
func plannedRandomModel(cfg core.Config, seed uint64, d core.Dtype, towers core.Towers) (*core.Model, *randGen) {
	g := &randGen{seed: seed, dtype: d}
	m := &core.Model{Cfg: cfg, LogitScale: 100, Dtype: d}
	sum := sha256.Sum256(fmt.Appendf(nil, "random %+v seed=%d dtype=%s", cfg, seed, d))
	m.Hash = hex.EncodeToString(sum[:])

	if towers.Image() {
		v := cfg.Vision
		H, P := v.Hidden, v.Patch
		m.Vision = &core.VisionWeights{
			Patch:  g.mat("patch", H, 3*P*P),
			Cls:    g.vec("cls", H, 0, 0.02),
			Pos:    g.vec("vpos", v.Tokens()*H, 0, 0.02),
			PreW:   g.vec("prew", H, 1, 0.1),
			PreB:   g.vec("preb", H, 0, 0.02),
			Layers: g.layers("v", v.Layers, H, v.MLP),
			PostW:  g.vec("postw", H, 1, 0.1),
			PostB:  g.vec("postb", H, 0, 0.02),
			Proj:   g.mat("vproj", cfg.ProjectionDim, H),
		}
	}
	if towers.Text() {
		t := cfg.Text
		H := t.Hidden
		m.Text = &core.TextWeights{
			Tok:    g.matScaled("tok", t.Vocab, H, 0.02),
			Pos:    g.vec("tpos", t.Context*H, 0, 0.01),
			Layers: g.layers("t", t.Layers, H, t.MLP),
			FinalW: g.vec("finw", H, 1, 0.1),
			FinalB: g.vec("finb", H, 0, 0.02),
			Proj:   g.mat("tproj", cfg.ProjectionDim, H),
		}
	}
	return m, g
}

// randGen collects the tensors to fill, then fills them in parallel. Each
// chunk of each tensor has its own stream, seeded by (seed, tensor, chunk),
// so the values do not depend on the thread count.
type randGen struct {
	seed  uint64
	dtype core.Dtype
	jobs  []randJob
}

type randJob struct {
	f32         []float32
	u16         []uint16
	dtype       core.Dtype
	center, amp float32 // values are center + amp·u, u uniform in [-1, 1)
	id          uint64
}

const randChunk = 1 << 18

func (g *randGen) add(j randJob) {
	j.id = uint64(len(g.jobs))
	g.jobs = append(g.jobs, j)
}

// vec is a float32 vector of n values center ± amp.
func (g *randGen) vec(name string, n int, center, amp float32) []float32 {
	v := make([]float32, n)
	g.add(randJob{f32: v, dtype: core.F32, center: center, amp: amp})
	return v
}

// mat is a weight [rows, cols] with std ≈ 1/sqrt(cols) (uniform: amp √3·std).
func (g *randGen) mat(name string, rows, cols int) core.Tensor {
	return g.matScaled(name, rows, cols, float32(1/math.Sqrt(float64(cols))))
}

func (g *randGen) matScaled(name string, rows, cols int, std float32) core.Tensor {
	t := core.Tensor{Name: name, Rows: rows, Cols: cols, Dtype: g.dtype}
	j := randJob{dtype: g.dtype, amp: std * float32(math.Sqrt(3))}
	if g.dtype == core.F32 {
		t.F32 = make([]float32, rows*cols)
		j.f32 = t.F32
	} else {
		t.U16 = make([]uint16, rows*cols)
		j.u16 = t.U16
	}
	g.add(j)
	return t
}

func (g *randGen) layers(prefix string, n, H, M int) []core.LayerWeights {
	ls := make([]core.LayerWeights, n)
	for i := range ls {
		ls[i] = core.LayerWeights{
			LN1W: g.vec("ln1w", H, 1, 0.1), LN1B: g.vec("ln1b", H, 0, 0.02),
			Q: g.mat("q", H, H), QB: g.vec("qb", H, 0, 0.02),
			K: g.mat("k", H, H), KB: g.vec("kb", H, 0, 0.02),
			V: g.mat("v", H, H), VB: g.vec("vb", H, 0, 0.02),
			O: g.mat("o", H, H), OB: g.vec("ob", H, 0, 0.02),
			LN2W: g.vec("ln2w", H, 1, 0.1), LN2B: g.vec("ln2b", H, 0, 0.02),
			FC1: g.mat("fc1", M, H), FC1B: g.vec("fc1b", M, 0, 0.02),
			FC2: g.mat("fc2", H, M), FC2B: g.vec("fc2b", H, 0, 0.02),
		}
	}
	return ls
}

// fill runs every chunk of every job on threads goroutines.
func (g *randGen) fill(threads int) { g.fillJobs(threads, g.jobs) }

// fillJobs runs every chunk of the given jobs (elements of g.jobs) on
// threads goroutines.
func (g *randGen) fillJobs(threads int, jobs []randJob) {
	type chunk struct {
		job    *randJob
		lo, hi int
		index  uint64
	}
	work := make(chan chunk, 64)
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.job.fillRange(c.lo, c.hi, splitmix(g.seed^splitmix(c.job.id<<32|c.index)))
			}
		}()
	}
	for i := range jobs {
		j := &jobs[i]
		n := len(j.f32) + len(j.u16)
		for lo, idx := 0, uint64(0); lo < n; lo, idx = lo+randChunk, idx+1 {
			work <- chunk{job: j, lo: lo, hi: min(lo+randChunk, n), index: idx}
		}
	}
	close(work)
	wg.Wait()
}

// fillRange fills elements [lo, hi) from an xorshift64 stream: values
// center + amp·u with u uniform in [-1, 1), rounded to the job's dtype.
func (j *randJob) fillRange(lo, hi int, state uint64) {
	if state == 0 {
		state = 0x9e3779b97f4a7c15
	}
	next := func() float32 {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		return j.center + j.amp*float32(int32(state>>32))*(1.0/(1<<31))
	}
	switch j.dtype {
	case core.F32:
		for i := range j.f32[lo:hi] {
			j.f32[lo+i] = next()
		}
	case core.F16:
		for i := range j.u16[lo:hi] {
			j.u16[lo+i] = core.F32ToF16(next())
		}
	default:
		for i := range j.u16[lo:hi] {
			j.u16[lo+i] = core.F32ToBF16(next())
		}
	}
}

// splitmix is SplitMix64's output function, used to derive stream seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
