package watch

import (
	"slices"
	"testing"
)

func TestMountPoints(t *testing.T) {
	if m := mountPoints(); !slices.Contains(m, "/") {
		t.Errorf("mountPoints() = %q, want / among them", m)
	}
	for in, want := range map[string]string{
		`/media/My\040Disk`: "/media/My Disk",
		`/a\011b\012c\134d`: "/a\tb\nc\\d",
		`/plain`:            "/plain",
		`/short\04`:         `/short\04`,
		`/bad\999`:          `/bad\999`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
