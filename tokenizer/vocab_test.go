package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestOpenAILayoutMatchesHF checks that the ids implied by the OpenAI gzip
// file are exactly those of vocab.json, and that both give the same merges.
func TestOpenAILayoutMatchesHF(t *testing.T) {
	dir := fixtures.BPE(t)
	hf, err := loadHF(filepath.Join(dir, VocabFile), filepath.Join(dir, MergesFile))
	if err != nil {
		t.Fatal(err)
	}
	oa, err := loadOpenAI(filepath.Join(dir, OpenAIVocabFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(hf.ids) != 49408 || len(oa.ids) != len(hf.ids) {
		t.Fatalf("vocab sizes: vocab.json %d, gz %d, want 49408", len(hf.ids), len(oa.ids))
	}
	for tok, id := range hf.ids {
		if got, ok := oa.ids[tok]; !ok || got != id {
			t.Fatalf("token %q: vocab.json id %d, gz id %d (present %v)", tok, id, got, ok)
		}
	}
	if len(hf.merges) != openAIMerges || len(oa.merges) != openAIMerges {
		t.Fatalf("merges: merges.txt %d, gz %d, want %d", len(hf.merges), len(oa.merges), openAIMerges)
	}
	for i := range hf.merges {
		if hf.merges[i] != oa.merges[i] {
			t.Fatalf("merge %d: merges.txt %q, gz %q", i, hf.merges[i], oa.merges[i])
		}
	}
}

// synthVocab writes a minimal valid Hugging Face vocabulary into dir: the
// 512 byte tokens, the merges "h e", "he l", "hel l", "hell o</w>" and the
// two special tokens at their CLIP ids.
func synthVocab(t *testing.T, dir string) map[string]int32 {
	t.Helper()
	ids := map[string]int32{}
	for _, c := range byteOrder() {
		ids[string(c)] = int32(len(ids))
	}
	for _, c := range byteOrder() {
		ids[string(c)+eowMark] = int32(len(ids))
	}
	merges := []string{"h e", "he l", "hel l", "hell o</w>"}
	for _, m := range merges {
		ids[strings.ReplaceAll(m, " ", "")] = int32(len(ids))
	}
	ids[bosToken], ids[eosToken] = BOS, EOS
	writeJSON(t, filepath.Join(dir, VocabFile), ids)
	writeFile(t, filepath.Join(dir, MergesFile), "#version: 0.2\n"+strings.Join(merges, "\n")+"\n")
	return ids
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSynthetic(t *testing.T) {
	dir := t.TempDir()
	ids := synthVocab(t, dir)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := tok.Encode("Hello hello")
	hello := ids["hello</w>"]
	want := []int32{BOS, hello, hello, EOS, EOS}
	if d := firstDiff(got[:5], want); d >= 0 {
		t.Fatalf("Encode = %v, want prefix %v", got[:5], want)
	}
	// "hellohello": both "he", then both "hel", both "hell"; only the last
	// "o" carries "</w>", so only the second half becomes "hello</w>".
	got = tok.Encode("hellohello")
	want = []int32{BOS, ids["hell"], ids["o"], hello, EOS, EOS}
	if d := firstDiff(got[:6], want); d >= 0 {
		t.Errorf("Encode(hellohello) = %v, want prefix %v", got[:6], want)
	}
	if tok.PadID() != EOS || tok.VocabSize() != 49408 {
		t.Errorf("PadID %d VocabSize %d, want %d 49408", tok.PadID(), tok.VocabSize(), EOS)
	}
}

// TestPadToken checks where the pad id comes from.
func TestPadToken(t *testing.T) {
	tests := []struct {
		name  string
		stm   string // special_tokens_map.json, "" = absent
		tc    string // tokenizer_config.json, "" = absent
		want  int32
		isErr bool
	}{
		{name: "default", want: EOS},
		{name: "map string", stm: `{"pad_token": "!"}`, want: 0},
		{name: "map object", stm: `{"pad_token": {"content": "\"", "lstrip": false}}`, want: 1},
		{name: "config", tc: `{"pad_token": "#"}`, want: 2},
		{name: "map wins", stm: `{"pad_token": "!"}`, tc: `{"pad_token": "#"}`, want: 0},
		{name: "null falls through", stm: `{"pad_token": null}`, tc: `{"pad_token": "#"}`, want: 2},
		{name: "added token", tc: `{"pad_token": "<pad>", "added_tokens_decoder": {"49407": {"content": "<|endoftext|>"}, "5": {"content": "<pad>"}}}`, want: 5},
		{name: "unknown", stm: `{"pad_token": "<pad>"}`, isErr: true},
		{name: "bad json", stm: `{"pad_token": `, isErr: true},
		{name: "bad added id", tc: `{"added_tokens_decoder": {"x": {"content": "<pad>"}}}`, isErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synthVocab(t, dir)
			if tt.stm != "" {
				writeFile(t, filepath.Join(dir, SpecialTokensFile), tt.stm)
			}
			if tt.tc != "" {
				writeFile(t, filepath.Join(dir, TokenizerConfig), tt.tc)
			}
			tok, err := Load(dir)
			if tt.isErr {
				if err == nil || !errors.Is(err, ErrBadVocab) {
					t.Fatalf("Load = %v, want an ErrBadVocab", err)
				}
				if !strings.Contains(err.Error(), ".json") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tok.PadID() != tt.want {
				t.Fatalf("PadID = %d, want %d", tok.PadID(), tt.want)
			}
			ids := tok.Encode("hello")
			if ids[3] != tt.want || ids[76] != tt.want || ids[2] != EOS {
				t.Errorf("Encode(hello) = %v: want EOS at 2 then pad %d", ids[:6], tt.want)
			}
			if n := tok.Length(ids); n != 3 {
				t.Errorf("Length = %d, want 3", n)
			}
		})
	}
}

// TestLoadErrors checks that broken folders fail with an error naming the
// folder or file, wrapping the right sentinel.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, dir string) string // returns the dir to load
		sentinel error
		mention  string
	}{
		{"missing folder", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") }, ErrNoVocab, "nope"},
		{"empty folder", func(t *testing.T, dir string) string { return dir }, ErrNoVocab, VocabFile},
		{"a file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "f")
			writeFile(t, p, "x")
			return p
		}, ErrNoVocab, "not a folder"},
		{"vocab only", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			os.Remove(filepath.Join(dir, MergesFile))
			return dir
		}, ErrNoVocab, MergesFile},
		{"merges only", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			os.Remove(filepath.Join(dir, VocabFile))
			return dir
		}, ErrNoVocab, VocabFile},
		{"vocab not json", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, VocabFile), "[1, 2")
			return dir
		}, ErrBadVocab, VocabFile},
		{"merge line", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, MergesFile), "#version: 0.2\nh e\nhel\n")
			return dir
		}, ErrBadVocab, MergesFile + ":3"},
		{"merge result unknown", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, MergesFile), "#version: 0.2\nh e\nx y\nhel l\nhell o</w>\n")
			return dir
		}, ErrBadVocab, `merge 2 "x" "y"`},
		{"merges empty", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, MergesFile), "")
			return dir
		}, ErrBadVocab, MergesFile + " is empty (no merges)"},
		{"merges header only", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, MergesFile), "#version: 0.2\n")
			return dir
		}, ErrBadVocab, MergesFile + " is empty (no merges)"},
		{"merges truncated", func(t *testing.T, dir string) string {
			synthVocab(t, dir)
			writeFile(t, filepath.Join(dir, MergesFile), "#version: 0.2\nh e\nhe l\nhel l\n")
			return dir
		}, ErrBadVocab, "has 3 merges, but vocab.json has 518 tokens, which implies 4"},
		{"byte missing", func(t *testing.T, dir string) string {
			ids := synthVocab(t, dir)
			delete(ids, "a</w>")
			writeJSON(t, filepath.Join(dir, VocabFile), ids)
			return dir
		}, ErrBadVocab, VocabFile},
		{"special id", func(t *testing.T, dir string) string {
			ids := synthVocab(t, dir)
			ids[eosToken] = 600
			writeJSON(t, filepath.Join(dir, VocabFile), ids)
			return dir
		}, ErrBadVocab, eosToken},
		{"gz not gzip", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, OpenAIVocabFile), "plain text")
			return dir
		}, ErrBadVocab, OpenAIVocabFile},
		{"gz too short", func(t *testing.T, dir string) string {
			f, err := os.Create(filepath.Join(dir, OpenAIVocabFile))
			if err != nil {
				t.Fatal(err)
			}
			zw := gzip.NewWriter(f)
			zw.Write([]byte("header\ni n\nt h\n"))
			zw.Close()
			f.Close()
			return dir
		}, ErrBadVocab, OpenAIVocabFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t, t.TempDir())
			_, err := Load(dir)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("Load = %v, want %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

// TestLoadTruncatedMerges cuts the real merges.txt at a line boundary, where
// every remaining merge is valid, and checks that Load refuses it rather
// than tokenizing with the merges that are left.
func TestLoadTruncatedMerges(t *testing.T) {
	src := fixtures.BPE(t)
	data, err := os.ReadFile(filepath.Join(src, MergesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for _, keep := range []int{len(lines) - 2, len(lines) / 2, 1} {
		dir := t.TempDir()
		copyFile(t, filepath.Join(src, VocabFile), filepath.Join(dir, VocabFile))
		writeFile(t, filepath.Join(dir, MergesFile), strings.Join(lines[:keep], ""))
		_, err := Load(dir)
		if !errors.Is(err, ErrBadVocab) || !strings.Contains(err.Error(), MergesFile) {
			t.Errorf("%d of %d lines: Load = %v, want an ErrBadVocab naming %s", keep, len(lines), err, MergesFile)
		}
	}
}
