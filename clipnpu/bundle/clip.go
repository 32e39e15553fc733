package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// TokTest is a `tok_test <i> <escaped text>` record: a prompt and, in tensor
// IDs, the token ids Hugging Face's tokenizer gives it.
type TokTest struct {
	Index  int
	Text   string // unescaped
	IDs    string // tensor name tok.<i>.ids
	HasIDs bool   // whether that tensor is present
	Line   int
}

// RefSet is a reference set: `refset <j> images=<n> prompts=<m>` with its
// ref_image and ref_label records and the names of its tensors.
type RefSet struct {
	Index      int
	ImageFiles []string // bundle-relative, as written
	Images     []string // paths on disk, checked to stay inside the bundle
	Labels     []string // unescaped
	Line       int

	// Tensor names, "" when the bundle does not hold that tensor.
	PixelValues    string // f32 [images, 3, S, S]
	InputIDs       string // i32 [prompts, T]
	ImageEmbeds    string // f32 [images, D]
	TextEmbeds     string // f32 [prompts, D]
	Logits         string // f32 [images, prompts]
	NPUImageEmbeds string // f32 [images, D], the Python NPU app's output
	NPUTextEmbeds  string // f32 [prompts, D]
}

// GEMM is a `gemm <key> ctx=<xclbin-key> insts=<path> M= K= N= b_bytes=`
// record: one compiled flm.GEMM shape.
type GEMM struct {
	Key    string
	Ctx    string // xclbin key
	Insts  string // bundle-relative instruction stream
	M      int
	K      int
	N      int
	BBytes int // packed B size in bytes
	Rec    Record
}

// Op is an `op <key> xclbin=<path> insts=<path> name=<kernel>` record: a
// non-GEMM kernel (MHA, AddLN). It names an xclbin path, not a key.
type Op struct {
	Key    string
	Xclbin string // bundle-relative xclbin path
	Insts  string
	Name   string
	Rec    Record
}

// TokTests returns the tok_test records in index order.
func (b *Bundle) TokTests() []TokTest { return b.tokTests }

// GEMMs returns the gemm records in file order.
func (b *Bundle) GEMMs() []GEMM { return b.gemms }

// GEMM returns the gemm record with the given key.
func (b *Bundle) GEMM(key string) (GEMM, bool) {
	for _, g := range b.gemms {
		if g.Key == key {
			return g, true
		}
	}
	return GEMM{}, false
}

// Ops returns the op records in file order.
func (b *Bundle) Ops() []Op { return b.ops }

// Op returns the op record with the given key.
func (b *Bundle) Op(key string) (Op, bool) {
	for _, o := range b.ops {
		if o.Key == key {
			return o, true
		}
	}
	return Op{}, false
}

// RefSets returns the reference sets in index order. It fails when a
// reference image is missing.
func (b *Bundle) RefSets() ([]RefSet, error) {
	out := make([]RefSet, len(b.refSets))
	for j, rs := range b.refSets {
		rs.Images = make([]string, len(rs.ImageFiles))
		for i, rel := range rs.ImageFiles {
			p, err := b.Path(rel)
			if err != nil {
				return nil, fmt.Errorf("refset %d image %d: %w", rs.Index, i, err)
			}
			rs.Images[i] = p
		}
		out[j] = rs
	}
	return out, nil
}

