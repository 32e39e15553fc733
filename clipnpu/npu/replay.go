package npu

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/internal/gemm"
) // The NPU replay: a taconite CLIP bundle (IRON's clip_vit_h14 export) run
// kernel for kernel as taconite-clip does it (Brishen/taconite
// taconite-clip/src/lib.rs, read not copied). The host does, in float32,
// the patch embedding, class and position embeddings, the pre-LayerNorm,
// the post-LayerNorm and the projections (vision), and token + position
// embedding, the final LayerNorm at the end token and the projection
// (text); the device runs every transformer layer (npu_tower.go).
//
// Legend: clipnpu/core's (n, S, P, G, Tok, H, D, T), plus the bundle's
// st v_stride (rows between images) and sp t_seq_pad (rows between
// prompts).

// npuConfig is the bundle's param records.
type npuConfig struct {
	vLayers, vDim, vTokens, vStride, vBatch, vRows, vMHARows, vHeads int
	patch, imageSize                                                 int
	vEps                                                             float32
	tLayers, tDim, tBatch, tSeqPad, tRows, tHeads, context           int
	tEps                                                             float32
	embedDim                                                         int
	logitScale                                                       float32
	eosArgmax                                                        bool
	eos                                                              int32
	promptTemplate                                                   string
}

func readNPUConfig(b *bundle.Bundle, towers core.Towers) (npuConfig, error) {
	var c npuConfig
	var firstErr error
	i := func(name string, dst *int) {
		v, err := b.ParamInt(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		*dst = v
	}
	f := func(name string, dst *float32) {
		v, err := b.ParamFloat(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		*dst = float32(v)
	}
	opt := func(name string, dst *int, def int) {
		*dst = def
		if _, ok := b.Param(name); ok {
			i(name, dst)
		}
	}
	i("embed_dim", &c.embedDim)
	f("logit_scale", &c.logitScale)
	if towers.Image() {
		i("v_layers", &c.vLayers)
		i("v_dim", &c.vDim)
		i("v_tokens", &c.vTokens)
		i("v_stride", &c.vStride)
		i("v_batch", &c.vBatch)
		i("v_rows", &c.vRows)
		i("v_mha_rows", &c.vMHARows)
		i("patch", &c.patch)
		i("image_size", &c.imageSize)
		f("v_eps", &c.vEps)
		opt("v_heads", &c.vHeads, 16) // ViT-H/14; only the emulator reads it
	} else {
		opt("image_size", &c.imageSize, 0)
	}
	if towers.Text() {
		i("t_layers", &c.tLayers)
		i("t_dim", &c.tDim)
		i("t_batch", &c.tBatch)
		i("t_seq_pad", &c.tSeqPad)
		i("t_rows", &c.tRows)
		i("context", &c.context)
		f("t_eps", &c.tEps)
		opt("t_heads", &c.tHeads, 16)
		var argmax, eos int
		opt("eos_argmax", &argmax, 0)
		opt("eos", &eos, 49407)
		c.eosArgmax, c.eos = argmax != 0, int32(eos)
	} else {
		opt("context", &c.context, 77)
	}
	c.promptTemplate = core.DefaultPromptTemplate
	if v, ok := b.Param("prompt_template"); ok {
		c.promptTemplate = v
	}
	if firstErr != nil {
		return c, firstErr
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", filepath.Join(b.Dir, bundle.ManifestFile), fmt.Sprintf(format, a...))
	}
	if c.embedDim <= 0 {
		return c, bad("embed_dim %d", c.embedDim)
	}
	if towers.Image() {
		switch {
		case c.vLayers <= 0 || c.vDim <= 0 || c.vBatch <= 0 || c.patch <= 0 || c.imageSize%max(c.patch, 1) != 0:
			return c, bad("vision params v_layers=%d v_dim=%d v_batch=%d patch=%d image_size=%d", c.vLayers, c.vDim, c.vBatch, c.patch, c.imageSize)
		case c.vTokens != (c.imageSize/c.patch)*(c.imageSize/c.patch)+1:
			return c, bad("v_tokens=%d, but image_size %d / patch %d gives %d", c.vTokens, c.imageSize, c.patch, (c.imageSize/c.patch)*(c.imageSize/c.patch)+1)
		case c.vStride < c.vTokens || c.vMHARows < c.vTokens:
			return c, bad("v_stride=%d and v_mha_rows=%d must hold v_tokens=%d", c.vStride, c.vMHARows, c.vTokens)
		case c.vRows < (c.vBatch-1)*c.vStride+max(c.vMHARows, c.vStride):
			return c, bad("v_rows=%d is too small for %d images %d rows apart", c.vRows, c.vBatch, c.vStride)
		case c.vHeads <= 0 || c.vDim%c.vHeads != 0:
			return c, bad("v_heads=%d does not divide v_dim=%d", c.vHeads, c.vDim)
		}
	}
	if towers.Text() {
		switch {
		case c.tLayers <= 0 || c.tDim <= 0 || c.tBatch <= 0 || c.context <= 0:
			return c, bad("text params t_layers=%d t_dim=%d t_batch=%d context=%d", c.tLayers, c.tDim, c.tBatch, c.context)
		case c.tSeqPad < c.context || c.tRows < c.tBatch*c.tSeqPad:
			return c, bad("t_seq_pad=%d and t_rows=%d cannot hold %d prompts of %d tokens", c.tSeqPad, c.tRows, c.tBatch, c.context)
		case c.tHeads <= 0 || c.tDim%c.tHeads != 0:
			return c, bad("t_heads=%d does not divide t_dim=%d", c.tHeads, c.tDim)
		}
	}
	return c, nil
}

// gemmSpec reads gemm record key.
func gemmSpec(b *bundle.Bundle, key string) (kernelSpec, error) {
	g, ok := b.GEMM(key)
	if !ok {
		return kernelSpec{}, fmt.Errorf("no `gemm %s` record in %s", key, filepath.Join(b.Dir, bundle.ManifestFile))
	}
	x, _ := b.Xclbin(g.Ctx) // the reader checked that it exists
	s := kernelSpec{Key: key, Kind: kindGEMM, Xclbin: x.File, Insts: g.Insts, Name: x.Kernel,
		M: g.M, K: g.K, N: g.N, BBytes: g.BBytes}
	if v, ok := g.Rec.Get("act"); ok {
		s.Act = v
	} else if len(key) > 4 && key[len(key)-4:] == "_fc1" {
		s.Act = "gelu"
	}
	// The packed-B tiling. The CLIP records do not carry it (SAM3's do);
	// the defaults are flm.GEMM's on NPU2 and matter only to the emulator.
	num := func(k string, def int) int {
		if v, ok := g.Rec.Get(k); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return def
	}
	tileN := 64
	if g.K == 512 {
		tileN = 128
	}
	s.Layout = packLayout{K: g.K, N: g.N, tileK: num("tile_k", min(512, g.K)), tileN: num("tile_n", tileN)}
	ctDef := 64
	if s.Layout.tileN == 128 {
		ctDef = 32
	}
	s.Layout.ctK = num("ct_k", ctDef)
	s.Bias = g.BBytes == s.Layout.bytes()+4*g.N
	return s, nil
}

// opSpec reads op record key.
func opSpec(b *bundle.Bundle, key string, kind kernelKind) (kernelSpec, error) {
	o, ok := b.Op(key)
	if !ok {
		return kernelSpec{}, fmt.Errorf("no `op %s` record in %s", key, filepath.Join(b.Dir, bundle.ManifestFile))
	}
	return kernelSpec{Key: key, Kind: kind, Xclbin: o.Xclbin, Insts: o.Insts, Name: o.Name}, nil
}

// loadTowerKernels reads the six kernels of tower p and loads them.
func loadTowerKernels(dev npuDevice, b *bundle.Bundle, p string, dim, heads int, eps float32, mha func(*kernelSpec)) (towerSpecs, error) {
	var ts towerSpecs
	var err error
	for _, g := range []struct {
		dst *kernelSpec
		key string
	}{{&ts.qkv, p + "_qkv"}, {&ts.o, p + "_o"}, {&ts.fc1, p + "_fc1"}, {&ts.fc2, p + "_fc2"}} {
		if *g.dst, err = gemmSpec(b, g.key); err != nil {
			return ts, err
		}
	}
	if ts.mha, err = opSpec(b, p+"_mha", kindMHA); err != nil {
		return ts, err
	}
	ts.mha.Heads, ts.mha.Dim = heads, dim
	mha(&ts.mha)
	if ts.addln, err = opSpec(b, p+"_addln", kindAddLN); err != nil {
		return ts, err
	}
	ts.addln.Dim, ts.addln.Eps = dim, eps
	ts.kernels = map[string]npuKernel{}
	for _, s := range []kernelSpec{ts.qkv, ts.o, ts.fc1, ts.fc2, ts.mha, ts.addln} {
		k, err := dev.LoadKernel(b, s)
		if err != nil {
			return ts, fmt.Errorf("load kernel %s: %w", s.Key, err)
		}
		ts.kernels[s.Key] = k
	}
	return ts, nil
}

// npuBackend is the NPU replay behind the Backend interface.
type npuBackend struct {
	b       *bundle.Bundle
	dev     npuDevice
	cfg     npuConfig
	threads int
	pool    *gemm.Pool // host GEMMs (the patch embedding)
	info    core.Info

	vision *npuTower
	patchW core.Tensor // v.patch_w [H, 3·P·P]
	cls    []float32   // v.cls [H]
	vpos   []float32   // v.pos [Tok, H]
	preW   []float32   // v.ln_pre.{w,b} [H]
	preB   []float32
	postW  []float32 // v.ln_post.{w,b} [H]
	postB  []float32
	vproj  core.Tensor // v.proj [D, H]

	text   *npuTower
	tokEmb bundle.Tensor // t.tok_emb [vocab, H], rows read on demand
	vocab  int
	tpos   []float32 // t.pos [T, H]
	finalW []float32 // t.ln_final.{w,b} [H]
	finalB []float32
	tproj  core.Tensor // t.proj [D, H]
}

// OpenBundle opens the bundle in dir on dev. On error dev is closed.
func OpenBundle(dir string, opts core.Options, dev npuDevice) (_ core.Backend, err error) {
	nb := &npuBackend{dev: dev, threads: opts.Threads}
	defer func() {
		if err != nil {
			nb.Close()
		}
	}()
	if nb.threads <= 0 {
		nb.threads = runtime.GOMAXPROCS(0)
	}
	nb.pool = gemm.NewPool(nb.threads)
	nb.b, err = bundle.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
	}
	b := nb.b
	if nb.cfg, err = readNPUConfig(b, opts.Towers); err != nil {
		return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
	}
	c := nb.cfg
	f32 := func(name string, n int) ([]float32, error) {
		t, err := b.Tensor(name)
		if err != nil {
			return nil, err
		}
		if t.Len() != n {
			return nil, fmt.Errorf("%w: tensor %s has %d values, want %d", bundle.ErrBadBundle, name, t.Len(), n)
		}
		return t.F32()
	}
	mat := func(name string, rows, cols int) (core.Tensor, error) {
		v, err := f32(name, rows*cols)
		return core.Tensor{Name: name, Rows: rows, Cols: cols, Dtype: core.F32, F32: v}, err
	}
	weights := func(p string) func(l int, name string) ([]byte, error) {
		return func(l int, name string) ([]byte, error) {
			t, err := b.Tensor(fmt.Sprintf("%s.%d.%s", p, l, name))
			if err != nil {
				return nil, err
			}
			return t.U8()
		}
	}
	if opts.Towers.Image() {
		H, K := c.vDim, 3*c.patch*c.patch
		for _, l := range []struct {
			dst  *[]float32
			name string
			n    int
		}{{&nb.cls, "v.cls", H}, {&nb.vpos, "v.pos", c.vTokens * H}, {&nb.preW, "v.ln_pre.w", H}, {&nb.preB, "v.ln_pre.b", H},
			{&nb.postW, "v.ln_post.w", H}, {&nb.postB, "v.ln_post.b", H}} {
			if *l.dst, err = f32(l.name, l.n); err != nil {
				return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
			}
		}
		if nb.patchW, err = mat("v.patch_w", H, K); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
		}
		if nb.vproj, err = mat("v.proj", c.embedDim, H); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
		}
		ts, err := loadTowerKernels(dev, b, "v", H, c.vHeads, c.vEps, func(s *kernelSpec) { s.ValidKeys = c.vTokens })
		if err != nil {
			return nil, err
		}
		// One MHA dispatch per image, spanning v_mha_rows: padded rows run
		// into the next image's and are rewritten by its later dispatch.
		var spans []mhaSpan
		for im := 0; im < c.vBatch; im++ {
			spans = append(spans, mhaSpan{im * c.vStride, c.vMHARows})
		}
		if nb.vision, err = newTower(dev, ts, "v", c.vLayers, H, c.vRows, c.vEps, spans, weights("v")); err != nil {
			return nil, err
		}
	}
	if opts.Towers.Text() {
		H := c.tDim
		if nb.tokEmb, err = b.Tensor("t.tok_emb"); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
		}
		if len(nb.tokEmb.Shape) != 2 || nb.tokEmb.Shape[1] != H || nb.tokEmb.Dtype != bundle.F32 {
			return nil, fmt.Errorf("%w: tensor t.tok_emb is %s %v, want f32 [vocab, %d]", core.ErrBadModel, nb.tokEmb.Dtype, nb.tokEmb.Shape, H)
		}
		nb.vocab = nb.tokEmb.Shape[0]
		for _, l := range []struct {
			dst  *[]float32
			name string
			n    int
		}{{&nb.tpos, "t.pos", c.context * H}, {&nb.finalW, "t.ln_final.w", H}, {&nb.finalB, "t.ln_final.b", H}} {
			if *l.dst, err = f32(l.name, l.n); err != nil {
				return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
			}
		}
		if nb.tproj, err = mat("t.proj", c.embedDim, H); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrBadModel, err)
		}
		ts, err := loadTowerKernels(dev, b, "t", H, c.tHeads, c.tEps, func(s *kernelSpec) { s.Seq, s.Causal = c.tSeqPad, true })
		if err != nil {
			return nil, err
		}
		// One causal dispatch over every prompt.
		spans := []mhaSpan{{0, c.tBatch * c.tSeqPad}}
		if nb.text, err = newTower(dev, ts, "t", c.tLayers, H, c.tRows, c.tEps, spans, weights("t")); err != nil {
			return nil, err
		}
	}
	device, note := dev.Describe()
	nb.info = core.Info{
		Name: bundleName(b), WeightsHash: bundleHash(b), Device: device, DeviceNote: note,
		Dim: c.embedDim, ImageSize: c.imageSize, Context: c.context, LogitScale: c.logitScale,
		PromptTemplate: c.promptTemplate, ImageBatch: c.vBatch, TextBatch: c.tBatch,
	}
	return nb, nil
}

