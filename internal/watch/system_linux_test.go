package watch

import (
	"slices"
	"strings"
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

// TestLimitText: in a user namespace whose own limit is the lower (a
// container), the advice named fs.inotify.max_user_watches, which was not
// the one reached. It names the lower of the two.
func TestLimitText(t *testing.T) {
	for _, c := range []struct {
		sys, user int64
		want      string
	}{
		{8192, 10, "user.max_inotify_watches = 10"},
		{-1, 10, "user.max_inotify_watches = 10"},
		{8192, 8192, "sudo sysctl fs.inotify.max_user_watches=1048576"},
		{8192, -1, "fs.inotify.max_user_watches = 8192"},
		{100, 8192, "fs.inotify.max_user_watches = 100"},
		{-1, -1, "fs.inotify.max_user_watches = ?"},
	} {
		if got := limitText(c.sys, c.user); !strings.Contains(got, c.want) {
			t.Errorf("limitText(%d, %d) = %q, want it to say %q", c.sys, c.user, got, c.want)
		}
	}
}
