package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/damage"
	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/video/videotest"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// TestSearchRejectsNonFiniteThreshold: --threshold NaN or ±Inf is a usage
// error (exit 2) before any model or index is opened; a finite one is not.
func TestSearchRejectsNonFiniteThreshold(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "i.db")
	for _, tc := range []struct {
		threshold string
		bad       bool
	}{
		{"NaN", true},
		{"inf", true},
		{"-Inf", true},
		{"0.25", false},
	} {
		_, errs, code := e2eRun(t, bin, "--db", db, "--model", t.TempDir(), "search", "--threshold", tc.threshold, "cat")
		rejected := code == 2 && strings.Contains(errs, "--threshold")
		if rejected != tc.bad {
			t.Errorf("--threshold %s: exit %d, %q; want rejected=%v", tc.threshold, code, errs, tc.bad)
		}
	}
}

// TestSearchQualifiersEndToEnd: qualifiers in the query on a built index:
// a qualifier alone lists records (date<TAB>path, the file's time where
// it has no capture date; no score in --json); with
// a text it keeps matching results only; a malformed or unknown qualifier
// is a usage error naming it (exit 2) and never a text; --sort score with
// no term to score by is refused.
func TestSearchQualifiersEndToEnd(t *testing.T) {
	model := fixtures.TinyModel(t)
	bin := e2eBinary(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	run := func(args ...string) (string, string, int) {
		return e2eRun(t, bin, append(slices.Clone(g), args...)...)
	}
	if _, errs, code := run("build", photos); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errs)
	}
	entries, _ := os.ReadDir(photos)
	out, errs, code := run("search", "kind:photo", "-k", "100")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(entries) {
		t.Fatalf("search kind:photo: exit %d, %d lines for %d files: %q %s", code, len(lines), len(entries), out, errs)
	}
	for _, l := range lines {
		// The fixtures carry no capture date: each is listed with its
		// file's modification time, on the local clock.
		date, path, _ := strings.Cut(l, "\t")
		st, err := os.Stat(path)
		if err != nil || !strings.HasPrefix(path, photos) {
			t.Errorf("listing line %q: not a file of %s (%v)", l, photos, err)
			continue
		}
		if want := st.ModTime().In(time.Local).Format(time.DateTime); date != want {
			t.Errorf("listing line %q, want %s<TAB>path (the file's time)", l, want)
		}
	}
	out, _, _ = run("search", "kind:photo", "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("--json listing %q: %v", out, err)
	}
	if _, has := listed[0]["score"]; has {
		t.Errorf("a listing has no score: %s", out)
	}
	if out, _, code = run("search", "a cat kind:photo", "--json"); code != 0 || !strings.Contains(out, `"score"`) {
		t.Errorf("text with a qualifier: exit %d %s", code, out)
	}
	if out, _, code = run("search", "a cat kind:video"); code != 0 || out != "" {
		t.Errorf("kind:video on photos: exit %d, %q; want nothing", code, out)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"search", "a cat year:19"}, []string{`"year:19"`, "four digits"}},
		{[]string{"search", "a cat yaer:2019"}, []string{`"yaer:2019"`, "no qualifier"}},
		{[]string{"search", "--", "-place:paris"}, []string{`"-place:paris"`, "negated"}},
		{[]string{"search", "--sort", "score", "kind:photo"}, []string{"--sort score"}},
		{[]string{"search", "--sort", "newest", "cat"}, []string{"--sort", `"newest"`}},
	} {
		_, errs, code := run(tc.args...)
		for _, w := range tc.want {
			if code != 2 || !strings.Contains(errs, w) {
				t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tc.args, code, errs, w)
			}
		}
	}
}

