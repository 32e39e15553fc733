// Package anchors runs the reference implementations that benchmarks time
// clipidx against (the Python and Node scripts in this folder, numpy's X @ q) as
// long-lived processes, so that both sides run alternately in one run: on
// a shared machine whose speed drifts from minute to minute, pairs seconds
// apart compare far better than runs minutes apart. Benchmarks only; never
// a runtime dependency.
package anchors

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Process is a reference process that prints "ready" once it is set up,
// then answers each request line on its stdin with one line on its
// stdout: the wall and CPU (all threads) seconds of the work requested.
type Process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	in    *bufio.Writer
	out   *bufio.Scanner
}

// Start starts cmd (its stdin and stdout must not be set) and waits for its
// "ready". On failure the process is stopped and the error says what the
// process printed instead.
func Start(cmd *exec.Cmd) (*Process, error) {
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, stdin: w, in: bufio.NewWriter(w), out: bufio.NewScanner(r)}
	if !p.out.Scan() || p.out.Text() != "ready" {
		got := p.out.Text()
		cmd.Process.Kill()
		cmd.Wait()
		if got == "" {
			return nil, fmt.Errorf("%s exited before it was ready", cmd.Path)
		}
		return nil, fmt.Errorf("%s printed %q, want \"ready\"", cmd.Path, got)
	}
	return p, nil
}

// Time sends request and returns the wall and CPU time the process reports
// for it.
func (p *Process) Time(request string) (wall, cpu time.Duration, err error) {
	p.in.WriteString(request + "\n")
	if err := p.in.Flush(); err != nil {
		return 0, 0, err
	}
	if !p.out.Scan() {
		return 0, 0, errors.New("the reference process exited")
	}
	f := strings.Fields(p.out.Text())
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("the reference process answered %q, want wall and CPU seconds", p.out.Text())
	}
	w, err1 := strconv.ParseFloat(f[0], 64)
	c, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("the reference process answered %q, want wall and CPU seconds", p.out.Text())
	}
	return time.Duration(w * 1e9), time.Duration(c * 1e9), nil
}

// Close ends the process (closing its stdin) and waits for it.
func (p *Process) Close() error {
	p.stdin.Close()
	return p.cmd.Wait()
}