// parseModelRecords checks the CLIP records Open knows.
func (b *Bundle) parseModelRecords(mpath string) error {
	type refAcc struct {
		set    RefSet
		images map[int]string
		labels map[int]string
		nImg   int
		nTxt   int
	}
	refs := map[int]*refAcc{}
	var pending []Record // ref_image/ref_label lines, checked once every refset is known
	seenTok := map[int]int{}
	seenKey := map[string]int{}
	for _, r := range b.m.records {
		bad := func(format string, a ...any) error {
			return &Error{File: mpath, Line: r.Line, Msg: r.Tag + ": " + fmt.Sprintf(format, a...)}
		}
		index := func(i int) (int, error) {
			if i >= len(r.Fields) {
				return 0, bad("missing field %d", i+1)
			}
			n, err := strconv.Atoi(r.Fields[i])
			if err != nil || n < 0 || n > 1<<20 {
				return 0, bad("field %d (%q) is not a small non-negative integer", i+1, r.Fields[i])
			}
			return n, nil
		}
		switch r.Tag {
		case "tok_test":
			i, err := index(0)
			if err != nil {
				return err
			}
			if first, dup := seenTok[i]; dup {
				return bad("index %d repeated (first on line %d)", i, first)
			}
			seenTok[i] = r.Line
			text, err := Unescape(r.Rest(1))
			if err != nil {
				return bad("%v", err)
			}
			b.tokTests = append(b.tokTests, TokTest{Index: i, Text: text, IDs: fmt.Sprintf("tok.%d.ids", i), Line: r.Line})
		case "refset":
			j, err := index(0)
			if err != nil {
				return err
			}
			if a, dup := refs[j]; dup {
				return bad("refset %d repeated (first on line %d)", j, a.set.Line)
			}
			a := &refAcc{set: RefSet{Index: j, Line: r.Line}, images: map[int]string{}, labels: map[int]string{}}
			for _, k := range []string{"images", "prompts"} {
				v, ok := r.Get(k)
				n, err := strconv.Atoi(v)
				if !ok || err != nil || n < 0 || n > 1<<20 {
					return bad("want %s=<count>", k)
				}
				if k == "images" {
					a.nImg = n
				} else {
					a.nTxt = n
				}
			}
			refs[j] = a
		case "ref_image", "ref_label":
			pending = append(pending, r)
		case "gemm", "op":
			if len(r.Fields) < 1 || r.Fields[0] == "" {
				return bad("missing key")
			}
			key := r.Fields[0]
			if first, dup := seenKey[key]; dup {
				return bad("kernel %s defined twice (first on line %d)", key, first)
			}
			seenKey[key] = r.Line
			str := func(k string) (string, error) {
				v, ok := r.Get(k)
				if !ok || v == "" {
					return "", bad("%s: missing %s=", key, k)
				}
				return v, nil
			}
			path := func(k string) (string, error) {
				v, err := str(k)
				if err != nil {
					return "", err
				}
				if err := checkRel(v); err != nil {
					return "", bad("%s: %s=%s: %v", key, k, v, err)
				}
				return v, nil
			}
			num := func(k string) (int, error) {
				v, err := str(k)
				if err != nil {
					return 0, err
				}
				n, err := strconv.Atoi(v)
				if err != nil || n <= 0 {
					return 0, bad("%s: %s=%s is not a positive integer", key, k, v)
				}
				return n, nil
			}
			if r.Tag == "op" {
				o := Op{Key: key, Rec: r}
				var err error
				if o.Xclbin, err = path("xclbin"); err != nil {
					return err
				}
				if o.Insts, err = path("insts"); err != nil {
					return err
				}
				if o.Name, err = str("name"); err != nil {
					return err
				}
				b.ops = append(b.ops, o)
				continue
			}
			g := GEMM{Key: key, Rec: r}
			var err error
			if g.Ctx, err = str("ctx"); err != nil {
				return err
			}
			if _, ok := b.Xclbin(g.Ctx); !ok {
				return bad("%s: ctx=%s names no xclbin record", key, g.Ctx)
			}
			if g.Insts, err = path("insts"); err != nil {
				return err
			}
			for _, f := range []struct {
				k string
				p *int
			}{{"M", &g.M}, {"K", &g.K}, {"N", &g.N}, {"b_bytes", &g.BBytes}} {
				if *f.p, err = num(f.k); err != nil {
					return err
				}
			}
			b.gemms = append(b.gemms, g)
		}
	}
	for _, r := range pending {
		bad := func(format string, a ...any) error {
			return &Error{File: mpath, Line: r.Line, Msg: r.Tag + ": " + fmt.Sprintf(format, a...)}
		}
		if len(r.Fields) < 3 {
			return bad("want `%s <set> <index> <text>`", r.Tag)
		}
		j, err1 := strconv.Atoi(r.Fields[0])
		i, err2 := strconv.Atoi(r.Fields[1])
		if err1 != nil || err2 != nil || j < 0 || i < 0 {
			return bad("set and index must be non-negative integers")
		}
		a, ok := refs[j]
		if !ok {
			return bad("refset %d is not declared by a refset record", j)
		}
		limit, m := a.nImg, a.images
		if r.Tag == "ref_label" {
			limit, m = a.nTxt, a.labels
		}
		if i >= limit {
			return bad("index %d out of range: refset %d has %d", i, j, limit)
		}
		if _, dup := m[i]; dup {
			return bad("refset %d index %d repeated", j, i)
		}
		if r.Tag == "ref_image" {
			rel := r.Rest(2)
			if err := checkRel(rel); err != nil {
				return bad("%s: %v", rel, err)
			}
			// A link that leaves the bundle is refused now; a missing file
			// only when the images are asked for (RefSets).
			if _, err := os.Lstat(filepath.Join(b.Dir, filepath.FromSlash(rel))); err == nil {
				if _, err := b.Path(rel); errors.Is(err, errEscape) {
					return bad("%s: %v", rel, errEscape)
				}
			}
			m[i] = rel
		} else {
			text, err := Unescape(r.Rest(2))
			if err != nil {
				return bad("%v", err)
			}
			m[i] = text
		}
	}
	keys := make([]int, 0, len(refs))
	for j := range refs {
		keys = append(keys, j)
	}
	sort.Ints(keys)
	for _, j := range keys {
		a := refs[j]
		for i := 0; i < a.nImg; i++ {
			if _, ok := a.images[i]; !ok {
				return &Error{File: mpath, Line: a.set.Line, Msg: fmt.Sprintf("refset %d: no ref_image %d %d record", j, j, i)}
			}
			a.set.ImageFiles = append(a.set.ImageFiles, a.images[i])
		}
		for i := 0; i < a.nTxt; i++ {
			if _, ok := a.labels[i]; !ok {
				return &Error{File: mpath, Line: a.set.Line, Msg: fmt.Sprintf("refset %d: no ref_label %d %d record", j, j, i)}
			}
			a.set.Labels = append(a.set.Labels, a.labels[i])
		}
		b.refSets = append(b.refSets, a.set)
	}
	sort.Slice(b.tokTests, func(x, y int) bool { return b.tokTests[x].Index < b.tokTests[y].Index })
	return nil
}

