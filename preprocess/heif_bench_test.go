package preprocess

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/clipidx/clipidx/internal/rss"
)

// heifEncFast encodes img with heif-enc (quality 80, x265 preset fast)
// through a PNG in dir.
func heifEncFast(enc, dir string, img image.Image) ([]byte, error) {
	src, out := filepath.Join(dir, "p.png"), filepath.Join(dir, "p.heic")
	f, err := os.Create(src)
	if err != nil {
		return nil, err
	}
	pe := png.Encoder{CompressionLevel: png.BestSpeed}
	err = pe.Encode(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if msg, err := exec.Command(enc, "-q", "80", "-p", "preset=fast", src, "-o", out).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("heif-enc: %w\n%s", err, msg)
	}
	return os.ReadFile(out)
}

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
		heic12.data, heic12.err = heifEncFast(enc, dir, photoLike(4000, 3000))
	})
	if heic12.err != nil {
		b.Fatal(heic12.err)
	}
	return heic12.data
}

// BenchmarkHEIC12MP is the whole path for a 12-megapixel HEIC (one HEVC
// image, 4:2:0): the HEVC decode (libde265 as WebAssembly, or ffmpeg),
// colour conversion, resize, crop, normalise. cpu-ns/op counts ffmpeg's
// CPU too; peak-RSS-MB is this process's high-water mark after the run.
func BenchmarkHEIC12MP(b *testing.B) { benchHEIC(b, heic12MP(b), false) }

// BenchmarkHEICStoppable12MP decodes the same file as serve shows a
// photo: DecodeReduced with a context that can be cancelled, which runs
// the WebAssembly decoder's stoppable build (see moduleFor) and ffmpeg as
// a process it can kill.
func BenchmarkHEICStoppable12MP(b *testing.B) { benchHEIC(b, heic12MP(b), true) }

// BenchmarkHEICGrid12MP is BenchmarkHEIC12MP for an iPhone's layout: a
// 4032x3024 grid of 8x6 HEVC tiles of 512x512.
func BenchmarkHEICGrid12MP(b *testing.B) { benchHEIC(b, heicGrid12MP(b), false) }

// BenchmarkHEICFile is BenchmarkHEIC12MP for the file -heic names (a
// phone's photo, say); it is skipped without one.
func BenchmarkHEICFile(b *testing.B) {
	if *heicFile == "" {
		b.Skip("no -heic FILE")
	}
	data, err := os.ReadFile(*heicFile)
	if err != nil {
		b.Fatal(err)
	}
	benchHEIC(b, data, false)
}

var heicFile = flag.String("heic", "", "a HEIC file for BenchmarkHEICFile")

func benchHEIC(b *testing.B, data []byte, stoppable bool) {
	ff, _ := exec.LookPath("ffmpeg")
	for _, dec := range []struct{ name, ffmpeg string }{{"libheif", ""}, {"ffmpeg", ff}} {
		b.Run(dec.name, func(b *testing.B) {
			if dec.name == "ffmpeg" && ff == "" {
				b.Skip("ffmpeg not found")
			}
			if dec.ffmpeg == "" {
				UseFFmpeg(nil)
			} else {
				UseFFmpeg(func() string { return dec.ffmpeg })
			}
			defer UseFFmpeg(nil)
			p := New(DefaultConfig(), Options{})
			decode := func() error {
				if stoppable {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					_, err := DecodeReduced(ctx, data, "bench.heic", 1<<20)
					return err
				}
				_, err := p.Bytes(data, "bench.heic")
				return err
			}
			if err := decode(); err != nil { // compiles the module
				b.Fatal(err)
			}
			n := hevcFFmpegDecodes.Load()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			stop := cpuTimer(b)
			for range b.N {
				if err := decode(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop()
			if got := hevcFFmpegDecodes.Load() - n; (dec.ffmpeg != "") != (got == int64(b.N)) {
				b.Fatalf("ffmpeg decoded %d of %d", got, b.N)
			}
			if peak, err := rss.Peak(); err == nil {
				b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
			}
		})
	}
}

var heicGrid struct {
	once sync.Once
	data []byte
	err  error
}

// heicGrid12MP encodes the 48 tiles of photoLike(4096, 3072) with heif-enc
// (quality 80, preset fast) once per process and assembles the grid,
// cropped to 4032x3024 as an iPhone's.
func heicGrid12MP(b *testing.B) []byte {
	b.Helper()
	enc := heifNeedTool(b, "heif-enc")
	heicGrid.once.Do(func() {
		dir, err := os.MkdirTemp("", "heicgrid")
		if err != nil {
			heicGrid.err = err
			return
		}
		defer os.RemoveAll(dir)
		const tile = 512
		full := photoLike(8*tile, 6*tile)
		var tiles [][2][]byte
		for k := 0; k < 48; k++ {
			x, y := k%8*tile, k/8*tile
			data, err := heifEncFast(enc, dir, full.SubImage(image.Rect(x, y, x+tile, y+tile)))
			if err != nil {
				heicGrid.err = err
				return
			}
			hvcC, coded := heifPrimaryCoded(b, data)
			tiles = append(tiles, [2][]byte{hvcC, coded})
		}
		heicGrid.data = buildGrid(tiles, 6, 8, tile, tile, 4032, 3024)
	})
	if heicGrid.err != nil {
		b.Fatal(heicGrid.err)
	}
	return heicGrid.data
}
