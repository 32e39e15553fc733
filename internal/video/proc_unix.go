//go:build unix

package video

import (
	"os/exec"
	"syscall"
	"time"
)

// killGroup makes cmd the leader of its own process group and, when its
// context ends, kills the whole group: a wrapper script's children go too,
// and none keeps the output pipes open.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
}
