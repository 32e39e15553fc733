package hub

import (
	"net/http"
	"strings"
	"testing"
)

func TestMetaFrom(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		headers map[string]string
		want    meta
	}{
		{"lfs redirect", map[string]string{"X-Linked-Etag": `"` + sha + `"`, "X-Linked-Size": "3944517011", "ETag": `"other"`, "Content-Length": "1234", "X-Repo-Commit": "c1"},
			meta{etag: sha, sha256: sha, size: 3944517011, commit: "c1"}},
		{"weak, upper case", map[string]string{"ETag": `W/"` + strings.ToUpper(sha) + `"`, "Content-Length": "10"},
			meta{etag: strings.ToUpper(sha), sha256: sha, size: 10}},
		{"git sha1 is not a sha256", map[string]string{"ETag": `"0123456789abcdef0123456789abcdef01234567"`, "Content-Length": "591"},
			meta{etag: "0123456789abcdef0123456789abcdef01234567", size: 591}},
		{"64 chars but not hex", map[string]string{"ETag": `"` + strings.Repeat("g", 64) + `"`},
			meta{etag: strings.Repeat("g", 64), size: -1}},
		{"nothing", map[string]string{}, meta{size: -1}},
		{"bad size", map[string]string{"X-Linked-Size": "-5", "Content-Length": "7"}, meta{size: 7}},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		if got := metaFrom(h); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in                 string
		first, last, total int64
		ok                 bool
	}{
		{"bytes 100-199/200", 100, 199, 200, true},
		{"bytes 0-0/*", 0, 0, -1, true},
		{"bytes */300", -1, -1, 300, true},
		{"bytes */*", 0, 0, 0, false},
		{"bytes 5-4/10", 0, 0, 0, false},
		{"bytes 5-10/10", 0, 0, 0, false},
		{"items 0-1/2", 0, 0, 0, false},
		{"bytes 1-2", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	}
	for _, tt := range tests {
		f, l, tot, ok := parseContentRange(tt.in)
		if ok != tt.ok || ok && (f != tt.first || l != tt.last || tot != tt.total) {
			t.Errorf("parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", tt.in, f, l, tot, ok, tt.first, tt.last, tt.total, tt.ok)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 100-199/200", "bytes */300", "bytes 0-0/*", "bytes -1--2/-3", "bytes 9223372036854775807-9223372036854775807/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, total, ok := parseContentRange(s)
		if !ok {
			return
		}
		if first == -1 {
			if last != -1 || total < 0 {
				t.Fatalf("%q: unsatisfied form %d-%d/%d", s, first, last, total)
			}
			return
		}
		if first < 0 || last < first || total >= 0 && last >= total {
			t.Fatalf("%q: accepted %d-%d/%d", s, first, last, total)
		}
	})
}
