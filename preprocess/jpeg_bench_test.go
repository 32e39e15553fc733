package preprocess

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pillowPython is the interpreter with Pillow: Debian's python3-pil lives
// under /usr/bin/python3, which a pyenv shim may hide.
func pillowPython() (string, bool) {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import PIL").Run() == nil {
			return py, true
		}
	}
	return "", false
}

// pillowJPEGs writes the 12 MP photo-like picture as JPEG at quality 90
// through Pillow, once 4:2:0 and once 4:4:4, as a camera or an editor
// would, and returns their paths.
func pillowJPEGs(dir string) (map[string]string, error) {
	py, ok := pillowPython()
	if !ok {
		return nil, fmt.Errorf("no python3 with Pillow (apt install python3-pil)")
	}
	m := photoLike(4000, 3000)
	ppm := filepath.Join(dir, "photo.ppm")
	buf := []byte(fmt.Sprintf("P6\n%d %d\n255\n", 4000, 3000))
	for i := 0; i < len(m.Pix); i += 4 {
		buf = append(buf, m.Pix[i], m.Pix[i+1], m.Pix[i+2])
	}
	if err := os.WriteFile(ppm, buf, 0o644); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, sub := range map[string]string{"420": "2", "444": "0"} {
		p := filepath.Join(dir, name+".jpg")
		cmd := exec.Command(py, "testdata/pillow_jpeg_bench.py", "encode", ppm, p, sub)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("pillow encode: %v: %s", err, msg)
		}
		out[name] = p
	}
	return out, nil
}

// pillowTimer is a Python process that times Pillow's decodes on request.
type pillowTimer struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Scanner
}

func startPillow(b *testing.B) *pillowTimer {
	py, _ := pillowPython()
	cmd := exec.Command(py, "testdata/pillow_jpeg_bench.py")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return &pillowTimer{cmd, bufio.NewWriter(stdin), bufio.NewScanner(stdout)}
}

// decode has Pillow decode path n times and returns its CPU time.
func (p *pillowTimer) decode(b *testing.B, path string, n int) time.Duration {
	fmt.Fprintf(p.in, "%s %d\n", path, n)
	if err := p.in.Flush(); err != nil {
		b.Fatal(err)
	}
	if !p.out.Scan() {
		b.Fatalf("pillow timer died: %v", p.out.Err())
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(p.out.Text()), 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(s * 1e9)
}

// djpegCPU is the CPU time of one run of libjpeg-turbo's own djpeg on
// path, writing PPM to nowhere: libjpeg-turbo without Pillow's overhead
// (and with a process start).
func djpegCPU(b *testing.B, djpeg, path string) time.Duration {
	cmd := exec.Command(djpeg, "-outfile", os.DevNull, path)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("djpeg: %v: %s", err, msg)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkJPEGVersusPillow decodes the same 12 MP JPEGs with our decoder
// and with Pillow (libjpeg-turbo), one decode each in turn so that both see
// the same machine, and reports the CPU time of each and their ratio
// (ours/Pillow). It needs Debian's python3-pil; where libjpeg-turbo's djpeg
// is installed it also reports the ratio to that.
func BenchmarkJPEGVersusPillow(b *testing.B) {
	files, err := pillowJPEGs(b.TempDir())
	if err != nil {
		b.Skip(err)
	}
	for _, name := range []string{"420", "444"} {
		b.Run(name, func(b *testing.B) {
			data, err := os.ReadFile(files[name])
			if err != nil {
				b.Fatal(err)
			}
			pil := startPillow(b)
			pil.decode(b, files[name], 1) // warm up the interpreter
			// The set-up's garbage (a 48 MB picture and its copies) is
			// collected now, not in the first sub-benchmark's decodes: it
			// made 4:2:0 come out slower than 4:4:4.
			runtime.GC()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			djpeg, _ := exec.LookPath("djpeg")
			var ours, theirs, raw time.Duration
			for range b.N {
				t0 := processCPU()
				img, _, err := decodeJPEGImage(data, "bench.jpg", DefaultMaxPixels)
				if err != nil {
					b.Fatal(err)
				}
				releaseDecoded(img)
				ours += processCPU() - t0
				b.StopTimer()
				theirs += pil.decode(b, files[name], 1)
				if djpeg != "" {
					raw += djpegCPU(b, djpeg, files[name])
				}
				b.StartTimer()
			}
			if djpeg != "" {
				b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "djpeg-cpu-ns/op")
				b.ReportMetric(float64(ours)/float64(raw), "ours/djpeg")
			}
			b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "pillow-cpu-ns/op")
			b.ReportMetric(float64(ours)/float64(theirs), "ours/pillow")
		})
	}
}

// BenchmarkJPEGOwnDecode12MP is our decoder alone on a 12 MP 4:2:0 JPEG,
// for profiling without Python.
func BenchmarkJPEGOwnDecode12MP(b *testing.B) {
	data := jpeg12()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuTimer(b)()
	for range b.N {
		img, _, err := decodeJPEGImage(data, "bench.jpg", DefaultMaxPixels)
		if err != nil {
			b.Fatal(err)
		}
		releaseDecoded(img)
	}
}
