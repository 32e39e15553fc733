package watch

import (
	"slices"
	"testing"
)

func TestMountPoints(t *testing.T) {
	ms := mountPoints()
	if !slices.ContainsFunc(ms, func(m Mount) bool { return m.Point == "/" && m.ID != "" && m.FSType != "" }) {
		t.Errorf("mountPoints() = %+v, want / among them, with its id and type", ms)
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
