package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

const testDim = 16

var testID = store.Identity{Model: "fake", WeightsHash: "abc", Dim: testDim, Preprocess: "p1"}

func randVec(r *rand.Rand) []float32 {
	v := make([]float32, testDim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// fixture writes an index holding plain files, webdataset samples with
// captions, JSON and caption vectors, two files with the same bytes and
// two failures. It returns the index path and the indexed paths in order.
func fixture(t *testing.T, seed uint64) (string, []string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "ix.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := rand.New(rand.NewPCG(seed, 1))
	var b store.Batch
	var paths []string
	put := func(p, content string) {
		h := store.Hash(sha256.Sum256([]byte(content)))
		b.Put(p, store.File{Size: int64(len(content)), MtimeNs: 1700000000123456789 + int64(len(paths)), Hash: h}, randVec(r))
		paths = append(paths, p)
	}
	for i := range 9 {
		p := fmt.Sprintf("/photos/a/%03d.jpg", i)
		put(p, fmt.Sprintf("photo %d", i))
		if i%4 != 3 { // photo metadata on most, not all
			m := store.Meta{Taken: 1561984496 + int64(i)*86400, TakenSource: store.TakenEXIF, Make: "PENTAX", Model: "PENTAX K-1", Width: 7360, Height: 4912}
			if i%2 == 0 {
				m.HasGPS, m.Lat, m.Lon, m.City, m.Region, m.Country, m.CountryCode = true, 45.9237, 6.8694+float64(i), "Chamonix-Mont-Blanc", "Auvergne-Rhône-Alpes", "France", "FR"
				m.HasOffset, m.Offset = true, 120
			}
			b.PutMeta(p, m)
		}
	}
	put("/photos/b/copy.jpg", "photo 3")   // same bytes as 003.jpg: its own row, the same vector
	for _, at := range []float64{0, 2.5} { // a video's frames, each a row
		put(store.FramePath("/videos/clip.mp4", at), fmt.Sprintf("frame %g", at))
	}
	b.Put("/photos/b/broken.jpg", store.File{Size: 3, Err: "decode: bad"}, nil)
	for i := range 12 {
		p := fmt.Sprintf("/data/00000.tar#%09d", i)
		put(p, fmt.Sprintf("sample %d", i))
		js := fmt.Sprintf(`{"url": "http://x/%d.jpg", "key": "%09d", "width": %d, "height": 200, "caption": "from json", "status": "success", "score": %s, "exif": %s, "ok": %v}`,
			i, i, 100+i, map[bool]string{true: "1", false: "0.5"}[i%2 == 0], map[bool]string{true: `{"Make": "X"}`, false: "null"}[i == 3], i%3 == 0)
		smp := store.Sample{Caption: fmt.Sprintf("a photo of thing %d ✓", i), JSON: []byte(js)}
		if i != 5 {
			smp.Text = randVec(r)
		}
		b.PutSample(p, smp)
	}
	b.Put("/data/00000.tar#000000099", store.File{Size: 3, Err: "no image member"}, nil)
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	return db, paths
}

// view runs fn on a snapshot of the index at db.
func view(t *testing.T, db string, fn func(s *store.Snapshot) error) {
	t.Helper()
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.View(fn); err != nil {
		t.Fatal(err)
	}
}

// need skips (or under CI=true fails) when an independent reader is
// missing.
func need(t *testing.T, what, hint string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %s", what, hint)
	}
	t.Skipf("%s not available (%s); skipping", what, hint)
}

// python returns a Python with the given modules (Debian's first: the
// packages python3-numpy, python3-faiss live there).
func python(t *testing.T, modules string) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import "+modules).Run() == nil {
			return py
		}
	}
	need(t, "python3 with "+modules, "apt-get install python3-numpy python3-faiss", false)
	return ""
}

