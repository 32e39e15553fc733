//go:build linux

package xdna

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
