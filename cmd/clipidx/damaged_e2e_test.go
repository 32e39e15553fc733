package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestDamagedIndexEndToEnd: an index cut short or overwritten with garbage
// once crashed every command (SIGBUS, or a bbolt panic while opening it
// for writing). Now status, search, forget and build say the index is
// damaged and name --reindex (exit 1), and build --reindex moves the file
// aside and builds a new one.
func TestDamagedIndexEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(root, "good.db")
	if _, errs, code := e2eRun(t, bin, "--db", good, "--model", model, "--device", "reference", "build", photos); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:10000] }},
		{"garbage after the metas", func(b []byte) []byte {
			r := rand.New(rand.NewPCG(1, 2))
			for i := 8192; i < len(b); i++ {
				b[i] = byte(r.Uint32())
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "t.db")
			if err := os.WriteFile(db, tc.damage(append([]byte(nil), orig...)), 0o644); err != nil {
				t.Fatal(err)
			}
			g := []string{"--db", db, "--model", model, "--device", "reference"}
			for _, args := range [][]string{{"status"}, {"status", "--check"}, {"search", "a photo"}, {"forget", photos}, {"build", photos}} {
				_, errs, code := e2eRun(t, bin, append(g, args...)...)
				if code != 1 || !strings.Contains(errs, "index damaged") || !strings.Contains(errs, "--reindex") {
					t.Errorf("%v: exit %d, stderr %q; want exit 1, index damaged, --reindex", args, code, errs)
				}
			}
			_, errs, code := e2eRun(t, bin, append(g, "build", "--reindex", photos)...)
			if code != 0 || !strings.Contains(errs, ".corrupt-") {
				t.Fatalf("build --reindex: exit %d, stderr %q", code, errs)
			}
			if backups, _ := filepath.Glob(db + ".corrupt-*"); len(backups) != 1 {
				t.Errorf("backups %v, want one", backups)
			}
			if out, errs, code := e2eRun(t, bin, append(g, "status", "--check")...); code != 0 || !strings.Contains(out, "check:       ok") {
				t.Errorf("status --check after --reindex: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}