// bundleName is the bundle's model name param, else its folder name.
func bundleName(b *bundle.Bundle) string {
	for _, k := range []string{"model", "name"} {
		if v, ok := b.Param(k); ok && v != "" {
			return v
		}
	}
	abs, err := filepath.Abs(b.Dir)
	if err != nil {
		return filepath.Base(b.Dir)
	}
	return filepath.Base(abs)
}

// bundleHash digests manifest.txt, tensors.txt, the blob's size and the
// same samples of every tensor's data as weightsHash takes of a safetensors
// file: cheap, changed by any re-export, and by other weights of the same
// shapes.
func bundleHash(b *bundle.Bundle) string {
	h := sha256.New()
	for _, f := range []string{bundle.ManifestFile, bundle.IndexFile} {
		data, err := os.ReadFile(filepath.Join(b.Dir, f))
		if err != nil {
			return ""
		}
		h.Write(data)
	}
	st, err := os.Stat(filepath.Join(b.Dir, bundle.BlobFile))
	if err != nil {
		return ""
	}
	fmt.Fprintf(h, "blob %d", st.Size())
	for _, name := range b.TensorNames() {
		t, err := b.Tensor(name)
		if err != nil {
			return ""
		}
		hf.HashTensor(h, t.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (nb *npuBackend) Info() core.Info { return nb.info }

// Close releases the device, then the bundle mapping.
func (nb *npuBackend) Close() error {
	var errs []error
	if nb.dev != nil {
		errs = append(errs, nb.dev.Close())
		nb.dev = nil
	}
	if nb.b != nil {
		errs = append(errs, nb.b.Close())
		nb.b = nil
	}
	if nb.pool != nil {
		nb.pool.Close()
		nb.pool = nil
	}
	nb.vision, nb.text = nil, nil
	return errors.Join(errs...)
}

// EncodeImages embeds pixels [n, 3, S, S] → [n, D], v_batch images a pass;
// a short last pass is padded with zero rows.
func (nb *npuBackend) EncodeImages(pixels []float32, n int) ([]float32, error) {
	if nb.vision == nil {
		return nil, fmt.Errorf("encode images: %w (loaded with the text tower only)", core.ErrNoTower)
	}
	c := nb.cfg
	S, H, D := c.imageSize, c.vDim, c.embedDim
	per := 3 * S * S
	if err := core.CheckBatch(len(pixels), n, per, "pixel values"); err != nil {
		return nil, err
	}
	out := make([]float32, 0, n*D)
	for i0 := 0; i0 < n; i0 += c.vBatch {
		ng := min(n-i0, c.vBatch)
		x := nb.visionInput(pixels[i0*per:(i0+ng)*per], ng)
		y, err := nb.vision.run(x, nb.threads)
		if err != nil {
			return nil, fmt.Errorf("clipnpu: %w", err)
		}
		pooled := make([]float32, H)
		e := make([]float32, D)
		for im := 0; im < ng; im++ {
			r := im * c.vStride
			core.LayerNorm(pooled, y[r*H:(r+1)*H], 1, H, nb.postW, nb.postB, c.vEps)
			core.Linear(e, pooled, 1, &nb.vproj, nil, 1)
			out = append(out, e...)
		}
	}
	return out, nil
}

// visionInput is the host side of an image pass: px [ng, 3, S, S] →
// x [v_rows, H], image im's tokens at rows [im·st, im·st + Tok) as
// pre-LayerNorm(CLS or patch embedding + position), every other row zero.
func (nb *npuBackend) visionInput(px []float32, ng int) []float32 {
	c := nb.cfg
	S, P, H := c.imageSize, c.patch, c.vDim
	G := S / P
	// Patch embedding in float32 (the conv as a GEMM): [ng·G·G, H].
	patches := patchRows(px, ng, S, P)
	emb := make([]float32, ng*G*G*H)
	w := gemm.Matrix{Rows: H, Cols: 3 * P * P, Dtype: gemm.F32, F32: nb.patchW.F32}
	nb.pool.Linear(emb, patches, ng*G*G, &w, nil)
	x := make([]float32, c.vRows*H)
	core.Parallel(ng*c.vTokens, nb.threads, func(lo, hi int) {
		tmp := make([]float32, H)
		for r := lo; r < hi; r++ {
			im, tok := r/c.vTokens, r%c.vTokens
			src := nb.cls
			if tok > 0 {
				src = emb[(im*G*G+tok-1)*H : (im*G*G+tok)*H]
			}
			for j := 0; j < H; j++ {
				tmp[j] = src[j] + nb.vpos[tok*H+j]
			}
			row := im*c.vStride + tok
			core.LayerNorm(x[row*H:(row+1)*H], tmp, 1, H, nb.preW, nb.preB, c.vEps)
		}
	})
	return x
}

// EncodeTexts embeds ids [n, T] → [n, D], t_batch prompts a pass.
func (nb *npuBackend) EncodeTexts(ids []int32, n int) ([]float32, error) {
	if nb.text == nil {
		return nil, fmt.Errorf("encode texts: %w (loaded with the image tower only)", core.ErrNoTower)
	}
	c := nb.cfg
	T, H, D, sp := c.context, c.tDim, c.embedDim, c.tSeqPad
	if err := core.CheckBatch(len(ids), n, T, "token ids"); err != nil {
		return nil, err
	}
	if err := core.CheckIDs(ids, nb.vocab); err != nil {
		return nil, err
	}
	out := make([]float32, 0, n*D)
	row := make([]float32, H)
	for p0 := 0; p0 < n; p0 += c.tBatch {
		ng := min(n-p0, c.tBatch)
		// Prompt p's tokens at rows [p·sp, p·sp + T): token + position.
		x := make([]float32, c.tRows*H)
		for p := 0; p < ng; p++ {
			for s := 0; s < T; s++ {
				if err := nb.tokEmb.F32Row(int(ids[(p0+p)*T+s]), H, row); err != nil {
					return nil, fmt.Errorf("clipnpu: %w", err)
				}
				dst := x[(p*sp+s)*H : (p*sp+s+1)*H]
				for j := range dst {
					dst[j] = row[j] + nb.tpos[s*H+j]
				}
			}
		}
		y, err := nb.text.run(x, nb.threads)
		if err != nil {
			return nil, fmt.Errorf("clipnpu: %w", err)
		}
		pooled := make([]float32, H)
		e := make([]float32, D)
		for p := 0; p < ng; p++ {
			seq := ids[(p0+p)*T : (p0+p+1)*T]
			end := firstIndex(seq, c.eos)
			if c.eosArgmax {
				end = argmaxFirst(seq)
			}
			r := p*sp + end
			core.LayerNorm(pooled, y[r*H:(r+1)*H], 1, H, nb.finalW, nb.finalB, c.tEps)
			core.Linear(e, pooled, 1, &nb.tproj, nil, 1)
			out = append(out, e...)
		}
	}
	return out, nil
}

// firstIndex is the first position holding v, or 0.
func firstIndex(s []int32, v int32) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return 0
}

// argmaxFirst is the first position of the largest value.
func argmaxFirst(s []int32) int {
	best := 0
	for i, x := range s {
		if x > s[best] {
			best = i
		}
	}
	return best
}