// TestSearchOutputFlagsConflict: flags that choose different outputs are
// refused as usage errors (exit 2) before the index is opened, as
// --preview with --json always was; --paths-only with -0 agree.
func TestSearchOutputFlagsConflict(t *testing.T) {
	g := []string{"--db", filepath.Join(t.TempDir(), "none.db"), "--model", t.TempDir(), "search"}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--json", "--paths-only"}, "--json and --paths-only"},
		{[]string{"--json", "-0"}, "--json and --null"},
		{[]string{"--long", "--json"}, "--long"},
		{[]string{"--long", "--paths-only"}, "--long"},
		{[]string{"--preview", "--json"}, "--preview"},
	} {
		_, errs, code := runCLI(t, append(append(slices.Clone(g), tc.flags...), "cat")...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tc.flags, code, errs, tc.want)
		}
	}
	// Agreeing flags get past the check to the missing index (exit 1).
	if _, errs, code := runCLI(t, append(slices.Clone(g), "--paths-only", "-0", "cat")...); code != 1 || strings.Contains(errs, "choose") {
		t.Errorf("--paths-only -0: exit %d, %q; want the index's error", code, errs)
	}
}

// TestSearchPathsOnlyOncePerFile: --frames lists a video's frames, but
// --paths-only and -0 print each file once, where it first ranks.
func TestSearchPathsOnlyOncePerFile(t *testing.T) {
	model := fixtures.TinyModel(t)
	tools := videotest.Tools(t)
	root := t.TempDir()
	dir := filepath.Join(root, "videos")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	clip := filepath.Join(dir, "cuts.mp4")
	videotest.Cuts(t, tools, clip, "64x48", 3, "red", "green", "blue")
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", "--video-interval", "2s", dir)...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	if out, _, _ := runCLI(t, append(slices.Clone(g), "search", "--frames", "kind:video")...); strings.Count(out, clip+"#t=") < 2 {
		t.Fatalf("--frames lists %q, want several frames of %s", out, clip)
	}
	for _, tc := range []struct{ flag, want string }{
		{"--paths-only", clip + "\n"},
		{"-0", clip + "\x00"},
	} {
		out, errs, code := runCLI(t, append(slices.Clone(g), "search", "--frames", tc.flag, "kind:video")...)
		if code != 0 || out != tc.want {
			t.Errorf("--frames %s: exit %d, %q %s; want %q", tc.flag, code, out, errs, tc.want)
		}
	}
}

// exiftool finds exiftool or skips (fails on CI).
func exiftool(t *testing.T) string {
	t.Helper()
	tool, err := exec.LookPath("exiftool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
		}
		t.Skip("exiftool not found (Debian: apt-get install libimage-exiftool-perl)")
	}
	return tool
}

