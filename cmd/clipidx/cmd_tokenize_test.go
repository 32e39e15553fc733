package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

type tokenizeCase struct {
	Name string  `json:"name"`
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

// tokenizeVectors returns a few cases of tokenizer_vectors.json.
func tokenizeVectors(t *testing.T, names ...string) (texts []string, ids [][]int32) {
	t.Helper()
	data, err := os.ReadFile(fixtures.Shared(t, "fixtures", "tokenizer_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []tokenizeCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		i := slices.IndexFunc(v.Cases, func(c tokenizeCase) bool { return c.Name == name })
		if i < 0 {
			t.Fatalf("no case %q in tokenizer_vectors.json", name)
		}
		texts = append(texts, v.Cases[i].Text)
		ids = append(ids, v.Cases[i].IDs)
	}
	return texts, ids
}

// runTokenize runs the root command with args and returns its standard
// output and error.
func runTokenize(args ...string) (string, error) {
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestTokenizeCommand(t *testing.T) {
	model := fixtures.TinyModel(t)
	texts, want := tokenizeVectors(t, "plain_cat", "contractions_upper", "special_token_literal", "empty", "long_text", "greek_final_sigma")

	t.Run("lines", func(t *testing.T) {
		out, err := runTokenize(append([]string{"--model", model, "tokenize", "--"}, texts...)...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(texts) {
			t.Fatalf("%d lines for %d texts:\n%s", len(lines), len(texts), out)
		}
		for i, line := range lines {
			var got []int32
			for _, f := range strings.Fields(line) {
				n, err := strconv.ParseInt(f, 10, 32)
				if err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				got = append(got, int32(n))
			}
			if !slices.Equal(got, want[i]) {
				t.Errorf("text %q:\n got %v\nwant %v", texts[i], got, want[i])
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		out, err := runTokenize(append([]string{"--model", model, "tokenize", "--json", "--"}, texts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "<|endoftext|>") {
			t.Errorf("special token text was escaped: %s", out)
		}
		var recs []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		}
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		if len(recs) != len(texts) {
			t.Fatalf("%d records for %d texts", len(recs), len(texts))
		}
		for i, r := range recs {
			if r.Text != texts[i] || !slices.Equal(r.IDs, want[i]) {
				t.Errorf("record %d = %q %v, want %q %v", i, r.Text, r.IDs, texts[i], want[i])
			}
		}
	})
}

func TestTokenizeCommandErrors(t *testing.T) {
	empty := t.TempDir()
	vocabOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(vocabOnly, "vocab.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		mention []string
	}{
		{"no vocabulary", []string{"--model", empty, "tokenize", "a cat"}, []string{empty, "vocab.json", "model pull"}},
		{"no merges", []string{"--model", vocabOnly, "tokenize", "a cat"}, []string{vocabOnly, "merges.txt"}},
		{"missing folder", []string{"--model", filepath.Join(empty, "absent"), "tokenize", "a cat"}, []string{"absent"}},
		{"no text", []string{"--model", empty, "tokenize"}, []string{"arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runTokenize(tt.args...)
			if err == nil {
				t.Fatalf("succeeded with output %q", out)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if out != "" {
				t.Errorf("printed %q on failure", out)
			}
			want := 1 // a model folder without vocabulary
			if tt.name == "no text" {
				want = 2 // a usage error
			}
			if code := run(tt.args); code != want {
				t.Errorf("exit code %d, want %d", code, want)
			}
		})
	}
}
