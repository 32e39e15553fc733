//go:build !unix

package video

import (
	"os/exec"
	"time"
)

// killGroup kills cmd when its context ends (no process groups here), and
// stops waiting for its pipes soon after.
func killGroup(cmd *exec.Cmd) {
	cmd.WaitDelay = 2 * time.Second
}
