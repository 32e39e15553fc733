package tokenizer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// The real vocabulary is loaded once per test binary.
var (
	realOnce sync.Once
	realTok  *Tokenizer
	realErr  error
)

func loadReal(t testing.TB) *Tokenizer {
	t.Helper()
	dir := fixtures.BPE(t)
	realOnce.Do(func() { realTok, realErr = Load(dir) })
	if realErr != nil {
		t.Fatal(realErr)
	}
	return realTok
}

type vectorCase struct {
	Name   string  `json:"name"`
	Text   string  `json:"text"`
	IDs    []int32 `json:"ids"`
	Length int     `json:"length"`
}

func loadVectors(t *testing.T) []vectorCase {
	t.Helper()
	data, err := os.ReadFile(fixtures.Shared(t, "fixtures", "tokenizer_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ContextLength int          `json:"context_length"`
		BOS           int32        `json:"bos_id"`
		EOS           int32        `json:"eos_id"`
		Pad           int32        `json:"pad_id"`
		Cases         []vectorCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.ContextLength != ContextLength || v.BOS != BOS || v.EOS != EOS || len(v.Cases) == 0 {
		t.Fatalf("unexpected vector header: context %d bos %d eos %d, %d cases", v.ContextLength, v.BOS, v.EOS, len(v.Cases))
	}
	return v.Cases
}

// TestVectors checks every case of tokenizer_vectors.json with both
// vocabulary layouts and the tiny model folder.
func TestVectors(t *testing.T) {
	cases := loadVectors(t)
	bpe := fixtures.BPE(t)
	gzDir := t.TempDir()
	copyFile(t, filepath.Join(bpe, OpenAIVocabFile), filepath.Join(gzDir, OpenAIVocabFile))
	toks := map[string]string{
		"hf":   bpe,
		"gz":   gzDir,
		"tiny": fixtures.TinyModel(t),
	}
	for layout, dir := range toks {
		tok, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(layout+"/"+c.Name, func(t *testing.T) {
				got := tok.Encode(c.Text)
				if diff := firstDiff(got, c.IDs); diff >= 0 {
					t.Fatalf("Encode(%q) differs at %d:\n got %v\nwant %v\n got %q\nwant %q",
						c.Text, diff, got, c.IDs, tok.pieces(got), tok.pieces(c.IDs))
				}
				if n := tok.Length(got); n != c.Length {
					t.Errorf("Length = %d, want %d", n, c.Length)
				}
			})
		}
	}
}

// pieces returns the token strings of ids, for failure messages.
func (t *Tokenizer) pieces(ids []int32) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids[:t.Length(ids)] {
		if id >= 0 && int(id) < len(t.tokens) {
			out = append(out, t.tokens[id])
		} else {
			out = append(out, fmt.Sprint(id))
		}
	}
	return out
}

func firstDiff(a, b []int32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBundleTokTests checks the tok_test records of the tiny model's
// taconite-bundle manifest against the tok.<i>.ids tensors.
func TestBundleTokTests(t *testing.T) {
	dir := fixtures.TinyModel(t)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	texts := readTokTests(t, filepath.Join(dir, "manifest.txt"))
	offsets := readTensorIndex(t, filepath.Join(dir, "tensors.txt"))
	bin, err := os.ReadFile(filepath.Join(dir, "tensors.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) == 0 {
		t.Fatal("no tok_test records in manifest.txt")
	}
	for i, text := range texts {
		name := fmt.Sprintf("tok.%d.ids", i)
		off, ok := offsets[name]
		if !ok {
			t.Fatalf("tensors.txt has no %s", name)
		}
		if off[1] != 4*ContextLength || off[0]+off[1] > int64(len(bin)) {
			t.Fatalf("%s: offset %d size %d, want %d bytes inside %d", name, off[0], off[1], 4*ContextLength, len(bin))
		}
		want := make([]int32, ContextLength)
		for k := range want {
			want[k] = int32(binary.LittleEndian.Uint32(bin[off[0]+int64(4*k):]))
		}
		got := tok.Encode(text)
		if d := firstDiff(got, want); d >= 0 {
			t.Errorf("tok_test %d %q differs at %d:\n got %v\nwant %v", i, text, d, got, want)
		}
	}
}

// readTokTests returns the unescaped texts of the "tok_test <i> <text>"
// lines, indexed by i.
func readTokTests(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "tok_test ")
		if !ok {
			continue
		}
		num, text, _ := strings.Cut(rest, " ")
		i, err := strconv.Atoi(num)
		if err != nil || i != len(texts) {
			t.Fatalf("%s: tok_test index %q out of order", path, num)
		}
		u, err := unescapePy(text)
		if err != nil {
			t.Fatalf("%s: tok_test %d: %v", path, i, err)
		}
		texts = append(texts, u)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return texts
}

// readTensorIndex reads tensors.txt lines "<name> <dtype> <dims> <offset>
// <bytes>" into name → {offset, bytes}.
func readTensorIndex(t *testing.T, path string) map[string][2]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("%s: bad line %q", path, line)
		}
		off, err1 := strconv.ParseInt(f[3], 10, 64)
		n, err2 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out[f[0]] = [2]int64{off, n}
	}
	return out
}

// unescapePy decodes Python's unicode_escape subset used by the manifest:
// \t \n \r \\ \' \" \xNN \uNNNN \UNNNNNNNN.
func unescapePy(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("trailing backslash in %q", s)
		}
		i++
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+n >= len(s) {
				return "", fmt.Errorf("short \\%c escape in %q", c, s)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("bad \\%c escape in %q", c, s)
			}
			b.WriteRune(rune(v)) // \xNN is a code point, as in unicode_escape
			i += n
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", c, s)
		}
	}
	return b.String(), nil
}

func TestUnescapePy(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, "plain"},
		{`caf\xe9`, "café"},
		{`\u732b!`, "猫!"},
		{`\U0001f436`, "🐶"},
		{`a\t\tb\n\\`, "a\t\tb\n\\"},
	}
	for _, tt := range tests {
		got, err := unescapePy(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("unescapePy(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`\`, `\x4`, `\q`, `\uZZZZ`} {
		if _, err := unescapePy(bad); err == nil {
			t.Errorf("unescapePy(%q) succeeded, want an error", bad)
		}
	}
}
