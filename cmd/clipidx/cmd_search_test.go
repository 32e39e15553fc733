package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSearchRejectsNonFiniteThreshold: --threshold NaN or ±Inf is a usage
// error (exit 2) before any model or index is opened; a finite one is not.
func TestSearchRejectsNonFiniteThreshold(t *testing.T) {
	bin := e2eBinary(t)
	db := filepath.Join(t.TempDir(), "i.db")
	for _, tc := range []struct {
		threshold string
		bad       bool
	}{
		{"NaN", true},
		{"inf", true},
		{"-Inf", true},
		{"0.25", false},
	} {
		_, errs, code := e2eRun(t, bin, "--db", db, "--model", t.TempDir(), "search", "--threshold", tc.threshold, "cat")
		rejected := code == 2 && strings.Contains(errs, "--threshold")
		if rejected != tc.bad {
			t.Errorf("--threshold %s: exit %d, %q; want rejected=%v", tc.threshold, code, errs, tc.bad)
		}
	}
}
