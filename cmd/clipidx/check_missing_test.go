package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckMissingRefSetFails: a manifest with no refset records checked
// the tokenizer only and ended ALL CHECKS PASSED, exit 0; it fails now.
func TestCheckMissingRefSetFails(t *testing.T) {
	dir := copyFixture(t)
	p := filepath.Join(dir, "manifest.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "refset ") && !strings.HasPrefix(l, "ref_") {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "check", dir, "--device", "cpu")
	if code != 1 || strings.Contains(out, "ALL CHECKS PASSED") || !strings.Contains(out, "[FAIL] no refset records") || !strings.Contains(out, "SOME CHECKS FAILED (1 failed, 12 passed)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestCheckSaysPromptTemplate: check names the template of its label
// prompts, where it comes from and what classify uses instead.
func TestCheckSaysPromptTemplate(t *testing.T) {
	out, _, code := runCLI(t, "check", copyFixture(t), "--device", "cpu")
	want := `[info] prompt template "{}": the manifest's prompt_template, with which the reference logits were made; classify uses the model's "a photo of a {}" unless given --template "{}"` + "\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want the line %q in:\n%s", code, want, out)
	}
}
