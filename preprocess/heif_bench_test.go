package preprocess

import (
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/rss"
)

var heic12 struct {
	once sync.Once
	data []byte
	err  error
}

// heic12MP encodes photoLike(4000, 3000) with heif-enc once per process
// (x265 preset "fast": about 10 s; the decode does not depend on it).
func heic12MP(b *testing.B) []byte {
	b.Helper()
	enc := heifNeedTool(b, "heif-enc")
	heic12.once.Do(func() {
		dir, err := os.MkdirTemp("", "heic12")
		if err != nil {
			heic12.err = err
			return
		}
		defer os.RemoveAll(dir)
		src, out := filepath.Join(dir, "p.png"), filepath.Join(dir, "p.heic")
		f, err := os.Create(src)
		if err != nil {
			heic12.err = err
			return
		}
		pe := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := pe.Encode(f, photoLike(4000, 3000)); err != nil {
			heic12.err = err
		}
		f.Close()
		if heic12.err != nil {
			return
		}
		if msg, err := exec.Command(enc, "-q", "80", "-p", "preset=fast", src, "-o", out).CombinedOutput(); err != nil {
			heic12.err = fmt.Errorf("heif-enc: %w\n%s", err, msg)
			return
		}
		heic12.data, heic12.err = os.ReadFile(out)
	})
	if heic12.err != nil {
		b.Fatal(heic12.err)
	}
	return heic12.data
}

// BenchmarkHEIC12MP is the whole path for a 12-megapixel HEIC (one HEVC
// image, 4:2:0): WebAssembly libde265, colour conversion, resize, crop,
// normalise. peak-RSS-MB is the process's high-water mark after the run.
func BenchmarkHEIC12MP(b *testing.B) {
	data := heic12MP(b)
	p := New(DefaultConfig(), Options{})
	if _, err := p.Bytes(data, "bench.heic"); err != nil { // compiles the module
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		if _, err := p.Bytes(data, "bench.heic"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if peak, err := rss.Peak(); err == nil {
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	}
}
