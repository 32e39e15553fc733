package main

import (
	"strings"
	"testing"
)

// TestUnknownSubcommand: a word that names no command of model, bench or
// completion is a usage error (exit 2) naming the word and the commands it
// takes, with nothing on stdout; they printed their help and exited 0, so
// that "clipidx model pul" looked like success. Alone, such a command
// prints its help and exits 0, as clipidx alone does.
func TestUnknownSubcommand(t *testing.T) {
	for _, c := range []struct {
		args  []string
		valid string
	}{
		{[]string{"model", "pul"}, "pull"},
		{[]string{"bench", "modle"}, "model"},
		{[]string{"completion", "tcsh"}, "bash"},
	} {
		out, errs, code := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, `"`+c.args[1]+`"`) || !strings.Contains(errs, c.valid) {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q; want exit 2 and stderr naming %q and %s", c.args, code, len(out), errs, c.args[1], c.valid)
		}
	}
	for _, args := range [][]string{{}, {"model"}, {"bench"}, {"completion"}} {
		out, errs, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "Available Commands:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want its help and exit 0", args, code, out, errs)
		}
	}
	if out, errs, code := runCLI(t, "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d, stderr %q", code, errs)
	}
}
