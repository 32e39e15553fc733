package main

import "testing"

func TestNamedError(t *testing.T) {
	for _, tc := range []struct{ path, msg, want string }{
		{"/p/a.jpg", "decode /p/a.jpg: not a recognised image format", "decode /p/a.jpg: not a recognised image format"},
		{"/p/a.jpg", "permission denied", "/p/a.jpg: permission denied"},
		{"/p/a.jpg", "decode /p/a.jpgx: truncated", "/p/a.jpg: decode /p/a.jpgx: truncated"},
		// An away folder's line once began "failed: unreachable; ...".
		{"/p/sub", "unreachable; its entries are kept (open /p/sub: permission denied)", "/p/sub: unreachable; its entries are kept (open /p/sub: permission denied)"},
	} {
		if got := namedError(tc.path, tc.msg); got != tc.want {
			t.Errorf("namedError(%q, %q) = %q, want %q", tc.path, tc.msg, got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	if plural(1, "file", "files") != "file" || plural(0, "file", "files") != "files" || plural(2, "file", "files") != "files" {
		t.Error("plural picks the wrong word")
	}
}
