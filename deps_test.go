package clipidx

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/clipidx/clipidx"

// pkgImports maps each package folder (relative, slash-separated) to the
// imports of its non-test files, and separately of its test files.
func pkgImports(t *testing.T) (src, tests map[string]map[string]bool) {
	t.Helper()
	src, tests = map[string]map[string]bool{}, map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		m := src
		if strings.HasSuffix(path, "_test.go") {
			m = tests
		}
		if m[dir] == nil {
			m[dir] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			m[dir][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return src, tests
}

func internalImports(imports map[string]bool) []string {
	var out []string
	for p := range imports {
		if p == module || strings.HasPrefix(p, module+"/") {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
		}
	}
	sort.Strings(out)
	return out
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestImportGraph enforces the rules drawn in doc.go.
func TestImportGraph(t *testing.T) {
	src, tests := pkgImports(t)
	if len(src) < 8 {
		t.Fatalf("found only %d packages; is the test running at the repository root?", len(src))
	}
	leaves := []string{"tokenizer", "preprocess", "internal/gemm", "clipnpu/core", "clipnpu/bundle", "internal/hub", "internal/fixtures", "internal/rss", "internal/termimg", "internal/mmap", "internal/video", "internal/geo", "internal/userdir", "internal/madedirs", "internal/flock", "internal/ctime"}
	// The model runtime, split by what has run: who each part may import
	// inside clipnpu. The root (the face) imports them all.
	runtime := map[string][]string{
		"clipnpu/hf":      {"clipnpu/core"},                                                                  // the loader imports no engine
		"clipnpu/cpu":     {"clipnpu/core", "internal/gemm"},                                                 // never the NPU path
		"clipnpu/npu":     {"clipnpu/core", "clipnpu/hf", "clipnpu/bundle", "clipnpu/xdna", "internal/gemm"}, // never the CPU engines
		"clipnpu/compare": {"clipnpu/core"},                                                                  // measures and gates, runs no model
	}
	for pkg, imps := range src {
		internal := internalImports(imps)
		for _, leaf := range leaves {
			if under(pkg, leaf) {
				for _, p := range internal {
					// The system helpers are leaves below leaves: internal/mmap
					// maps files for the model loaders (core, bundle),
					// internal/flock locks files between processes (the
					// decoder code cache, model pulls).
					if !under(p, leaf) && p != "internal/mmap" && p != "internal/flock" {
						t.Errorf("%s is a leaf but imports %s", pkg, p)
					}
				}
			}
		}
		for part, allowed := range runtime {
			if !under(pkg, part) {
				continue
			}
			for _, p := range internal {
				ok := under(p, part)
				for _, a := range allowed {
					ok = ok || under(p, a)
				}
				if !ok {
					t.Errorf("%s imports %s: %s may import only %v", pkg, p, part, allowed)
				}
			}
		}
		if under(pkg, "internal/watch") {
			// The watcher calls the caller's build: it never runs the model.
			for _, p := range internal {
				if p != "index" && p != "store" {
					t.Errorf("%s imports %s: the watcher may import only index and store", pkg, p)
				}
			}
		}
		if under(pkg, "internal/web") {
			// The server stands on the model face, the one-pass search and
			// the index; it never reaches the engines or the commands.
			for _, p := range internal {
				if !under(p, "internal/web") && p != "clipnpu" && p != "search" && p != "store" && p != "preprocess" && p != "internal/ctime" {
					t.Errorf("%s imports %s: the web server may import only clipnpu (the face), search, store, preprocess and internal/ctime", pkg, p)
				}
			}
		}
		for _, p := range internal {
			engine := under(p, "clipnpu/core") || under(p, "clipnpu/hf") || under(p, "clipnpu/cpu") || under(p, "clipnpu/npu")
			switch {
			case engine && !under(pkg, "clipnpu"):
				t.Errorf("%s imports %s: outside clipnpu, only its root (the model face) and its comparison packages are used", pkg, p)
			case (under(pkg, "index") || under(pkg, "search")) && under(p, "clipnpu"):
				t.Errorf("%s imports %s: index and search declare the encoder interfaces they need", pkg, p)
			case under(pkg, "clipnpu") && pkg != "clipnpu" && (p == "tokenizer" || p == "preprocess" || p == "index" || p == "store" || p == "search" || under(p, "cmd")):
				t.Errorf("%s imports %s: the model runtime takes ids and tensors, never paths of images or strings of text", pkg, p)
			case pkg == "clipnpu" && (p == "index" || p == "search" || under(p, "cmd")):
				t.Errorf("%s imports %s: the model face is below index, search and the commands", pkg, p)
			case pkg == "clipnpu" && p == "store":
				t.Errorf("%s imports %s: the model face knows no index; it describes itself (Description) and the identity is made outside", pkg, p)
			case under(p, "cmd") || under(p, "examples"):
				t.Errorf("%s imports %s: commands are not libraries", pkg, p)
			}
		}
		if under(pkg, "clipnpu/compare") && imps["testing"] {
			t.Errorf("%s imports testing: compare returns reports, the conformance suite fails tests", pkg)
		}
		library := !under(pkg, "cmd") && !under(pkg, "examples")
		for p := range imps {
			if library && (strings.HasPrefix(p, "github.com/spf13/") || strings.HasPrefix(p, "github.com/schollz/progressbar") || p == "flag") {
				t.Errorf("%s imports %s: only cmd/clipidx parses flags and draws progress bars", pkg, p)
			}
		}
		base := filepath.Base(pkg)
		if base == "util" || base == "utils" || base == "common" || base == "helpers" {
			t.Errorf("package %s: no util/common/helpers packages", pkg)
		}
	}
	for _, m := range []map[string]map[string]bool{src, tests} {
		for pkg, imps := range m {
			if imps["go.etcd.io/bbolt"] && !under(pkg, "store") {
				t.Errorf("%s imports go.etcd.io/bbolt: only store may", pkg)
			}
		}
	}
}

// TestNoCgo keeps the default build free of cgo.
func TestNoCgo(t *testing.T) {
	src, _ := pkgImports(t)
	for pkg, imps := range src {
		if imps["C"] {
			t.Errorf("%s uses cgo (import \"C\"); the default build has none", pkg)
		}
	}
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal(err)
	}
}
