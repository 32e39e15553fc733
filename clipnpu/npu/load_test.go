package npu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/xdna"
)

// fakeNPU is a Backend standing for a real NPU in routing tests.
type fakeNPU struct{ core.Backend }

func (fakeNPU) Info() core.Info { return core.Info{Device: "npu"} }
func (fakeNPU) Close() error    { return nil }

// TestLoadBundleRouting runs Load on an exported bundle for every device
// with the NPU hook absent, failing without a device, failing otherwise and
// succeeding: only ErrNoDevice on auto falls back to the emulated replay;
// npu never does; reference refuses bundles.
func TestLoadBundleRouting(t *testing.T) {
	saved := Opener(OpenDevice)
	var openNPU Opener
	_, dir := exportRandom(t, npuTestConfig(), 1)

	noDev := func(string, core.Options) (core.Backend, error) {
		return nil, fmt.Errorf("%w: %w: /dev/accel/accel0 does not exist: the amdxdna driver is not loaded; try modprobe", core.ErrNoDevice, xdna.ErrNoDevice)
	}
	broken := func(string, core.Options) (core.Backend, error) {
		return nil, fmt.Errorf("%w: tensor v.0.qkv is short", core.ErrBadModel)
	}
	works := func(string, core.Options) (core.Backend, error) { return fakeNPU{}, nil }
	cases := []struct {
		name   string
		hook   func(string, core.Options) (core.Backend, error)
		device string
		// want: a Device name on success, else the error must wrap err and
		// mention msg.
		wantDevice string
		noteHas    []string
		err        error
		msg        string
	}{
		{"no hook auto", nil, "auto", core.DeviceEmulatedNPU, []string{"this build has no NPU support", "emulated on the CPU"}, nil, ""},
		{"no hook npu", nil, "npu", "", nil, core.ErrNoDevice, "no NPU support"},
		{"no device auto", noDev, "", core.DeviceEmulatedNPU, []string{"no usable NPU (no NPU device node: /dev/accel/accel0 does not exist)", "emulated on the CPU", "NPU.md"}, nil, ""},
		{"no device cpu", noDev, "cpu", core.DeviceEmulatedNPU, []string{"device cpu", "emulated on the CPU"}, nil, ""},
		{"no device npu", noDev, "npu", "", nil, core.ErrNoDevice, "/dev/accel/accel0"},
		{"no device reference", noDev, "reference", "", nil, nil, "reference forward reads only Hugging Face folders"},
		{"bad bundle auto", broken, "auto", "", nil, core.ErrBadModel, "v.0.qkv"},
		{"npu auto", works, "auto", "npu", nil, nil, ""},
		{"npu cpu", works, "cpu", core.DeviceEmulatedNPU, []string{"device cpu"}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			openNPU = c.hook
			b, err := Route(dir, core.Options{Device: c.device, Threads: 1}, openNPU)
			if c.wantDevice == "" {
				if err == nil {
					b.Close()
					t.Fatalf("Load succeeded on %q, want an error", b.Info().Device)
				}
				if (c.err != nil && !errors.Is(err, c.err)) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v; want %v mentioning %q", err, c.err, c.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			info := b.Info()
			if info.Device != c.wantDevice {
				t.Errorf("Device %q, want %q", info.Device, c.wantDevice)
			}
			for _, s := range c.noteHas {
				if !strings.Contains(info.DeviceNote, s) {
					t.Errorf("DeviceNote %q lacks %q", info.DeviceNote, s)
				}
			}
		})
	}

	// And the real hook on this machine, when it has no NPU.
	if _, err := os.Stat("/dev/accel"); err == nil || saved == nil {
		return
	}
	openNPU = saved
	if _, err := Route(dir, core.Options{Device: "npu"}, openNPU); !errors.Is(err, core.ErrNoDevice) || !strings.Contains(err.Error(), "/dev/accel") {
		t.Errorf("Load(bundle, npu) = %v; want ErrNoDevice naming /dev/accel", err)
	}
	b, err := Route(dir, core.Options{Threads: 1}, openNPU)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if in := b.Info(); in.Device != core.DeviceEmulatedNPU || !strings.Contains(in.DeviceNote, "/dev/accel") {
		t.Errorf("auto without an NPU: %q, %q", in.Device, in.DeviceNote)
	}
}

func TestShortReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{core.ErrNoDevice.Error() + ": xdna: no NPU device node: /dev/accel/accel0 does not exist: the amdxdna driver is not loaded (it needs Linux 6.14); try `sudo modprobe amdxdna`",
			"no NPU device node: /dev/accel/accel0 does not exist"},
		{core.ErrNoDevice.Error() + ": xdna: permission denied on the NPU device node: cannot open /dev/accel/accel0: add your user to render (`sudo usermod`), or install a udev rule such as\n  SUBSYSTEM",
			"permission denied on the NPU device node: cannot open /dev/accel/accel0"},
		{core.ErrNoDevice.Error() + ": xdna: no free NPU hardware context: creating a hardware context failed (EBUSY) (16 of about 16 in use). The NPU's contexts are shared",
			"no free NPU hardware context: creating a hardware context failed (EBUSY) (16 of about 16 in use)"},
		{core.ErrNoDevice.Error() + ": xdna: locked-memory limit too low for NPU buffers: " + strings.Repeat("x", 90) + "; raise it",
			"locked-memory limit too low for NPU buffers"},
		{core.ErrNoDevice.Error() + ": load kernel v_qkv: read xclbin: gone", "load kernel v_qkv: read xclbin"},
	} {
		if got := ShortReason(errors.New(c.in)); got != c.want {
			t.Errorf("shortReason(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestDecodeBT checks the bf16 Bᵀ decode against unpackB (float32 [K, N])
// value for value, bit for bit: every bfp16ebs8 value must be exact in bf16,
// including subnormal-range blocks (exponent byte 0), saturated mantissas
// and the float32 overflow of exponent byte 255.
func TestDecodeBT(t *testing.T) {
	for _, l := range []packLayout{
		{K: 16, N: 16, tileK: 16, tileN: 16, ctK: 8},
		{K: 64, N: 48, tileK: 32, tileN: 16, ctK: 16},
		{K: 80, N: 240, tileK: 40, tileN: 16, ctK: 8},
	} {
		p := make([]byte, l.bytes())
		seed := uint32(12345)
		for i := range p {
			seed = seed*1664525 + 1013904223
			p[i] = byte(seed >> 24)
		}
		// Force the extreme exponents into a few blocks.
		p[0], p[9], p[18] = 0, 255, 1
		p[1], p[2] = 0x7F, 0x80
		want, err := unpackB(p, l)
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 3} {
			w := make([]uint16, l.K*l.N)
			if err := decodeBT(w, p, l, threads); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < l.K; k++ {
				for n := 0; n < l.N; n++ {
					got, ref := core.BF16ToF32(w[n*l.K+k]), want[k*l.N+n]
					if math.Float32bits(got) != math.Float32bits(ref) {
						t.Fatalf("%+v threads %d: B[%d][%d] = %g (bf16 %#04x), unpackB %g", l, threads, k, n, got, w[n*l.K+k], ref)
					}
				}
			}
		}
	}
	l := packLayout{K: 16, N: 16, tileK: 16, tileN: 16, ctK: 8}
	if err := decodeBT(make([]uint16, 256), make([]byte, l.bytes()-1), l, 1); err == nil {
		t.Error("short packed B accepted")
	}
	if err := decodeBT(make([]uint16, 255), make([]byte, l.bytes()), l, 1); err == nil {
		t.Error("short output accepted")
	}
}

// TestEmulatedWeightMemory checks that the emulated device holds each
// weight matrix once, in 2 bytes a weight (plus the float32 biases), not
// the packed copy or a float32 expansion.
func TestEmulatedWeightMemory(t *testing.T) {
	cfg := npuTestConfig()
	_, dir := exportRandom(t, cfg, 2)
	dev := NewEmuDevice(1)
	b, err := OpenBundle(dir, core.Options{Threads: 1}, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var want int64
	for _, tw := range []struct{ H, M, layers int }{{cfg.Vision.Hidden, cfg.Vision.MLP, cfg.Vision.Layers}, {cfg.Text.Hidden, cfg.Text.MLP, cfg.Text.Layers}} {
		N1 := roundUp(tw.M+1, 16)
		weights := tw.H*3*tw.H + tw.H*tw.H + tw.H*N1 + N1*tw.H
		biases := 3*tw.H + tw.H + N1
		want += int64(tw.layers * (2*weights + 4*biases))
	}
	if dev.held != want {
		t.Errorf("emulated device holds %d bytes of weights, want %d", dev.held, want)
	}
}