// TestSearchJSONExact: search --json prints GPS without float noise (an
// EXIF rational gives 2.3522000000000003), marks a "taken" without an
// offset, and gives the exact bytes of a path that is not UTF-8.
func TestSearchJSONExact(t *testing.T) {
	tool := exiftool(t)
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.MkdirAll(photos, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(model, "images", "wide_300x200.png")
	paris := filepath.Join(photos, "paris.jpg")
	writeJPEG(t, paris)
	if b, err := exec.Command(tool, "-q", "-overwrite_original", "-DateTimeOriginal=2019:07:14 01:00:00",
		"-GPSLatitude=48.8566", "-GPSLatitudeRef=N", "-GPSLongitude=179.99", "-GPSLongitudeRef=W", "-GPSAltitude=35.3", paris).CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v\n%s", err, b)
	}
	bad := filepath.Join(photos, "bad\xff\xfename.png")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g := []string{"--db", filepath.Join(root, "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", photos)...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	out, errs, code := runCLI(t, append(slices.Clone(g), "search", "--json", "a photo")...)
	var hits []struct {
		Path               string
		PathBytes          []byte `json:"path_bytes"`
		Taken              string
		TakenOffsetUnknown bool `json:"taken_offset_unknown"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 2 {
		t.Fatalf("search --json: exit %d %s %s", code, out, errs)
	}
	if want := `"gps":{"lat":48.8566,"lon":-179.99,"alt":35.3}`; !strings.Contains(out, want) {
		t.Errorf("search --json: %s\nwant %s", out, want)
	}
	for _, h := range hits {
		switch {
		case strings.HasSuffix(h.Path, "paris.jpg"):
			if h.Taken != "2019-07-14T01:00:00" || !h.TakenOffsetUnknown || h.PathBytes != nil {
				t.Errorf("paris.jpg: %+v; want the wall clock marked taken_offset_unknown, no path_bytes", h)
			}
		case string(h.PathBytes) != bad || !strings.Contains(h.Path, "\ufffd"):
			t.Errorf("%q: path_bytes %q, want %q", h.Path, h.PathBytes, bad)
		case h.TakenOffsetUnknown:
			t.Errorf("%q: taken %s has an offset, yet taken_offset_unknown", h.Path, h.Taken)
		}
	}
	// Plain text and -0 stay byte-exact.
	if out, _, _ := runCLI(t, append(slices.Clone(g), "search", "-0", "a photo")...); !strings.Contains(out, bad+"\x00") {
		t.Errorf("-0: %q, want %q", out, bad)
	}
}

// writeJPEG writes a small JPEG at p.
func writeJPEG(t *testing.T, p string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(f, img, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSearchUnder: --under resolves symbolic links both ways (a link to
// an indexed folder, and the real folder of one indexed through a link),
// and says on stderr when no indexed file lies under it, and when it
// does not exist, keeping exit 0 with no results like any empty search.
func TestSearchUnder(t *testing.T) {
	model := fixtures.TinyModel(t)
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(photos)
	link := filepath.Join(root, "link")
	if err := os.Symlink(photos, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ indexed, under, prefix string }{
		{photos, link, photos + "/"}, // a link to the indexed folder
		{link, photos, link + "/"},   // the real folder of one indexed through a link
	} {
		g := []string{"--db", filepath.Join(t.TempDir(), "i.db"), "--model", model, "--device", "reference"}
		if _, errs, code := runCLI(t, append(slices.Clone(g), "build", tc.indexed)...); code != 0 {
			t.Fatalf("build %s: exit %d %s", tc.indexed, code, errs)
		}
		out, errs, code := runCLI(t, append(slices.Clone(g), "search", "--paths-only", "-k", "100", "--under", tc.under, "a photo")...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != len(entries) || !strings.HasPrefix(lines[0], tc.prefix) || errs != "" {
			t.Errorf("built %s, --under %s: exit %d, %q %s; want its %d files as indexed", tc.indexed, tc.under, code, out, errs, len(entries))
		}
		for _, c := range []struct{ under, want string }{
			{filepath.Join(root, "nowhere"), "it does not exist, and no indexed file is at or under it"},
			{t.TempDir(), "no indexed file is at or under it"},
		} {
			out, errs, code := runCLI(t, append(slices.Clone(g), "search", "--under", c.under, "a photo")...)
			if code != 0 || out != "" || !strings.Contains(errs, "--under "+c.under+": "+c.want) {
				t.Errorf("--under %s: exit %d, %q, stderr %q; want exit 0, nothing, and %q", c.under, code, out, errs, c.want)
			}
		}
	}
}

// TestSearchTermsCancelIsUsageError: terms that cancel out are a query
// error, exit 2 like one that does not parse.
func TestSearchTermsCancelIsUsageError(t *testing.T) {
	model := fixtures.TinyModel(t)
	g := []string{"--db", filepath.Join(t.TempDir(), "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", filepath.Join(model, "images"))...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	for _, q := range [][]string{{"+1e-45:red"}, {"red", "-red"}} {
		_, errs, code := runCLI(t, append(append(slices.Clone(g), "search", "--"), q...)...)
		if code != 2 || !strings.Contains(errs, "cancel") {
			t.Errorf("search -- %q: exit %d, %q; want exit 2, the terms cancel out", q, code, errs)
		}
	}
}

// TestSearchEmptyImageIsUsageError: an empty --image is a usage error, exit 2,
// as an empty term is, not a search for an empty text.
func TestSearchEmptyImageIsUsageError(t *testing.T) {
	model := fixtures.TinyModel(t)
	g := []string{"--db", filepath.Join(t.TempDir(), "i.db"), "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", filepath.Join(model, "images"))...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"--image", ""}, {"red", "--image", ""}} {
		out, errs, code := runCLI(t, append(append(slices.Clone(g), "search"), args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, "--image needs a file") {
			t.Errorf("search %q: exit %d, %q, stderr %q; want exit 2 naming --image", args, code, out, errs)
		}
	}
}

// TestPlainLineShowsControlCharacters: a path with a newline or an escape
// sequence prints on one line, its control characters as \xNN; other
// bytes, invalid UTF-8 included, as they are.
func TestPlainLineShowsControlCharacters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/p/a\nb.jpg", `/p/a\x0ab.jpg`},
		{"/p/\x1b[31mred.jpg", `/p/\x1b[31mred.jpg`},
		{"/p/tab\there\x7f\u0085.jpg", `/p/tab\x09here\x7f\x85.jpg`},
		{"/p/caf\xe9 é.jpg", "/p/caf\xe9 é.jpg"},
	} {
		if got := shown(tc.in); got != tc.want {
			t.Errorf("shown(%q) = %q, want %q", tc.in, got, tc.want)
		}
		h := hit{Result: search.Result{Path: tc.in, Score: 0.5}}
		for _, l := range []string{h.text(false), h.text(true)} {
			if strings.ContainsAny(l, "\n\x1b") || !strings.Contains(l, tc.want) {
				t.Errorf("line of %q: %q, want one line holding %q", tc.in, l, tc.want)
			}
		}
	}
}

// TestForgetAndMergeWaitForBuild: forget and merge, finding a build that
// holds the index, wait for it as build does, saying once who holds it;
// with --no-wait they fail at once, naming it.
func TestForgetAndMergeWaitForBuild(t *testing.T) {
	model := fixtures.TinyModel(t)
	db := filepath.Join(t.TempDir(), "i.db")
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	images := filepath.Join(model, "images")
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", images)...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	part := filepath.Join(t.TempDir(), "part.db")
	copyFile(t, db, part)
	id := identityOf(t, db)
	for _, args := range [][]string{{"forget", filepath.Join(images, "noise_257x231.png")}, {"merge", db, part}} {
		w, err := store.OpenWriter(db, id, store.WriterOptions{Command: "clipidx watch (test)"})
		if err != nil {
			t.Fatal(err)
		}
		_, errs, code := runCLI(t, append(append(slices.Clone(g), args...), "--no-wait")...)
		if code == 0 || !strings.Contains(errs, "clipidx watch (test)") {
			t.Errorf("%s --no-wait while a build holds the index: exit %d, %q; want a failure naming the holder", args[0], code, errs)
		}
		type result struct {
			errs string
			code int
		}
		done := make(chan result, 1)
		go func() {
			_, errs, code := runCLI(t, append(slices.Clone(g), args...)...)
			done <- result{errs, code}
		}()
		time.Sleep(1500 * time.Millisecond)
		select {
		case r := <-done:
			t.Fatalf("%s returned while a build holds the index: exit %d, %q; want it to wait", args[0], r.code, r.errs)
		default:
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.code != 0 || strings.Count(res.errs, "waiting: ") != 1 || !strings.Contains(res.errs, "clipidx watch (test)") {
			t.Errorf("%s after the build ended: exit %d, %q; want success after one waiting line naming the holder", args[0], res.code, res.errs)
		}
	}
}

// TestSearchLeavesOutDamagedVector: with a bit flipped in the index where
// a photo's vector lies, `search --image PHOTO` listed that photo first
// at a score near 1000 (its stored vector the query and the result).
// Now the model embeds the photo, the damaged vector is left out, and
// stderr names its file and what to do.
func TestSearchLeavesOutDamagedVector(t *testing.T) {
	model := fixtures.TinyModel(t)
	photos := filepath.Join(t.TempDir(), "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "i.db")
	g := []string{"--db", db, "--model", model, "--device", "reference"}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "build", photos)...); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	p := filepath.Join(photos, "wide_300x200.png")
	damage.Vector(t, db, p)
	out, errs, code := runCLI(t, append(slices.Clone(g), "search", "--json", "--image", p)...)
	var hits []struct {
		Path  string  `json:"path"`
		Score float32 `json:"score"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
		t.Fatalf("search: exit %d, %s, stderr %s", code, out, errs)
	}
	for _, h := range hits {
		if h.Path == p || h.Score > 1.001 {
			t.Errorf("result %s scored %v", h.Path, h.Score)
		}
	}
	if !strings.Contains(errs, p+" is damaged") || !strings.Contains(errs, "--reindex") {
		t.Errorf("stderr %q, want the damaged file named and --reindex", errs)
	}
	if _, errs, code := runCLI(t, append(slices.Clone(g), "status", "--check")...); code == 0 || !strings.Contains(errs, "want 1") {
		t.Errorf("status --check: exit %d, stderr %q; want the damaged vector reported", code, errs)
	}
}

// TestSearchImageUnsupportedPreprocessing: a model folder whose
// preprocessor_config.json asks for a resampling clipidx does not do was
// reported, on a search by an image not in the index, as "index was built
// with a different model or settings ... rebuild with --reindex" (and
// --reindex then failed on the real error). Now the real error is said.
func TestSearchImageUnsupportedPreprocessing(t *testing.T) {
	model := fixtures.TinyModel(t)
	db := filepath.Join(t.TempDir(), "i.db")
	if _, errs, code := runCLI(t, "--db", db, "--model", model, "--device", "reference", "build", filepath.Join(model, "images")); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	edited := filepath.Join(t.TempDir(), "m")
	if err := os.CopyFS(edited, os.DirFS(model)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(edited, "preprocessor_config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b2 := regexp.MustCompile(`"resample":\s*3`).ReplaceAll(b, []byte(`"resample": 2`))
	if bytes.Equal(b, b2) {
		t.Fatal("no resample 3 in the fixture's preprocessor_config.json")
	}
	if err := os.WriteFile(cfg, b2, 0o644); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "q.jpg")
	writeJPEG(t, q)
	_, errs, code := runCLI(t, "--db", db, "--model", edited, "--device", "reference", "search", "--image", q)
	if code == 0 || !strings.Contains(errs, "resample 2 is not supported") || strings.Contains(errs, "different model") {
		t.Errorf("search --image: exit %d, stderr %q; want the resampling named", code, errs)
	}
}

// TestEditedConfigIsAnotherModel: config.json's activation, layer-norm
// epsilon, head count and EOS id change the vectors without changing the
// weights. A model folder whose config.json was edited (a quick_gelu for
// gelu conversion mistake) is refused against the index, by search and by
// build, rather than mixing or ranking vectors of two models.
func TestEditedConfigIsAnotherModel(t *testing.T) {
	model := fixtures.TinyModel(t)
	edited := filepath.Join(t.TempDir(), "m")
	if err := os.CopyFS(edited, os.DirFS(model)); err != nil {
		t.Fatal(err)
	}
	photos := filepath.Join(t.TempDir(), "photos")
	if err := os.CopyFS(photos, os.DirFS(filepath.Join(model, "images"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "i.db")
	if _, errs, code := runCLI(t, "--db", db, "--model", edited, "build", photos); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	cfg := filepath.Join(edited, "config.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b2 := regexp.MustCompile(`"hidden_act":\s*"gelu"`).ReplaceAll(b, []byte(`"hidden_act": "quick_gelu"`))
	if bytes.Equal(b, b2) {
		t.Fatal(`no "hidden_act": "gelu" in the fixture's config.json`)
	}
	if err := os.WriteFile(cfg, b2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runCLI(t, "--db", db, "--model", edited, "search", "a cat"); code == 0 || !strings.Contains(errs, "model configuration") {
		t.Errorf("search with the edited config: exit %d, stderr %q; want the configuration named", code, errs)
	}
	writeJPEG(t, filepath.Join(photos, "new.jpg"))
	if _, errs, code := runCLI(t, "--db", db, "--model", edited, "build", photos); code == 0 || !strings.Contains(errs, "model configuration") {
		t.Errorf("build with the edited config: exit %d, stderr %q; want the configuration named", code, errs)
	}
	// The folder as it was is the index's model again.
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runCLI(t, "--db", db, "--model", edited, "search", "a cat"); code != 0 {
		t.Errorf("search with the config as built: exit %d %s", code, errs)
	}
}
