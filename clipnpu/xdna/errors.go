package xdna

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotAvailable is returned on systems without the amdxdna driver
	// interface (anything but Linux).
	ErrNotAvailable = errors.New("xdna: the NPU driver interface is not available on this system (Linux amdxdna only)")
	// ErrNoDevice is returned when no amdxdna device node exists.
	ErrNoDevice = errors.New("xdna: no NPU device node")
	// ErrPermission is returned when the device node exists but cannot be
	// opened by this user.
	ErrPermission = errors.New("xdna: permission denied on the NPU device node")
	// ErrMemlock is returned when buffer allocation fails and the
	// locked-memory limit (RLIMIT_MEMLOCK) is the likely cause.
	ErrMemlock = errors.New("xdna: locked-memory limit too low for NPU buffers")
	// ErrNoContexts is returned when the driver has no free hardware context
	// (they are shared by every process on the machine).
	ErrNoContexts = errors.New("xdna: no free NPU hardware context")
	// ErrTooOld is returned when the driver or firmware lacks an interface
	// this package needs.
	ErrTooOld = errors.New("xdna: NPU driver or firmware too old")
	// ErrTimeout is returned when a command does not complete before its
	// deadline.
	ErrTimeout = errors.New("xdna: NPU command timed out")
	// ErrCommand is returned when a command completes in a state other than
	// completed.
	ErrCommand = errors.New("xdna: NPU command failed")
)

// Explanations a user can act on; the Linux code wraps the sentinels above
// with them.

func noDeviceError(node string, moduleLoaded bool, others []string) error {
	if len(others) > 0 {
		return fmt.Errorf("%w: %v exist but none is driven by amdxdna (this machine has no Ryzen AI NPU, or its driver is not loaded)", ErrNoDevice, others)
	}
	if moduleLoaded {
		return fmt.Errorf("%w: the amdxdna module is loaded but %s does not exist; check `dmesg | grep -i xdna` (firmware missing or failed to load?)", ErrNoDevice, node)
	}
	return fmt.Errorf("%w: %s does not exist: the amdxdna driver is not loaded (it needs Linux 6.14 or newer with CONFIG_DRM_ACCEL_AMDXDNA, or amd/xdna-driver) or this machine has no Ryzen AI NPU; try `sudo modprobe amdxdna`", ErrNoDevice, node)
}

func permissionError(node, group string) error {
	g := group
	if g == "" {
		g = "the group that owns it"
	}
	return fmt.Errorf("%w: cannot open %s: add your user to %s (`sudo usermod -aG %s $USER`, then log in again), or install a udev rule such as\n  SUBSYSTEM==\"accel\", KERNEL==\"accel*\", DRIVERS==\"amdxdna\", GROUP=\"render\", MODE=\"0660\"\nin /etc/udev/rules.d/70-amdxdna.rules and run `sudo udevadm trigger`",
		ErrPermission, node, g, orDefault(group, "render"))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// memlockError explains a failed allocation of need bytes under a
// locked-memory limit of limit bytes (^0 = unlimited).
func memlockError(op string, need, limit uint64, cause error) error {
	return fmt.Errorf("%w: %s of %s failed (%v) with RLIMIT_MEMLOCK at %s; the NPU pins its buffers (about 1.3 GiB for CLIP ViT-H/14). Raise the limit: `ulimit -l unlimited` in the shell that runs clipidx (the hard limit must allow it), or add `%s - memlock unlimited` to /etc/security/limits.conf and log in again, or set LimitMEMLOCK=infinity for a systemd service",
		ErrMemlock, op, fmtBytes(need), cause, fmtBytes(limit), "<your user>")
}

func noContextsError(cause error, inUse, limit int) error {
	held := ""
	if limit > 0 {
		held = fmt.Sprintf(" (%d of about %d in use)", inUse, limit)
	}
	return fmt.Errorf("%w: creating a hardware context failed (%v)%s. The NPU's contexts are shared by every process and CLIP needs 8 of them; close other NPU programs (`xrt-smi examine -r aie-partitions` lists them) and retry", ErrNoContexts, cause, held)
}

func tooOldError(what string, cause error) error {
	return fmt.Errorf("%w: %s failed (%v); update the kernel (6.14 or newer, amdxdna) or amd/xdna-driver and the NPU firmware (linux-firmware amdnpu/)", ErrTooOld, what, cause)
}

func timeoutError(kernel string, d time.Duration) error {
	return fmt.Errorf("%w: %s did not complete within %v", ErrTimeout, kernel, d)
}

func commandError(kernel string, state uint32) error {
	return fmt.Errorf("%w: %s ended in state %s (want completed)", ErrCommand, kernel, stateName(state))
}

func fmtBytes(n uint64) string {
	if n == ^uint64(0) {
		return "unlimited"
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
