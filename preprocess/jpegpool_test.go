package preprocess

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestJPEGPoolNoLeak decodes JPEGs of different layouts one after the
// other through the reused buffers and requires each to match its decoding
// with empty pools: nothing of an earlier photo may show through.
func TestJPEGPoolNoLeak(t *testing.T) {
	var files [][]byte
	for _, q := range []int{95, 40} {
		for _, sz := range [][2]int{{300, 200}, {123, 77}, {64, 300}} {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, photoLike(sz[0], sz[1]), &jpeg.Options{Quality: q}); err != nil {
				t.Fatal(err)
			}
			files = append(files, buf.Bytes())
		}
	}
	// Progressive files need zeroed coefficient buffers (Go's own test
	// JPEGs, when this toolchain has them).
	for _, name := range []string{"video-001.progressive.jpeg", "video-005.gray.q50.progressive.jpeg"} {
		if b, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "image", "testdata", name)); err == nil {
			files = append(files, b)
		}
	}
	fresh := make([][]byte, len(files))
	for i, f := range files {
		jpegArenas, jpegRGBs = sync.Pool{}, sync.Pool{}
		img, _, err := decodeJPEGImage(f, "fresh.jpg", DefaultMaxPixels)
		if err != nil {
			t.Fatal(err)
		}
		fresh[i] = img.(*packedRGB).Pix
	}
	for round := range 3 {
		for i := range files {
			j := (i*7 + round) % len(files) // a different neighbour each round
			img, _, err := decodeJPEGImage(files[j], "reused.jpg", DefaultMaxPixels)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(img.(*packedRGB).Pix, fresh[j]) {
				t.Fatalf("file %d decoded after others differs from its fresh decoding", j)
			}
			releaseDecoded(img)
		}
	}
}

// TestProcessorJPEGBufferNotShared runs JPEG and PNG photos through one
// Processor from several goroutines: the JPEG decoder's released RGB must
// never also serve as the Processor's own buffer for another format.
func TestProcessorJPEGBufferNotShared(t *testing.T) {
	src := photoLike(320, 240)
	var jb, pb bytes.Buffer
	if err := jpeg.Encode(&jb, src, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(&pb, src); err != nil {
		t.Fatal(err)
	}
	p := New(DefaultConfig(), Options{})
	want := map[string][]float32{}
	for name, data := range map[string][]byte{"a.jpg": jb.Bytes(), "a.png": pb.Bytes()} {
		out, err := New(DefaultConfig(), Options{}).Bytes(data, name)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = out
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				name, data := "a.jpg", jb.Bytes()
				if (i+g)%2 == 1 {
					name, data = "a.png", pb.Bytes()
				}
				out, err := p.Bytes(data, name)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(out, want[name]) {
					t.Errorf("%s: tensor differs when decoded beside others", name)
					return
				}
			}
		}()
	}
	wg.Wait()
}
