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
	"time"
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
		jpegArenas.reset()
		jpegRGBs.reset()
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

// TestSharedPool checks what sync.Pool did not give the decoder: a buffer
// released on one OS thread is taken back on another; the pool keeps at
// most GOMAXPROCS+2 buffers; and it lets them go once a garbage
// collection passes with the pool unused, and not before.
func TestSharedPool(t *testing.T) {
	jpegRGBs.reset()
	t.Cleanup(jpegRGBs.reset)
	buf := make([]byte, 1<<20)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // this goroutine's thread exits with it
		releaseDecoded(&packedRGB{Pix: buf})
		close(done)
	}()
	<-done
	got := make(chan []byte)
	go func() {
		runtime.LockOSThread()
		got <- rgbOutput(len(buf))
	}()
	if b := <-got; &b[0] != &buf[0] {
		t.Fatal("a buffer released on one thread was not taken back on another")
	}

	limit := runtime.GOMAXPROCS(0) + 2
	for range limit + 3 {
		jpegRGBs.put(make([]byte, 16))
	}
	jpegRGBs.mu.Lock()
	held := len(jpegRGBs.items)
	jpegRGBs.mu.Unlock()
	if held != limit {
		t.Fatalf("pool holds %d buffers, want at most %d", held, limit)
	}
	// Used since the last collection: the next one keeps the buffers, a
	// second one with no use in between lets them go.
	waitGC := func() {
		t.Helper()
		seen := gcSeen.Load()
		for deadline := time.Now().Add(10 * time.Second); gcSeen.Load() == seen; {
			if time.Now().After(deadline) {
				t.Fatal("no collection was seen in 10 s")
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	jpegRGBs.mu.Lock()
	jpegRGBs.used = true
	jpegRGBs.mu.Unlock()
	waitGC()
	jpegRGBs.mu.Lock()
	kept := len(jpegRGBs.items)
	jpegRGBs.mu.Unlock()
	if kept != limit {
		t.Fatalf("a collection right after use left %d buffers, want %d", kept, limit)
	}
	waitGC()
	jpegRGBs.mu.Lock()
	left := len(jpegRGBs.items)
	jpegRGBs.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d buffers left after a collection with the pool unused, want 0", left)
	}
}
