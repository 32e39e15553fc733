package main

import (
	"encoding/json"
	"testing"
)

// TestVersionJSONHasModified: "modified" is among the fields --help lists
// and is printed false too (a test binary records no vcs.modified).
func TestVersionJSONHasModified(t *testing.T) {
	out, _, code := runCLI(t, "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if m, ok := v["modified"]; !ok || m != false {
		t.Errorf(`"modified" is %v (present %v), want false: %s`, m, ok, out)
	}
}
