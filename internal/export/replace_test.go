package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/clipidx/clipidx/store"
)

// whatwgCases are byte strings and their text with each maximal invalid
// subpart as U+FFFD, worked out by hand from the WHATWG Encoding
// Standard's UTF-8 decoder (Python's bytes.decode("utf-8", "replace")).
var whatwgCases = []struct{ in, want string }{
	{"", ""},
	{"plain ✓", "plain ✓"},
	{"\xef\xbf\xbd", "\ufffd"},                       // U+FFFD itself, valid
	{"a\xffb", "a\ufffdb"},                           // a byte that starts nothing
	{"\xff\xfe", "\ufffd\ufffd"},                     // two of them: two (one run)
	{"\x80\x80", "\ufffd\ufffd"},                     // lone continuation bytes
	{"\xc0\xaf", "\ufffd\ufffd"},                     // C0 starts nothing (overlong)
	{"\xc2", "\ufffd"},                               // cut at the end
	{"\xc2\xc2\xa9", "\ufffd©"},                      // cut by another lead byte
	{"\xe2\x82", "\ufffd"},                           // a cut "€": one subpart
	{"\xe2\x82x", "\ufffdx"},                         // ... before an ASCII byte
	{"\xe2\x82\xac", "€"},                            // whole
	{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},           // E0 needs A0..BF next
	{"\xe0\xa0", "\ufffd"},                           // E0 A0: a subpart
	{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},           // a surrogate: ED needs 80..9F
	{"\xed\x9f", "\ufffd"},                           // ED 9F: a subpart
	{"\xf0\x9f\x98", "\ufffd"},                       // a cut emoji
	{"\xf0\x9f\x98\x80", "😀"},                        // whole
	{"\xf0\x80\x80\x80", "\ufffd\ufffd\ufffd\ufffd"}, // F0 needs 90..BF next
	{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"}, // above U+10FFFF
	{"\xf4\x8f\xbf", "\ufffd"},                       // F4 8F BF: a subpart
	{"\xf5\x80", "\ufffd\ufffd"},                     // F5 starts nothing
	{"\xf1\x80\x80\xe2\x82\xac", "\ufffd€"},          // cut by a whole "€"
}

func TestValidUTF8WHATWG(t *testing.T) {
	for _, c := range whatwgCases {
		if got := validUTF8(c.in); got != c.want {
			t.Errorf("validUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// pythonDecode returns each of ins as Python's bytes.decode("utf-8",
// "replace") gives it, or nil when there is no python3.
func pythonDecode(t *testing.T, ins []string) []string {
	t.Helper()
	py := ""
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "pass").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		return nil
	}
	var in bytes.Buffer
	for _, s := range ins {
		in.WriteString(hex.EncodeToString([]byte(s)) + "\n")
	}
	cmd := exec.Command(py, "-c", `import sys
for l in sys.stdin.read().split("\n")[:-1]:
    print(bytes.fromhex(l).decode("utf-8", "replace").encode("utf-8").hex())`)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(ins) == 0 {
		lines = nil
	}
	if len(lines) != len(ins) {
		t.Fatalf("python decoded %d strings, want %d", len(lines), len(ins))
	}
	got := make([]string, len(lines))
	for i, l := range lines {
		b, err := hex.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = string(b)
	}
	return got
}

// TestValidUTF8MatchesPython: the hand-worked cases and thousands of
// random strings of bytes around the UTF-8 ranges' edges come out as
// Python decodes them.
func TestValidUTF8MatchesPython(t *testing.T) {
	edges := []byte{0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
		0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff}
	r := rand.New(rand.NewPCG(3, 4))
	var ins []string
	for _, c := range whatwgCases {
		ins = append(ins, c.in)
	}
	for range 20000 {
		b := make([]byte, r.IntN(9))
		for i := range b {
			b[i] = edges[r.IntN(len(edges))]
		}
		ins = append(ins, string(b))
	}
	want := pythonDecode(t, ins)
	if want == nil {
		need(t, "python3", "apt-get install python3 (TestValidUTF8WHATWG checks the rule without it)", false)
	}
	bad := 0
	for i, in := range ins {
		if got := validUTF8(in); got != want[i] && bad < 10 {
			bad++
			t.Errorf("validUTF8(%q) = %q, Python gives %q", in, got, want[i])
		}
	}
}

// parquetColumn reads the values of one column of a Parquet file.
func parquetColumn(t *testing.T, file, name string) []parquet.Value {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := pf.Schema().Lookup(name)
	if !ok {
		t.Fatalf("%s: no column %q (columns %v)", file, name, pf.Schema().Columns())
	}
	var vals []parquet.Value
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if err != nil {
				break
			}
			vs := make([]parquet.Value, p.NumValues())
			n, _ := p.Values().ReadValues(vs)
			vals = append(vals, vs[:n]...)
		}
		pages.Close()
	}
	return vals
}

// TestExportTextsReplacedAsPython: the text columns of the metadata files
// (a path, a caption, a camera name, a sample's JSON field and field
// name) and the paths of the --json result show bytes that are not UTF-8
// as Python decodes them, one rule for all: strings.ToValidUTF8 gave one
// U+FFFD for "\xff\xfe" and encoding/json two for "\xe2\x82".
func TestExportTextsReplacedAsPython(t *testing.T) {
	const (
		path    = "/d/00000.tar#x\xff\xfe"   // Python: two U+FFFD
		caption = "a \xc0\xaf caption"       // two
		camera  = "Maker\xed\xa0\x80"        // three
		field   = "title \xe2\x82 end"       // one
		name    = "note\xf0\x9f\x98"         // one (a JSON field name)
		skipped = "/p/cut\xe2\x82\nline.jpg" // one
	)
	want := map[string]string{}
	for _, c := range []struct{ in, hand string }{
		{path, "/d/00000.tar#x\ufffd\ufffd"},
		{caption, "a \ufffd\ufffd caption"},
		{camera, "Maker\ufffd\ufffd\ufffd"},
		{field, "title \ufffd end"},
		{name, "note\ufffd"},
		{skipped, "/p/cut\ufffd\nline.jpg"},
	} {
		want[c.in] = c.hand
	}
	// The hand-worked values are Python's, where there is a python3.
	var ins []string
	for in := range want {
		ins = append(ins, in)
	}
	if py := pythonDecode(t, ins); py != nil {
		for i, in := range ins {
			if py[i] != want[in] {
				t.Fatalf("Python decodes %q as %q, the test expects %q", in, py[i], want[in])
			}
		}
	}

	db := filepath.Join(t.TempDir(), "ix.db")
	w, err := store.OpenWriter(db, testID, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 1))
	var b store.Batch
	b.Put(path, store.File{Size: 1, MtimeNs: 1700000000000000000, Hash: sha256.Sum256([]byte(path))}, randVec(r))
	js, _ := json.Marshal(map[string]string{"title": "T", "note": "N"})
	js = bytes.Replace(js, []byte(`"T"`), []byte(`"`+field+`"`), 1)
	js = bytes.Replace(js, []byte(`"note"`), []byte(`"`+name+`"`), 1)
	b.PutSample(path, store.Sample{Caption: caption, JSON: js})
	b.PutMeta(path, store.Meta{Make: camera})
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out := filepath.Join(t.TempDir(), "emb")
	view(t, db, func(s *store.Snapshot) error {
		_, err := ClipRetrieval(context.Background(), s, out, Options{})
		return err
	})
	meta := filepath.Join(out, "metadata", "metadata_0.parquet")
	for _, c := range []struct{ col, want string }{
		{"image_path", want[path]}, {"caption", want[caption]}, {"camera_make", want[camera]},
		{"title", want[field]}, {want[name], "N"},
	} {
		vals := parquetColumn(t, meta, c.col)
		if len(vals) != 1 || string(vals[0].ByteArray()) != c.want {
			var got []string
			for _, v := range vals {
				got = append(got, string(v.ByteArray()))
			}
			t.Errorf("column %q holds %q, want %q", c.col, got, c.want)
		}
	}

	res := &Result{Files: []string{path}, Skipped: []string{skipped}, Leftovers: []string{caption}, Removed: []string{camera}}
	var enc bytes.Buffer
	if err := json.NewEncoder(&enc).Encode(res); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(enc.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, got, in string }{
		{"files", back.Files[0], path}, {"skipped", back.Skipped[0], skipped},
		{"leftovers", back.Leftovers[0], caption}, {"removed", back.Removed[0], camera},
	} {
		if c.got != want[c.in] {
			t.Errorf("--json %q: %q, want %q", c.key, c.got, want[c.in])
		}
	}
}
