package npu

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/clipnpu/xdna"
) // A small exporter, the counterpart of IRON's export_clip.py as far as
// taconite-clip's reader shows it: host tensors in float32, every layer's
// four GEMMs packed (LayerNorm affines folded into qkv and fc1, fc2's bias
// riding an extra fc1 column), the params and kernel records. The packed-B
// bias (float32 after the matrix) and the tiling fields are this project's
// assumptions (NPU.md); the xclbins it writes are placeholders, so its
// bundles run only on the emulated device. It exists for tests, the CLI's
// tests and benchmarks; no user-facing command calls it.

// exportShape is the pass geometry of an exported bundle.
type exportShape struct {
	vBatch, vM, vMHAExtra int // images a pass, GEMM M, MHA rows past the stride
	tBatch, tM            int
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// gemmTiles picks a packed-B tiling that splits K into two k blocks where
// it can, so the reorder is exercised beyond one block.
func gemmTiles(K, N int) packLayout {
	tileK := K
	if (K/2)%8 == 0 && K%2 == 0 {
		tileK = K / 2
	}
	ctK := 8
	if tileK%16 == 0 {
		ctK = 16
	}
	tileN := 16
	if N%16 != 0 {
		tileN = 8
	}
	return packLayout{K: K, N: N, tileK: tileK, tileN: tileN, ctK: ctK}
}

// matF32 returns an [rows, cols] matrix's values as float32.
func matF32(t *core.Tensor) []float32 {
	out := make([]float32, t.Rows*t.Cols)
	buf := make([]float32, t.Cols)
	for r := 0; r < t.Rows; r++ {
		copy(out[r*t.Cols:], t.RowInto(r, buf))
	}
	return out
}

// packGEMM packs B [K, N] and appends the float32 bias (if any).
func packGEMM(B []float32, bias []float32, l packLayout) ([]byte, error) {
	p, err := packB(B, l)
	if err != nil {
		return nil, err
	}
	for _, v := range bias {
		u := math.Float32bits(v)
		p = append(p, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return p, nil
}

// exportLayer folds and packs one layer's four GEMMs. H width, M MLP width,
// N1 fc1's padded N; act is the MLP activation.
func exportLayer(lw *core.LayerWeights, H, M, N1 int, act string) (qkv, o, fc1, fc2 []byte, err error) {
	Wq, Wk, Wv, Wo := matF32(&lw.Q), matF32(&lw.K), matF32(&lw.V), matF32(&lw.O)
	W1, W2 := matF32(&lw.FC1), matF32(&lw.FC2)

	// qkv: (γ1⊙h + β1)·Wᵀ + b = h·(W diag γ1)ᵀ + (W·β1 + b); B [H, 3H].
	B := make([]float32, H*3*H)
	bias := make([]float32, 3*H)
	for part, w := range [][]float32{Wq, Wk, Wv} {
		b0 := [][]float32{lw.QB, lw.KB, lw.VB}[part]
		for n := 0; n < H; n++ {
			s := float64(b0[n])
			for k := 0; k < H; k++ {
				B[k*3*H+part*H+n] = w[n*H+k] * lw.LN1W[k]
				s += float64(w[n*H+k]) * float64(lw.LN1B[k])
			}
			bias[part*H+n] = float32(s)
		}
	}
	if qkv, err = packGEMM(B, bias, gemmTiles(H, 3*H)); err != nil {
		return
	}

	B = make([]float32, H*H)
	for n := 0; n < H; n++ {
		for k := 0; k < H; k++ {
			B[k*H+n] = Wo[n*H+k]
		}
	}
	if o, err = packGEMM(B, lw.OB, gemmTiles(H, H)); err != nil {
		return
	}

	// fc1 with γ2/β2 folded; column M is the constant act(1) carrying
	// fc2's bias; columns past it are zero.
	B = make([]float32, H*N1)
	bias = make([]float32, N1)
	for n := 0; n < M; n++ {
		s := float64(lw.FC1B[n])
		for k := 0; k < H; k++ {
			B[k*N1+n] = W1[n*H+k] * lw.LN2W[k]
			s += float64(W1[n*H+k]) * float64(lw.LN2B[k])
		}
		bias[n] = float32(s)
	}
	bias[M] = 1
	if fc1, err = packGEMM(B, bias, gemmTiles(H, N1)); err != nil {
		return
	}
	one := []float32{1}
	core.Activate(one, act)
	g := core.BF16ToF32(core.F32ToBF16(one[0])) // what fc1 stores in column M

	B = make([]float32, N1*H)
	for n := 0; n < H; n++ {
		for k := 0; k < M; k++ {
			B[k*H+n] = W2[n*M+k]
		}
		B[M*H+n] = lw.FC2B[n] / g
	}
	fc2, err = packGEMM(B, nil, gemmTiles(N1, H))
	return
}

// bundleExtra is what an export carries over besides the model: params
// that replace the exporter's own of the same name, manifest records as
// written, and tensors copied as they are.
type bundleExtra struct {
	params  map[string]string
	lines   []string
	tensors []bundle.Tensor
}

// exportBundle writes m (both towers) as a CLIP bundle into dir, with
// extra's records and tensors (extra may be nil).
func exportBundle(m *core.Model, dir string, sh exportShape, extra *bundleExtra) error {
	if extra == nil {
		extra = &bundleExtra{}
	}
	cfg := m.Cfg
	v, tc := cfg.Vision, cfg.Text
	w := bundle.NewWriter()
	vTok := v.Tokens()
	vStride := roundUp(vTok, 8)
	vMHA := vStride + sh.vMHAExtra
	vRows := roundUp((sh.vBatch-1)*vStride+vMHA, sh.vM)
	tSeq := roundUp(tc.Context, 8)
	tRows := roundUp(sh.tBatch*tSeq, sh.tM)
	eosArgmax := 0
	if tc.EOS == 2 {
		eosArgmax = 1
	}
	for _, p := range []struct {
		k string
		v any
	}{
		{"v_layers", v.Layers}, {"v_dim", v.Hidden}, {"v_tokens", vTok}, {"v_stride", vStride}, {"v_batch", sh.vBatch},
		{"v_rows", vRows}, {"v_mha_rows", vMHA}, {"v_eps", v.LayerNormEps}, {"v_heads", v.Heads},
		{"patch", v.Patch}, {"image_size", v.ImageSize},
		{"t_layers", tc.Layers}, {"t_dim", tc.Hidden}, {"t_batch", sh.tBatch}, {"t_seq_pad", tSeq}, {"t_rows", tRows},
		{"t_eps", tc.LayerNormEps}, {"t_heads", tc.Heads}, {"context", tc.Context},
		{"embed_dim", cfg.ProjectionDim}, {"logit_scale", m.LogitScale}, {"eos_argmax", eosArgmax},
		{"bos", 49406}, {"eos", tc.EOS}, {"pad", tc.EOS}, {"prompt_template", "a photo of a {}"},
	} {
		if _, ok := extra.params[p.k]; !ok {
			w.Param(p.k, p.v)
		}
	}
	for _, k := range sortedKeys(extra.params) {
		w.Param(k, extra.params[k])
	}
	for _, l := range extra.lines {
		w.Line(l)
	}
	if err := os.MkdirAll(filepath.Join(dir, "kernels"), 0o755); err != nil {
		return err
	}
	file := func(rel string, data []byte) error { return os.WriteFile(filepath.Join(dir, rel), data, 0o644) }
	insts := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	var uuid [16]byte
	if err := file("kernels/gemm.xclbin", xdna.BuildXclbin(uuid, 2048, 8, []byte("gemm pdi"))); err != nil {
		return err
	}
	w.Line("xclbin", "gemm", "kernels/gemm.xclbin", "MLIR_AIE")

	towers := []struct {
		p            string
		H, M, layers int
		act          string
		rows, gm     int
		lws          []core.LayerWeights
	}{
		{"v", v.Hidden, v.MLP, v.Layers, v.Act, vRows, sh.vM, m.Vision.Layers},
		{"t", tc.Hidden, tc.MLP, tc.Layers, tc.Act, tRows, sh.tM, m.Text.Layers},
	}
	for _, tw := range towers {
		N1 := roundUp(tw.M+1, 16)
		for _, g := range []struct {
			name string
			K, N int
			bias bool
			act  string
		}{{"qkv", tw.H, 3 * tw.H, true, ""}, {"o", tw.H, tw.H, true, ""}, {"fc1", tw.H, N1, true, tw.act}, {"fc2", N1, tw.H, false, ""}} {
			l := gemmTiles(g.K, g.N)
			bb := l.bytes()
			if g.bias {
				bb += 4 * g.N
			}
			key := tw.p + "_" + g.name
			rec := []string{"gemm", key, "ctx=gemm", "insts=kernels/" + key + ".insts.bin",
				fmt.Sprint("M=", tw.gm), fmt.Sprint("K=", g.K), fmt.Sprint("N=", g.N), fmt.Sprint("b_bytes=", bb),
				fmt.Sprint("tile_k=", l.tileK), fmt.Sprint("tile_n=", l.tileN), fmt.Sprint("ct_k=", l.ctK)}
			if g.act != "" {
				rec = append(rec, "act="+g.act)
			}
			w.Line(rec...)
			if err := file("kernels/"+key+".insts.bin", insts); err != nil {
				return err
			}
		}
		for _, op := range []string{"mha", "addln"} {
			key := tw.p + "_" + op
			if err := file("kernels/"+key+".xclbin", xdna.BuildXclbin(uuid, 2048, 8, []byte(key))); err != nil {
				return err
			}
			if err := file("kernels/"+key+".insts.bin", insts); err != nil {
				return err
			}
			w.Line("op", key, "xclbin=kernels/"+key+".xclbin", "insts=kernels/"+key+".insts.bin", "name=MLIR_AIE")
		}
		for l := range tw.lws {
			qkv, o, fc1, fc2, err := exportLayer(&tw.lws[l], tw.H, tw.M, N1, tw.act)
			if err != nil {
				return fmt.Errorf("%s layer %d: %w", tw.p, l, err)
			}
			for j, data := range [][]byte{qkv, o, fc1, fc2} {
				w.Raw(fmt.Sprintf("%s.%d.%s", tw.p, l, []string{"qkv", "o", "fc1", "fc2"}[j]), bundle.U8, []int{len(data)}, data)
			}
		}
	}
	vw, tw := m.Vision, m.Text
	w.F32("v.patch_w", []int{v.Hidden, 3 * v.Patch * v.Patch}, matF32(&vw.Patch))
	w.F32("v.cls", []int{v.Hidden}, vw.Cls)
	w.F32("v.pos", []int{vTok, v.Hidden}, vw.Pos)
	w.F32("v.ln_pre.w", []int{v.Hidden}, vw.PreW)
	w.F32("v.ln_pre.b", []int{v.Hidden}, vw.PreB)
	w.F32("v.ln_post.w", []int{v.Hidden}, vw.PostW)
	w.F32("v.ln_post.b", []int{v.Hidden}, vw.PostB)
	w.F32("v.proj", []int{cfg.ProjectionDim, v.Hidden}, matF32(&vw.Proj))
	w.F32("t.tok_emb", []int{tc.Vocab, tc.Hidden}, matF32(&tw.Tok))
	w.F32("t.pos", []int{tc.Context, tc.Hidden}, tw.Pos)
	w.F32("t.ln_final.w", []int{tc.Hidden}, tw.FinalW)
	w.F32("t.ln_final.b", []int{tc.Hidden}, tw.FinalB)
	w.F32("t.proj", []int{cfg.ProjectionDim, tc.Hidden}, matF32(&tw.Proj))
	for _, t := range extra.tensors {
		w.Raw(t.Name, t.Dtype, t.Shape, t.Bytes())
	}
	return w.Write(dir)
}

// carriedFiles are the files beside a model that a bundle keeps when
// present: the tokenizer's and the image preprocessing's.
var carriedFiles = []string{"vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json", "preprocessor_config.json"}

// carriedTags are the manifest records of the reference sets.
var carriedTags = map[string]bool{"tok_test": true, "refset": true, "ref_image": true, "ref_label": true}

// ExportTinyBundle exports the Hugging Face model in src as a bundle in dst
// (an existing folder) with 4 images and 8 prompts a pass, for tests and
// experiments: its format follows this project's unconfirmed assumptions
// (NPU.md) and its xclbins are placeholders, so only the emulated device
// runs it (DeviceEmulatedNPU). When src also carries bundle-form reference
// records, as the test fixtures do (a manifest.txt with tok_test, refset,
// ref_image and ref_label records, their tensors in tensors.bin), those
// records, tensors, params and reference images are carried over, with the
// tokenizer and preprocessing files, so `clipidx check dst` runs end to end.
func ExportTinyBundle(src, dst string) error {
	m, err := hf.LoadModel(src, core.BothTowers, hf.KeepStored, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	var extra *bundleExtra
	var files []string
	if bundle.HasManifest(src) {
		rb, err := bundle.Open(src)
		if err != nil {
			return fmt.Errorf("reference records of %s: %w", src, err)
		}
		defer rb.Close()
		if extra, files, err = referenceRecords(rb); err != nil {
			return fmt.Errorf("reference records of %s: %w", src, err)
		}
	}
	files = append(files, carriedFiles...)
	if err := exportBundle(m, dst, exportShape{vBatch: 4, vM: 64, vMHAExtra: 8, tBatch: 8, tM: 64}, extra); err != nil {
		return err
	}
	for _, rel := range files {
		if err := copyInto(src, dst, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// referenceRecords collects rb's params, reference-set records and their
// tensors, and the bundle-relative files the records name.
func referenceRecords(rb *bundle.Bundle) (*bundleExtra, []string, error) {
	ex := &bundleExtra{params: map[string]string{}}
	for _, name := range rb.ParamNames() {
		v, _ := rb.Param(name)
		ex.params[name] = v
	}
	for _, r := range rb.Records() {
		if carriedTags[r.Tag] {
			ex.lines = append(ex.lines, r.Text)
		}
	}
	for _, name := range rb.TensorNames() {
		if strings.HasPrefix(name, "tok.") || strings.HasPrefix(name, "ref.") {
			t, err := rb.Tensor(name)
			if err != nil {
				return nil, nil, err
			}
			ex.tensors = append(ex.tensors, t)
		}
	}
	sets, err := rb.RefSets()
	if err != nil {
		return nil, nil, err
	}
	var files []string
	for _, rs := range sets {
		files = append(files, rs.ImageFiles...)
	}
	return ex, files, nil
}

// copyInto copies src/rel to dst/rel, making folders as needed.
func copyInto(src, dst, rel string) error {
	data, err := os.ReadFile(filepath.Join(src, rel))
	if err != nil {
		return err
	}
	p := filepath.Join(dst, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
