package gemm

// trials runs the chooser's products: the shapes of trialShapes, random
// weights made (and packed) on first use, on a pool of its own.
type trials struct {
	threads int
	pool    *Pool
	x, y    []float32
	raw     []*Matrix                  // per shape, float32 as stored
	packed  map[*microKernel][]*Matrix // per kernel that reads packed weights
	bf16    []*PackedBF16
}

// thisCPU is the profile of the processor Choose runs on.
func thisCPU() cpuProfile {
	p := cpuProfile{id: cpuID(), features: Features(), f32Def: defaultKernel().kr.name}
	for _, k := range kernels() {
		if k.ok && (k.kr != goKernel || len(p.f32) == 0) {
			p.f32 = append(p.f32, k.kr.name)
		}
	}
	for _, name := range []string{"amx", "avx512bf16"} {
		if _, err := bf16ByName(name); err == nil {
			p.bf16 = append(p.bf16, name)
		}
	}
	return p
}

// trialGFLOP is the work of one trial, in GFLOP.
func trialGFLOP() float64 {
	var f float64
	for _, s := range trialShapes {
		f += 2 * float64(s.m*s.k*s.n)
	}
	return f / 1e9
}

// contests are the float32 and bf16 contests of profile p, run on t.
func (t *trials) contests(p cpuProfile) []Contest {
	f32 := Contest{Name: ContestF32, Unit: "GFLOP/s", Incumbent: p.f32Def}
	for _, name := range p.f32 {
		f32.Entrants = append(f32.Entrants, Entrant{Name: name, Work: trialGFLOP(), Run: func() { t.runF32(name) }})
	}
	bf16 := Contest{Name: ContestBF16, Unit: "GFLOP/s"}
	for _, name := range p.bf16 {
		if bf16.Incumbent == "" {
			bf16.Incumbent = name // AMX where it runs, as before measuring
		}
		bf16.Entrants = append(bf16.Entrants, Entrant{Name: name, Work: trialGFLOP(), Run: func() { t.runBF16(name) }})
	}
	return []Contest{f32, bf16}
}

// setup makes the pool, the activations and the weights.
func (t *trials) setup() {
	if t.pool != nil {
		return
	}
	t.pool = NewPool(t.threads)
	var mx, my int
	seed := uint32(1)
	for _, s := range trialShapes {
		mx, my = max(mx, s.m*s.k), max(my, s.m*s.n)
		w := &Matrix{Rows: s.n, Cols: s.k, F32: make([]float32, s.n*s.k)}
		for i := range w.F32 {
			seed = seed*1664525 + 1013904223
			w.F32[i] = float32(int32(seed)>>8) * 0x1p-30 // about ±1/64, like trained weights
		}
		t.raw = append(t.raw, w)
	}
	t.x, t.y = make([]float32, mx), make([]float32, my)
	for i := range t.x {
		seed = seed*1664525 + 1013904223
		t.x[i] = float32(int32(seed)>>8) * 0x1p-23
	}
	t.packed = map[*microKernel][]*Matrix{}
}

// runF32 runs the trial products on the named float32 kernel, on weights
// packed for it where the model packs them (PackPays).
func (t *trials) runF32(name string) {
	t.setup()
	var kr *microKernel
	for _, k := range kernels() {
		if k.ok && k.kr.name == name {
			kr = k.kr
		}
	}
	if kr == nil {
		return
	}
	old := chosen.Load()
	defer chosen.Store(old)
	chosen.Store(&kernelChoice{kr, "being measured"})
	ws := t.raw
	if kr.packPays {
		if t.packed[kr] == nil {
			for _, w := range t.raw {
				pw := &Matrix{Rows: w.Rows, Cols: w.Cols, F32: w.F32}
				t.pool.Pack(pw)
				t.packed[kr] = append(t.packed[kr], pw)
			}
		}
		ws = t.packed[kr]
	}
	for i, s := range trialShapes {
		t.pool.Linear(t.y[:s.m*s.n], t.x[:s.m*s.k], s.m, ws[i], nil)
	}
}

// runBF16 runs the trial products on the named bf16 kernel.
func (t *trials) runBF16(name string) {
	t.setup()
	impl, err := bf16ByName(name)
	if err != nil {
		return
	}
	if t.bf16 == nil {
		for _, w := range t.raw {
			p, err := PackBF16(w)
			if err != nil {
				return
			}
			t.bf16 = append(t.bf16, p)
		}
	}
	old := bf16State.Load()
	defer bf16State.Store(old)
	bf16State.Store(&bf16Choice{impl, nil})
	for i, s := range trialShapes {
		t.pool.LinearBF16(t.y[:s.m*s.n], t.x[:s.m*s.k], s.m, t.bf16[i], nil)
	}
}

func (t *trials) close() {
	if t.pool != nil {
		t.pool.Close()
	}
}