func runPy(t *testing.T, py, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

func TestF16Table(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{6.103515625e-05, 0x0400},                      // smallest normal
		{5.960464477539063e-08, 0x0001},                // smallest subnormal
		{2.9802322387695312e-08, 0x0000},               // half of it: a tie, to even (zero)
		{2.9802326e-08, 0x0001},                        // just above the tie
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, // ties to even
		{float32(math.NaN()), 0x7e00},
	} {
		if got := f16(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

// TestF16Numpy compares f16 with numpy's astype(float16) on every
// exponent, random mantissas and the rounding boundaries.
func TestF16Numpy(t *testing.T) {
	py := python(t, "numpy")
	r := rand.New(rand.NewPCG(3, 4))
	var bits []uint32
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 0x1000, 0x0fff, 0x1001, 0x3000, 0x7fffff, 0x7ff000} {
			bits = append(bits, e<<23|m, 1<<31|e<<23|m)
		}
		for range 200 {
			bits = append(bits, r.Uint32()&^(0xff<<23)|e<<23)
		}
	}
	in := make([]byte, 4*len(bits))
	for i, b := range bits {
		in[4*i], in[4*i+1], in[4*i+2], in[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	path := filepath.Join(t.TempDir(), "f32.bin")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPy(t, py, `import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype='<f4')
sys.stdout.buffer.write(a.astype('<f2').tobytes())`, path)
	if len(out) != 2*len(bits) {
		t.Fatalf("numpy returned %d bytes for %d values", len(out), len(bits))
	}
	bad := 0
	for i, b := range bits {
		want := uint16(out[2*i]) | uint16(out[2*i+1])<<8
		got := f16(math.Float32frombits(b))
		if want&0x7c00 == 0x7c00 && want&0x3ff != 0 && got&0x7c00 == 0x7c00 && got&0x3ff != 0 {
			continue // NaN payloads may differ
		}
		if got != want && bad < 10 {
			bad++
			t.Errorf("f16(%#08x = %g) = %#04x, numpy %#04x", b, math.Float32frombits(b), got, want)
		}
	}
}

// npyRead loads .npy files with numpy and prints their dtype, shape, norms
// and values as float32 (JSON).
const npyRead = `import sys, json, numpy as np
out = []
for p in sys.argv[1:]:
    a = np.load(p)
    out.append({"dtype": a.dtype.str, "shape": list(a.shape), "norms": np.linalg.norm(a.astype(np.float64), axis=1).tolist(), "values": a.astype(np.float32).tolist()})
print(json.dumps(out))`

type npyOut struct {
	DType  string      `json:"dtype"`
	Shape  []int       `json:"shape"`
	Norms  []float64   `json:"norms"`
	Values [][]float32 `json:"values"`
}

func TestClipRetrievalReadBack(t *testing.T) {
	py := python(t, "numpy")
	db, paths := fixture(t, 1)
	out := filepath.Join(t.TempDir(), "emb")
	var res *Result
	vecs := map[string][]float32{}
	texts := map[string][]float32{}
	view(t, db, func(s *store.Snapshot) error {
		var err error
		res, err = ClipRetrieval(context.Background(), s, out, Options{RowsPerPartition: 7})
		for _, p := range paths {
			f, _, _ := s.File(p)
			vecs[p] = s.Vector(f.Vec)
			if smp, ok, _ := s.Sample(p); ok {
				texts[p] = smp.Text
			}
		}
		return err
	})
	n := len(paths) // 22 rows: partitions of 7, 7, 7, 1
	if res.Rows != n || res.Partitions != 4 || res.TextRows != 11 {
		t.Fatalf("result %+v, want %d rows in 4 partitions, 11 text rows", res, n)
	}
	var imgs, txts, metas []string
	for p := range 4 {
		imgs = append(imgs, filepath.Join(out, "img_emb", fmt.Sprintf("img_emb_%d.npy", p)))
		txts = append(txts, filepath.Join(out, "text_emb", fmt.Sprintf("text_emb_%d.npy", p)))
		metas = append(metas, filepath.Join(out, "metadata", fmt.Sprintf("metadata_%d.parquet", p)))
	}
	check := func(files []string, want map[string][]float32) {
		var got []npyOut
		if err := json.Unmarshal(runPy(t, py, npyRead, files...), &got); err != nil {
			t.Fatal(err)
		}
		row := 0
		for i, a := range got {
			if a.DType != "<f2" || len(a.Shape) != 2 || a.Shape[1] != testDim || a.Shape[0] != min(7, n-7*i) {
				t.Errorf("%s: dtype %s shape %v", files[i], a.DType, a.Shape)
			}
			for j, v := range a.Values {
				p := paths[row]
				w := want[p]
				if w == nil {
					w = make([]float32, testDim) // a file without a caption: a zero row
				} else if math.Abs(a.Norms[j]-1) > 2e-3 {
					t.Errorf("%s row %d (%s): norm %g", files[i], j, p, a.Norms[j])
				}
				for k := range v {
					if d := math.Abs(float64(v[k] - w[k])); d > 1.0/1024 {
						t.Errorf("%s row %d (%s) [%d] = %g, want %g: wrong row order?", files[i], j, p, k, v[k], w[k])
						break
					}
				}
				row++
			}
		}
		if row != n {
			t.Errorf("numpy read %d rows, want %d", row, n)
		}
	}
	check(imgs, vecs)
	check(txts, texts)
	checkMetadata(t, db, metas, paths)
}

// hyparquet runs the independent Parquet reader under testdata.
func hyparquet(t *testing.T, file string) (cols []map[string]any, rows []map[string]any) {
	t.Helper()
	_, err := exec.LookPath("node")
	_, merr := os.Stat(filepath.Join("testdata", "node_modules", "hyparquet"))
	need(t, "node with hyparquet", "apt-get install nodejs npm; npm ci --prefix internal/export/testdata", err == nil && merr == nil)
	cmd := exec.Command("node", filepath.Join("testdata", "readparquet.mjs"), file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hyparquet %s: %v\n%s", file, err, stderr.String())
	}
	var v struct {
		Columns []map[string]any `json:"columns"`
		Rows    []map[string]any `json:"rows"`
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Columns, v.Rows
}

func checkMetadata(t *testing.T, db string, metas, paths []string) {
	var rows []map[string]any
	for _, m := range metas {
		cols, r := hyparquet(t, m)
		types := map[string]string{}
		for _, c := range cols {
			types[c["name"].(string)] = fmt.Sprint(c["type"], "/", c["logical"])
		}
		for name, want := range map[string]string{"taken": "BYTE_ARRAY/STRING", "gps_latitude": "DOUBLE/<nil>", "pixel_width": "INT64/INTEGER", "city": "BYTE_ARRAY/STRING",
			"image_path": "BYTE_ARRAY/STRING", "caption": "BYTE_ARRAY/STRING", "sha256": "BYTE_ARRAY/STRING",
			"mtime": "INT64/TIMESTAMP", "url": "BYTE_ARRAY/STRING", "width": "INT64/INTEGER", "score": "DOUBLE/<nil>", "ok": "BOOLEAN/<nil>", "exif": "BYTE_ARRAY/STRING",
			"video_path": "BYTE_ARRAY/STRING", "video_time": "DOUBLE/<nil>"} {
			if types[name] != want {
				t.Errorf("%s: column %s is %s, want %s", m, name, types[name], want)
			}
		}
		rows = append(rows, r...)
	}
	if len(rows) != len(paths) {
		t.Fatalf("metadata has %d rows, want %d", len(rows), len(paths))
	}
	view(t, db, func(s *store.Snapshot) error {
		for i, p := range paths {
			r := rows[i]
			f, _, _ := s.File(p)
			if r["image_path"] != p || r["sha256"] != hex.EncodeToString(f.Hash[:]) || fmt.Sprint(r["mtime"]) != fmt.Sprint(f.MtimeNs) {
				t.Errorf("row %d = %v, want %s with its hash and mtime %d", i, r, p, f.MtimeNs)
			}
			checkPhotoColumns(t, i, p, r, s)
			if video, at, ok := store.SplitFrame(p); ok {
				if r["video_path"] != video || fmt.Sprint(r["video_time"]) != store.FrameTime(at) {
					t.Errorf("row %d (%s, a frame): video_path %v video_time %v, want %s and %s", i, p, r["video_path"], r["video_time"], video, store.FrameTime(at))
				}
			} else if r["video_path"] != nil || r["video_time"] != nil {
				t.Errorf("row %d (%s): video_path %v video_time %v, want null", i, p, r["video_path"], r["video_time"])
			}
			smp, ok, _ := s.Sample(p)
			if !ok {
				if r["caption"] != nil || r["url"] != nil {
					t.Errorf("row %d (%s, a plain file): caption %v url %v, want null", i, p, r["caption"], r["url"])
				}
				continue
			}
			k := strings.TrimPrefix(p, "/data/00000.tar#")
			var n int
			fmt.Sscanf(k, "%d", &n)
			want := map[string]string{"caption": smp.Caption, "url": "http://x/" + fmt.Sprint(n) + ".jpg", "key": k,
				"width": fmt.Sprint(100 + n), "height": "200", "status": "success", "ok": fmt.Sprint(n%3 == 0)}
			for col, w := range want {
				if fmt.Sprint(r[col]) != w {
					t.Errorf("row %d (%s): %s = %v, want %s", i, p, col, r[col], w)
				}
			}
			if s := fmt.Sprint(r["score"]); n%2 == 0 && s != "1" || n%2 == 1 && s != "0.5" {
				t.Errorf("row %d: score %s", i, s)
			}
			if n == 3 && r["exif"] != `{"Make":"X"}` || n != 3 && r["exif"] != nil {
				t.Errorf("row %d: exif %v", i, r["exif"])
			}
		}
		return nil
	})
}

// TestF32Export checks the '<f4' files hold the index's vectors bit for bit.
func TestF32Export(t *testing.T) {
	db, paths := fixture(t, 2)
	out := filepath.Join(t.TempDir(), "emb")
	view(t, db, func(s *store.Snapshot) error {
		res, err := ClipRetrieval(context.Background(), s, out, Options{DType: "f32"})
		if err != nil {
			return err
		}
		if res.Partitions != 1 {
			t.Errorf("%d partitions, want 1", res.Partitions)
		}
		b, err := os.ReadFile(filepath.Join(out, "img_emb", "img_emb_0.npy"))
		if err != nil {
			return err
		}
		info, err := readNPYHeader(bytes.NewReader(b))
		if err != nil || info != (npyInfo{"<f4", len(paths), testDim}) {
			t.Fatalf("header %+v %v", info, err)
		}
		data := b[len(b)-4*len(paths)*testDim:]
		if int(b[8])+int(b[9])<<8+10 != len(b)-len(data) || (len(b)-len(data))%64 != 0 {
			t.Errorf("data starts at %d, header says %d", len(b)-len(data), int(b[8])+int(b[9])<<8+10)
		}
		for i, p := range paths {
			f, _, _ := s.File(p)
			for k, x := range s.Vector(f.Vec) {
				o := 4 * (i*testDim + k)
				if got := uint32(data[o]) | uint32(data[o+1])<<8 | uint32(data[o+2])<<16 | uint32(data[o+3])<<24; got != math.Float32bits(x) {
					t.Fatalf("row %d (%s) [%d] differs", i, p, k)
				}
			}
		}
		return nil
	})
}

func TestFolderRules(t *testing.T) {
	dbA, _ := fixture(t, 1)
	dbB, _ := fixture(t, 2)
	out := filepath.Join(t.TempDir(), "emb")
	exp := func(db string, o Options) error {
		var err error
		view(t, db, func(s *store.Snapshot) error { _, err = ClipRetrieval(context.Background(), s, out, o); return nil })
		return err
	}
	if err := exp(dbA, Options{Partition: 0, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	if err := exp(dbB, Options{Partition: 2, Partitions: 3}); err != nil {
		t.Fatalf("second partition into the same folder: %v", err)
	}
	for _, f := range []string{"img_emb/img_emb_0.npy", "img_emb/img_emb_2.npy", "metadata/metadata_2.parquet", "text_emb/text_emb_2.npy"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	before, _ := os.ReadFile(filepath.Join(out, "img_emb", "img_emb_0.npy"))
	cases := []struct {
		name string
		db   string
		o    Options
		want error
	}{
		{"same partition again", dbB, Options{Partition: 0, Partitions: 3}, ErrExists},
		{"another partition count", dbB, Options{Partition: 1, Partitions: 30}, ErrNotEmpty},
		{"another dtype", dbB, Options{Partition: 1, Partitions: 3, DType: "f32"}, ErrNotEmpty},
		{"not a partition", dbB, Options{}, ErrNotEmpty},
		{"partition out of range", dbB, Options{Partition: 3, Partitions: 3}, ErrOptions},
		{"rows per partition with partitions", dbB, Options{Partition: 1, Partitions: 3, RowsPerPartition: 5}, ErrOptions},
		{"bad dtype", dbB, Options{DType: "bf16"}, ErrOptions},
	}
	for _, c := range cases {
		if err := exp(c.db, c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(out, "img_emb", "img_emb_0.npy")); !bytes.Equal(before, after) {
		t.Error("img_emb_0.npy was overwritten")
	}
	os.WriteFile(filepath.Join(out, "img_emb", "notes.txt"), nil, 0o644)
	if err := exp(dbB, Options{Partition: 1, Partitions: 3}); !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a foreign file: %v, want ErrNotEmpty naming it", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(out, "*", ".*tmp*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestFaissFlat reads the index back with python3-faiss: its top 10 for a
// query equal clipidx's search.
func TestFaissFlat(t *testing.T) {
	py := python(t, "faiss, numpy")
	db, paths := fixture(t, 3)
	out := filepath.Join(t.TempDir(), "knn.index")
	r := rand.New(rand.NewPCG(7, 7))
	q := randVec(r)
	var want []search.Result
	view(t, db, func(s *store.Snapshot) error {
		if _, err := FaissFlat(context.Background(), s, out, Options{}); err != nil {
			return err
		}
		var err error
		want, err = search.Search(s, q, search.Options{K: 10, Exact: true})
		return err
	})
	pl, _ := os.ReadFile(out + ".paths")
	if got := strings.Split(strings.TrimSuffix(string(pl), "\n"), "\n"); strings.Join(got, ",") != strings.Join(paths, ",") {
		t.Fatalf(".paths = %v, want %v", got, paths)
	}
	qs, _ := json.Marshal(q)
	res := runPy(t, py, `import sys, json, numpy as np, faiss
ix = faiss.read_index(sys.argv[1])
q = np.array([json.loads(sys.argv[2])], dtype=np.float32)
faiss.normalize_L2(q)
D, I = ix.search(q, 10)
print(json.dumps({"type": type(ix).__name__, "d": ix.d, "ntotal": ix.ntotal, "metric": ix.metric_type, "D": D[0].tolist(), "I": I[0].tolist()}))`, out, string(qs))
	var got struct {
		Type   string
		Dim    int `json:"d"`
		Ntotal int
		Metric int
		Scores []float32 `json:"D"`
		IDs    []int     `json:"I"`
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "IndexFlatIP" && got.Type != "IndexFlat" || got.Dim != testDim || got.Ntotal != len(paths) || got.Metric != 0 {
		t.Fatalf("faiss read %+v, want an inner-product flat index of %d×%d", got, len(paths), testDim)
	}
	if len(want) != 10 {
		t.Fatalf("search returned %d results", len(want))
	}
	for i := range 10 {
		gp := paths[got.IDs[i]]
		if math.Abs(float64(got.Scores[i]-want[i].Score)) > 1e-5 {
			t.Errorf("rank %d: faiss %s %g, clipidx %s %g", i, gp, got.Scores[i], want[i].Path, want[i].Score)
		}
		// Files sharing one vector tie: either order is right.
		tied := slices.ContainsFunc(want, func(r search.Result) bool { return r.Path == gp && r.Score == want[i].Score })
		if gp != want[i].Path && !tied {
			t.Errorf("rank %d: faiss %s, clipidx %s", i, gp, want[i].Path)
		}
	}
	if _, err := func() (*Result, error) {
		var res *Result
		var err error
		view(t, db, func(s *store.Snapshot) error {
			res, err = FaissFlat(context.Background(), s, out, Options{})
			return nil
		})
		return res, err
	}(); !errors.Is(err, ErrExists) {
		t.Errorf("second export to %s: %v, want ErrExists", out, err)
	}
}

// TestUnder: --under keeps a folder's files, or a tar shard's samples.
func TestUnder(t *testing.T) {
	db, paths := fixture(t, 4)
	view(t, db, func(s *store.Snapshot) error {
		for _, c := range []struct {
			under string
			want  int
		}{{"/photos/a", 9}, {"/photos", 10}, {"/data/00000.tar", 12}, {"/data", 12}, {"/photos/a/003.jpg", 1}, {"", len(paths)}} {
			rows, err := collect(s, c.under)
			if err != nil || len(rows) != c.want {
				t.Errorf("under %q: %d rows, %v; want %d", c.under, len(rows), err, c.want)
			}
			for i := 1; i < len(rows); i++ {
				if rows[i-1].path >= rows[i].path {
					t.Errorf("under %q: rows out of path order at %d", c.under, i)
				}
			}
		}
		if _, err := ClipRetrieval(context.Background(), s, filepath.Join(t.TempDir(), "e"), Options{Under: "/nothing"}); !errors.Is(err, ErrNoRows) {
			t.Errorf("under a folder without files: %v, want ErrNoRows", err)
		}
		return nil
	})
}

// checkPhotoColumns compares the photo metadata columns of row i with the
// index's record (null where it holds none).
func checkPhotoColumns(t *testing.T, i int, p string, r map[string]any, s *store.Snapshot) {
	t.Helper()
	m, ok, err := s.Meta(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"taken": nil, "taken_source": nil, "camera_make": nil, "camera_model": nil, "pixel_width": nil,
		"gps_latitude": nil, "gps_longitude": nil, "city": nil, "country_code": nil, "lens": nil}
	if ok {
		want["taken"], want["taken_source"], want["camera_make"], want["camera_model"], want["pixel_width"] = m.TakenText(), m.TakenSource, m.Make, m.Model, fmt.Sprint(m.Width)
		if m.HasGPS {
			want["gps_latitude"], want["gps_longitude"], want["city"], want["country_code"] = fmt.Sprint(roundDegrees(m.Lat)), fmt.Sprint(roundDegrees(m.Lon)), m.City, m.CountryCode
		}
	}
	for col, w := range want {
		got := r[col]
		if (w == nil) != (got == nil) || w != nil && fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("row %d (%s): %s = %v, want %v", i, p, col, got, w)
		}
	}
}

// TestFaissFlatLineBreak: a file whose path holds a line break (any that
// Python's splitlines breaks at) is left out of a faiss-flat export, both
// files, and listed as skipped; the other rows are written (once the whole
// export was refused).
func TestFaissFlatLineBreak(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ix.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	var b store.Batch
	for i, p := range []string{"/p/a.jpg", "/p/new\nline.jpg", "/p/b.jpg", "/p/c\r.jpg", "/p/d\u2028.jpg", "/p/e\u0085.jpg", "/p/f\f.jpg"} {
		b.Put(p, store.File{Size: 1, MtimeNs: int64(i), Hash: store.Hash(sha256.Sum256([]byte(p)))}, randVec(r))
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out := filepath.Join(t.TempDir(), "knn.index")
	var res *Result
	view(t, db, func(s *store.Snapshot) error {
		res, err = FaissFlat(context.Background(), s, out, Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 2 || !slices.Equal(res.Skipped, []string{"/p/c\r.jpg", "/p/d\u2028.jpg", "/p/e\u0085.jpg", "/p/f\f.jpg", "/p/new\nline.jpg"}) {
		t.Errorf("%d rows, skipped %q: want 2 and the five paths with line breaks (Python's splitlines)", res.Rows, res.Skipped)
	}
	if pl, _ := os.ReadFile(out + ".paths"); string(pl) != "/p/a.jpg\n/p/b.jpg\n" {
		t.Errorf(".paths = %q", pl)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Size() != int64(len(faissFlatHeader(2, testDim)))+2*4*testDim {
		t.Errorf("index file: %v, %v bytes: want the header and 2 rows", err, fi)
	}
}
