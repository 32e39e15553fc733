package clipnpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// NewRandom builds a model of cfg's shape with seeded random weights held in
// memory (for `clipidx bench model --random` and tests): matrices uniform
// with the scale of 1/sqrt(fan-in), embeddings ±0.02-ish, LayerNorm weights
// near 1, small biases, logit scale 100. dtype is "f32", "f16" or "bf16"
// (the matrices' storage). Only opts.Towers' towers are allocated. The same
// seed and config give the same weights on any machine and thread count.
func NewRandom(cfg Config, seed uint64, dt string, opts Options) (Backend, error) {
	if opts.Weights != "" && opts.Weights != "stored" {
		return nil, fmt.Errorf("clipnpu: random model: Options.Weights %q: the dtype argument chooses the storage", opts.Weights)
	}
	d, err := randomDtype(cfg, dt)
	if err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference":
	case "npu":
		return nil, fmt.Errorf("random weights run on the CPU only: %w", ErrNoDevice)
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	m := randomModel(cfg, seed, d, opts.Towers, threads)
	return cpuBackend(m, opts)
}

// randomDtype validates a random model's config and parses its dtype
// ("" means f32).
func randomDtype(cfg Config, dt string) (dtype, error) {
	if err := cfg.Validate(); err != nil {
		return 0, fmt.Errorf("clipnpu: random model: %w", err)
	}
	switch dt {
	case "f32", "":
		return dtF32, nil
	case "f16":
		return dtF16, nil
	case "bf16":
		return dtBF16, nil
	}
	return 0, fmt.Errorf("clipnpu: random model: dtype %q (want f32, f16 or bf16)", dt)
}

// randomModel allocates and fills the weights.
func randomModel(cfg Config, seed uint64, d dtype, towers Towers, threads int) *model {
	m, g := plannedRandomModel(cfg, seed, d, towers)
	g.fill(threads)
	return m
}

// plannedRandomModel allocates the weights and lists the jobs that fill
// them, without running any: large slices are fresh from the system, so
// memory no job has touched is not resident yet (WriteRandom fills and
// writes one tensor at a time).
func plannedRandomModel(cfg Config, seed uint64, d dtype, towers Towers) (*model, *randGen) {
	g := &randGen{seed: seed, dtype: d}
	m := &model{cfg: cfg, logitScale: 100, dtype: d}
	sum := sha256.Sum256(fmt.Appendf(nil, "random %+v seed=%d dtype=%s", cfg, seed, d))
	m.hash = hex.EncodeToString(sum[:])

	if towers.image() {
		v := cfg.Vision
		H, P := v.Hidden, v.Patch
		m.vision = &visionWeights{
			patch:  g.mat("patch", H, 3*P*P),
			cls:    g.vec("cls", H, 0, 0.02),
			pos:    g.vec("vpos", v.Tokens()*H, 0, 0.02),
			preW:   g.vec("prew", H, 1, 0.1),
			preB:   g.vec("preb", H, 0, 0.02),
			layers: g.layers("v", v.Layers, H, v.MLP),
			postW:  g.vec("postw", H, 1, 0.1),
			postB:  g.vec("postb", H, 0, 0.02),
			proj:   g.mat("vproj", cfg.ProjectionDim, H),
		}
	}
	if towers.text() {
		t := cfg.Text
		H := t.Hidden
		m.text = &textWeights{
			tok:    g.matScaled("tok", t.Vocab, H, 0.02),
			pos:    g.vec("tpos", t.Context*H, 0, 0.01),
			layers: g.layers("t", t.Layers, H, t.MLP),
			finalW: g.vec("finw", H, 1, 0.1),
			finalB: g.vec("finb", H, 0, 0.02),
			proj:   g.mat("tproj", cfg.ProjectionDim, H),
		}
	}
	return m, g
}

// randGen collects the tensors to fill, then fills them in parallel. Each
// chunk of each tensor has its own stream, seeded by (seed, tensor, chunk),
// so the values do not depend on the thread count.
type randGen struct {
	seed  uint64
	dtype dtype
	jobs  []randJob
}

type randJob struct {
	f32         []float32
	u16         []uint16
	dtype       dtype
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
	g.add(randJob{f32: v, dtype: dtF32, center: center, amp: amp})
	return v
}

// mat is a weight [rows, cols] with std ≈ 1/sqrt(cols) (uniform: amp √3·std).
func (g *randGen) mat(name string, rows, cols int) tensor {
	return g.matScaled(name, rows, cols, float32(1/math.Sqrt(float64(cols))))
}

func (g *randGen) matScaled(name string, rows, cols int, std float32) tensor {
	t := tensor{name: name, rows: rows, cols: cols, dtype: g.dtype}
	j := randJob{dtype: g.dtype, amp: std * float32(math.Sqrt(3))}
	if g.dtype == dtF32 {
		t.f32 = make([]float32, rows*cols)
		j.f32 = t.f32
	} else {
		t.u16 = make([]uint16, rows*cols)
		j.u16 = t.u16
	}
	g.add(j)
	return t
}

func (g *randGen) layers(prefix string, n, H, M int) []layerWeights {
	ls := make([]layerWeights, n)
	for i := range ls {
		ls[i] = layerWeights{
			ln1W: g.vec("ln1w", H, 1, 0.1), ln1B: g.vec("ln1b", H, 0, 0.02),
			q: g.mat("q", H, H), qB: g.vec("qb", H, 0, 0.02),
			k: g.mat("k", H, H), kB: g.vec("kb", H, 0, 0.02),
			v: g.mat("v", H, H), vB: g.vec("vb", H, 0, 0.02),
			o: g.mat("o", H, H), oB: g.vec("ob", H, 0, 0.02),
			ln2W: g.vec("ln2w", H, 1, 0.1), ln2B: g.vec("ln2b", H, 0, 0.02),
			fc1: g.mat("fc1", M, H), fc1B: g.vec("fc1b", M, 0, 0.02),
			fc2: g.mat("fc2", H, M), fc2B: g.vec("fc2b", H, 0, 0.02),
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
	case dtF32:
		for i := range j.f32[lo:hi] {
			j.f32[lo+i] = next()
		}
	case dtF16:
		for i := range j.u16[lo:hi] {
			j.u16[lo+i] = f32ToF16(next())
		}
	default:
		for i := range j.u16[lo:hi] {
			j.u16[lo+i] = f32ToBF16(next())
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
