//go:build linux

package xdna

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestProbeNotPresent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "accel9")
	_, err := Probe(missing)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "amdxdna") {
		t.Errorf("Probe(missing) = %v", err)
	}
	if _, err := Open(Options{Path: missing}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open(missing) = %v", err)
	}
	// A node served by another driver (here a plain character device that
	// answers no DRM ioctl) is refused by name.
	_, err = Probe(os.DevNull)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "none is driven by amdxdna") {
		t.Errorf("Probe(/dev/null) = %v", err)
	}
	if len(nodes()) == 0 {
		_, err := Probe("")
		if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "modprobe amdxdna") && !strings.Contains(err.Error(), "dmesg") {
			t.Errorf("Probe(\"\") without nodes = %v", err)
		}
	}
}

func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root opens anything; check the message the mapping produces.
		err := permissionError("/dev/accel/accel0", "render")
		for _, want := range []string{"usermod -aG render", "udev", "/dev/accel/accel0", "log in again"} {
			if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), want) {
				t.Errorf("permission error %q lacks %q", err, want)
			}
		}
		return
	}
	p := filepath.Join(t.TempDir(), "accel0")
	if err := os.WriteFile(p, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Probe(p); !errors.Is(err, ErrPermission) {
		t.Errorf("Probe(unreadable) = %v", err)
	}
}

func TestErrorTexts(t *testing.T) {
	cases := []struct {
		err  error
		is   error
		want []string
	}{
		{memlockError("CREATE_BO(share)", 1<<30, 8<<20, errors.New("cannot allocate memory")), ErrMemlock,
			[]string{"1.0 GiB", "8.0 MiB", "ulimit -l unlimited", "limits.conf", "LimitMEMLOCK=infinity"}},
		{noContextsError(errors.New("device or resource busy"), 14, 16), ErrNoContexts,
			[]string{"14 of about 16 in use", "CLIP needs 8", "close other NPU programs"}},
		{tooOldError("CREATE_HWCTX", errors.New("inappropriate ioctl")), ErrTooOld, []string{"6.14", "firmware"}},
		{timeoutError("v_fc1", 10*time.Second), ErrTimeout, []string{"v_fc1", "10s"}},
		{commandError("t_mha", StateError), ErrCommand, []string{"t_mha", "state error"}},
		{noDeviceError("/dev/accel/accel0", true, nil), ErrNoDevice, []string{"module is loaded", "dmesg"}},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.is) {
			t.Errorf("%v is not %v", c.err, c.is)
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("%q lacks %q", c.err, w)
			}
		}
	}
	if fmtBytes(^uint64(0)) != "unlimited" {
		t.Error("unlimited")
	}
}

func TestMapAligned(t *testing.T) {
	const size, align = 4 << 20, 16 << 20
	page := os.Getpagesize()
	base, err := mapAligned(size, align, func(at unsafe.Pointer) (unsafe.Pointer, error) {
		return unix.MmapPtr(-1, 0, at, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.MunmapPtr(base, size)
	if uintptr(base)%align != 0 {
		t.Fatalf("mapping at %p is not %d-aligned", base, align)
	}
	mem := unsafe.Slice((*byte)(base), size)
	mem[0], mem[size-1] = 1, 2
	if mem[0] != 1 || mem[size-1] != 2 {
		t.Fatal("mapping not writable")
	}
	// The reservation past the mapping (always at least one page of it)
	// was released: the page just after is free again. The page before
	// belonged to the reservation only when it had to be padded, so it is
	// not checked.
	for _, at := range []unsafe.Pointer{unsafe.Add(base, size)} {
		p, err := unix.MmapPtr(-1, 0, at, uintptr(page), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
		if err != nil {
			t.Errorf("page at %p is still reserved: %v", at, err)
			continue
		}
		unix.MunmapPtr(p, uintptr(page))
	}
	// A mapping that fails leaves nothing behind and reports the error.
	want := errors.New("no")
	if _, err := mapAligned(size, align, func(unsafe.Pointer) (unsafe.Pointer, error) { return nil, want }); err != want {
		t.Errorf("failing map: %v", err)
	}
}
