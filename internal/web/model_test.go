package web

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/store"
)

// modelCopy copies the tiny model's files into a new folder dir; with
// other set, one weight changes, so that its weights hash differs.
func modelCopy(t *testing.T, dir string, other bool) {
	t.Helper()
	src := fixtures.TinyModel(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	if !other {
		return
	}
	p := filepath.Join(dir, "model.safetensors")
	b := mustRead(t, p)
	// The first tensor's first bytes, right after the header: the
	// lowest byte of a float32, which stays a float.
	b[8+binary.LittleEndian.Uint64(b)] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openFolder opens the model folder dir lazily on the CPU, as serve does.
func openFolder(t *testing.T, dir string) face {
	t.Helper()
	m, err := clipnpu.Open(dir, clipnpu.OpenOptions{Options: clipnpu.Options{Device: "cpu"}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	return face{m}
}

// buildWith indexes roots into db with the model m.
func buildWith(t *testing.T, db string, m face, reindex bool, roots ...string) {
	t.Helper()
	proc, err := m.Processor(true)
	if err != nil {
		t.Fatal(err)
	}
	info := m.Info()
	opts := index.Options{Encoder: m, Preprocess: proc.Bytes, Identity: m.Identity(true),
		PixelsPerImage: 3 * info.ImageSize * info.ImageSize, Reindex: reindex}
	if _, err := index.Build(context.Background(), db, roots, opts); err != nil {
		t.Fatal(err)
	}
}

// newUpload is a JPEG no index holds: the model embeds it.
func newUpload(t *testing.T, seed byte) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i) * seed
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (e *env) upload(t *testing.T, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+"/api/search/image?k=3", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	code, b, _ := do(t, req)
	return code, b
}

// TestModelOpenedAgainAfterReindex: the model folder replaced by another
// model and the index rebuilt with it (`build --reindex`), a running
// server answered 409 to every text query for good, telling to rebuild
// the index, which had just been done, and 500 to an upload ("changed
// since it was identified"), with no model error in its status. It kept
// the model it had opened. The model is now opened again and both work;
// the old one is closed.
func TestModelOpenedAgainAfterReindex(t *testing.T) {
	root := t.TempDir()
	m1, m2, cur := filepath.Join(root, "m1"), filepath.Join(root, "m2"), filepath.Join(root, "cur")
	modelCopy(t, m1, false)
	modelCopy(t, m2, true)
	if err := os.Symlink(m1, cur); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: photos(t), db: filepath.Join(t.TempDir(), "index.db")}
	buildWith(t, e.db, openFolder(t, cur), false, e.dir)
	var mu sync.Mutex
	var opened []face
	e.start(t, func(o *Options) {
		o.OpenModel = func() (Model, error) {
			f := openFolder(t, cur)
			mu.Lock()
			opened = append(opened, f)
			mu.Unlock()
			return f, nil
		}
	})
	t.Cleanup(func() {
		for _, f := range opened {
			f.Close()
		}
	})
	if code, body, _ := e.get(t, "/api/search?q=a+photo"); code != http.StatusOK {
		t.Fatalf("text search: %d %s", code, body)
	}

	// The model changes in place, and the index is built again with it.
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(m2, cur); err != nil {
		t.Fatal(err)
	}
	buildWith(t, e.db, openFolder(t, cur), true, e.dir)

	if code, body := e.upload(t, newUpload(t, 3)); code != http.StatusOK {
		t.Errorf("upload after the model changed and the index was rebuilt: %d %s, want 200", code, body)
	}
	if code, body, _ := e.get(t, "/api/search?q=a+photo"); code != http.StatusOK {
		t.Errorf("text search after the model changed and the index was rebuilt: %d %s, want 200", code, body)
	}
	if code, body, _ := e.get(t, "/api/status"); code != http.StatusOK || contains(body, "model_error") || !contains(body, `"model_loaded":true`) {
		t.Errorf("status: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(opened) != 2 {
		t.Fatalf("the model was opened %d times, want 2", len(opened))
	}
	if opened[0].Loaded() {
		t.Errorf("the model replaced is still loaded, want it closed")
	}
}

// otherModel is a model whose identity is another model's, whatever
// index it is asked about.
type otherModel struct{ Model }

func (o otherModel) Identity(exif bool) store.Identity {
	id := o.Model.Identity(exif)
	id.Model, id.WeightsHash = "another-model", "0123456789abcdef"
	return id
}

// TestModelStillDiffers: a server whose model differs from the index's
// opens it again once, then answers 409 to a text query and an upload
// alike (an upload answered 500 when the model's folder had changed),
// saying that the server's own --model is used, and opens it no more for
// that index.
func TestModelStillDiffers(t *testing.T) {
	var mu sync.Mutex
	opens := 0
	e := newEnv(t, func(o *Options) {
		o.OpenModel = func() (Model, error) {
			mu.Lock()
			opens++
			mu.Unlock()
			return otherModel{tiny(t)}, nil
		}
	})
	for i := range 2 {
		code, body, _ := e.get(t, "/api/search?q=a+photo")
		if code != http.StatusConflict || !contains(body, "--model the index was built with") {
			t.Errorf("text search %d: %d %s, want 409 naming the server's --model", i+1, code, body)
		}
		code, body = e.upload(t, newUpload(t, byte(5+i)))
		if code != http.StatusConflict || !contains(body, "--model the index was built with") {
			t.Errorf("upload %d: %d %s, want 409 naming the server's --model", i+1, code, body)
		}
	}
	if _, body, _ := e.get(t, "/api/status"); !contains(body, `"model_error":"index was built with a different model`) {
		t.Errorf("status: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if opens != 2 {
		t.Errorf("the model was opened %d times, want 2 (once, and once again for the index)", opens)
	}
	if strings.Contains(e.srv.modelErr, "changed since it was identified") {
		t.Errorf("model error %q", e.srv.modelErr)
	}
}
