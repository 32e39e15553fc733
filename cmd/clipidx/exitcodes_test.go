package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// documentedExitCodes are the codes in the table under the README's "Exit
// codes" heading.
func documentedExitCodes(t *testing.T) []int {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var codes []int
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.Contains(line, "Exit codes")
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cell := strings.Trim(strings.Split(line, "|")[1], " `")
		if n, err := strconv.Atoi(cell); err == nil {
			codes = append(codes, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return codes
}

// TestExitCodes runs one real case of each exit code the README's "Exit
// codes" table lists, and checks that the table lists exactly these codes:
// a code a command gains or loses must be told there.
func TestExitCodes(t *testing.T) {
	model := fixtures.TinyModel(t)
	dir := t.TempDir()
	var bin string // the built binary, for the codes a signal gives
	if !testing.Short() {
		bin = e2eBinary(t)
	}
	interrupt := func(t *testing.T, sig syscall.Signal) (int, string) {
		if bin == "" {
			t.Skip("builds the binary")
		}
		scratch := t.TempDir()
		cmd := exec.Command(bin, "bench", "search", "--vectors", "20000", "--dim", "16", "--queries", "1000000000", "--dir", scratch)
		stderr, code := signalWhen(t, cmd, sig, func() bool { return benchFile(scratch, "bench.db") != "" })
		return code, stderr
	}
	cases := []struct {
		code int
		name string
		run  func(t *testing.T) (code int, stderr string)
	}{
		{0, "a build with a file it could not read", func(t *testing.T) (int, string) {
			photos := filepath.Join(dir, "photos")
			bad := filepath.Join(photos, "notes.jpg")
			plantFiles(t, photos, "notes.jpg")
			data, err := os.ReadFile(filepath.Join(model, "images", "gradient_256.png"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(photos, "ok.png"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := runCLI(t, "--db", filepath.Join(dir, "i.db"), "--model", model, "--device", "reference", "build", photos)
			if !strings.Contains(out+stderr, bad) {
				t.Errorf("the unreadable %s is not listed:\n%s%s", bad, out, stderr)
			}
			return code, stderr
		}},
		{1, "an image that cannot be read", func(t *testing.T) (int, string) {
			_, stderr, code := runCLI(t, "--model", model, "preprocess", "-o", filepath.Join(dir, "px.f32"), filepath.Join(dir, "absent.png"))
			return code, stderr
		}},
		{2, "an unknown flag", func(t *testing.T) (int, string) {
			_, stderr, code := runCLI(t, "search", "--no-such-flag", "a cat")
			return code, stderr
		}},
		{130, "Ctrl-C", func(t *testing.T) (int, string) { return interrupt(t, syscall.SIGINT) }},
		{143, "SIGTERM", func(t *testing.T) (int, string) { return interrupt(t, syscall.SIGTERM) }},
	}
	var pinned []int
	for _, c := range cases {
		pinned = append(pinned, c.code)
		t.Run(strconv.Itoa(c.code), func(t *testing.T) {
			if code, stderr := c.run(t); code != c.code {
				t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, stderr)
			}
		})
	}
	if doc := documentedExitCodes(t); !slices.Equal(doc, pinned) {
		t.Errorf("README.md's Exit codes table lists %v; this test pins %v: document each code a command returns, with a case here", doc, pinned)
	}
}