// checkTensorRefs fills in which reference tensors exist and checks their
// dtypes and leading dimensions against the records.
func (b *Bundle) checkTensorRefs() error {
	ipath := filepath.Join(b.Dir, IndexFile)
	check := func(name string, d Dtype, lead ...int) (string, error) {
		e, ok := b.tensors[name]
		if !ok {
			return "", nil
		}
		bad := &Error{File: ipath, Line: e.line, Msg: fmt.Sprintf("tensor %s is %s %v, wanted %s with leading dims %v", name, e.dtype, e.shape, d, lead)}
		if e.dtype != d || len(e.shape) < len(lead) {
			return "", bad
		}
		for i, n := range lead {
			if e.shape[i] != n {
				return "", bad
			}
		}
		return name, nil
	}
	for i := range b.tokTests {
		t := &b.tokTests[i]
		name, err := check(t.IDs, I32)
		if err != nil {
			return err
		}
		t.HasIDs = name != ""
	}
	for k := range b.refSets {
		rs := &b.refSets[k]
		n, m := len(rs.ImageFiles), len(rs.Labels)
		p := fmt.Sprintf("ref.%d.", rs.Index)
		var err error
		for _, c := range []struct {
			dst  *string
			name string
			d    Dtype
			lead []int
		}{
			{&rs.PixelValues, "pixel_values", F32, []int{n}},
			{&rs.InputIDs, "input_ids", I32, []int{m}},
			{&rs.ImageEmbeds, "image_embeds", F32, []int{n}},
			{&rs.TextEmbeds, "text_embeds", F32, []int{m}},
			{&rs.Logits, "logits", F32, []int{n, m}},
			{&rs.NPUImageEmbeds, "npu_image_embeds", F32, []int{n}},
			{&rs.NPUTextEmbeds, "npu_text_embeds", F32, []int{m}},
		} {
			if *c.dst, err = check(p+c.name, c.d, c.lead...); err != nil {
				return err
			}
		}
	}
	return nil
}
