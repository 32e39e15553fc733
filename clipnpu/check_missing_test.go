package clipnpu_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// editLines rewrites the lines of a text file in a copied fixture: edit
// returns the line to keep, or false to drop it.
func editLines(t *testing.T, path string, edit func(line string) (string, bool)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(data), "\n") {
		if l, ok := edit(line); ok {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckMissingReferencesFail: a reference the folder lacks fails the
// check it would have made; the run never ends with nothing failed. A
// tok.<i>.ids tensor of the wrong length is named with its length.
func TestCheckMissingReferencesFail(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the fixture model several times")
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		stage  clipnpu.CheckStage
		want   string
	}{
		{"no refset", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "manifest.txt"), func(l string) (string, bool) {
				return l, !strings.HasPrefix(l, "refset ") && !strings.HasPrefix(l, "ref_")
			})
		}, clipnpu.StageBundle, "no refset records"},
		{"no tok.3.ids", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "tensors.txt"), func(l string) (string, bool) {
				return l, !strings.HasPrefix(l, "tok.3.ids ")
			})
		}, clipnpu.StageTokenizer, "tok_test 3 \"a black and white checkerboard\": the bundle has no tok.3.ids tensor"},
		{"76 ids", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "tensors.txt"), func(l string) (string, bool) {
				if f := strings.Fields(l); len(f) == 5 && f[0] == "tok.0.ids" {
					return strings.Join([]string{f[0], f[1], "76", f[3], "304"}, " "), true
				}
				return l, true
			})
		}, clipnpu.StageTokenizer, "tok_test 0 \"a photo of a cat\": tensor tok.0.ids holds 76 ids, the tokenizer gives 77"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFolder(t, fixtures.TinyModel(t))
			tc.damage(t, dir)
			r, err := clipnpu.Check(dir, clipnpu.CheckOptions{OpenOptions: clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Failed() != 1 {
				t.Errorf("%d failed, want 1:\n%s", r.Failed(), messages(r))
			}
			for _, res := range r.Results {
				if res.Status == clipnpu.CheckFail && (res.Stage != tc.stage || !strings.Contains(res.Message, tc.want)) {
					t.Errorf("failed result %s %q, want %s %q", res.Stage, res.Message, tc.stage, tc.want)
				}
			}
		})
	}
}

// TestCheckSaysPromptTemplate: the end-to-end prompts use the manifest's
// prompt_template (how the reference logits were made), and one result
// says so and what classify uses instead; without the param they use the
// model's, as classify does.
func TestCheckSaysPromptTemplate(t *testing.T) {
	opts := clipnpu.CheckOptions{OpenOptions: clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}}}
	templateResults := func(r *clipnpu.CheckReport) []string {
		var out []string
		for _, res := range r.Results {
			if res.Stage == clipnpu.StagePrompts && res.RefSet == -1 {
				if res.Status != clipnpu.CheckInfo {
					t.Errorf("template result %q counts (status %d), want info", res.Message, res.Status)
				}
				out = append(out, res.Message)
			}
		}
		return out
	}

	dir := fixtures.TinyModel(t)
	r, err := clipnpu.Check(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := templateResults(r)
	want := `prompt template "{}": the manifest's prompt_template, with which the reference logits were made; classify uses the model's "a photo of a {}" unless given --template "{}"`
	if len(got) != 1 || got[0] != want {
		t.Errorf("template results %q, want [%q]", got, want)
	}
	if !strings.Contains(messages(r), `label prompts (template "{}") tokenize to the reference input ids`) {
		t.Errorf("the prompts were not made with the manifest's template:\n%s", messages(r))
	}

	// Without the param, the model's template makes the prompts (here
	// "a photo of a a photo of a cat", so the prompts stage fails).
	dir = copyFolder(t, dir)
	editLines(t, filepath.Join(dir, "manifest.txt"), func(l string) (string, bool) {
		return l, !strings.HasPrefix(l, "param prompt_template ")
	})
	if r, err = clipnpu.Check(dir, opts); err != nil {
		t.Fatal(err)
	}
	got = templateResults(r)
	want = `prompt template "a photo of a {}": the model's, as classify uses it (the manifest has no prompt_template param)`
	if len(got) != 1 || got[0] != want {
		t.Errorf("without the param: template results %q, want [%q]", got, want)
	}
	if !strings.Contains(messages(r), `label prompts (template "a photo of a {}")`) {
		t.Errorf("without the param the prompts were not made with the model's template:\n%s", messages(r))
	}
}
