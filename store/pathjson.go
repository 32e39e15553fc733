package store

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Paths in the meta bucket's JSON values (the roots, the mount points, the
// offline folders, the last build's roots and paths) are JSON strings,
// which hold only UTF-8. A path whose bytes are not UTF-8 (a Latin-1 name
// on Linux) is written as pathMark and its bytes in base64, and read back
// whole; no real path begins with a NUL. An older clipidx reads such a
// path as a folder that does not exist, as it read its own lossy form.
const pathMark = "\x00base64:"

// keepPath is p as the meta bucket's JSON holds it.
func keepPath(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	return pathMark + base64.StdEncoding.EncodeToString([]byte(p))
}

// readPath is the path keepPath wrote as s.
func readPath(s string) string {
	if rest, ok := strings.CutPrefix(s, pathMark); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return string(b)
		}
	}
	return s
}

// keepPaths is ps as the meta bucket's JSON holds them (a new slice).
func keepPaths(ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = keepPath(p)
	}
	return out
}

// readPaths reads keepPaths's ps back, in place.
func readPaths(ps []string) []string {
	for i, p := range ps {
		ps[i] = readPath(p)
	}
	return ps
}

// lossyPath is what encoding/json wrote for p before keepPath: each byte
// that is not part of valid UTF-8 as U+FFFD. A list that holds it for a
// path it now holds whole drops it (see addRoots).
func lossyPath(p string) string {
	var b strings.Builder
	for len(p) > 0 {
		r, n := utf8.DecodeRuneInString(p)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(p[:n])
		}
		p = p[n:]
	}
	return b.String()
}

// PathBytes is p's bytes when they are not UTF-8, nil when they are: what
// clipidx's JSON output gives beside a path ("path_bytes", base64), since
// a JSON string shows each bad byte as U+FFFD.
func PathBytes(p string) []byte {
	if utf8.ValidString(p) {
		return nil
	}
	return []byte(p)
}

// MarshalJSON writes o with "dir_bytes" (base64) beside "dir" when the
// folder's name is not UTF-8.
func (o Offline) MarshalJSON() ([]byte, error) {
	type plain Offline
	return json.Marshal(struct {
		plain
		DirBytes []byte `json:"dir_bytes,omitempty"`
	}{plain(o), PathBytes(o.Dir)})
}

// PathsBytes is, beside paths and only when one of them is not UTF-8,
// each path's bytes (PathBytes: nil for a UTF-8 one); nil otherwise.
func PathsBytes(paths []string) [][]byte {
	for _, p := range paths {
		if !utf8.ValidString(p) {
			out := make([][]byte, len(paths))
			for i, p := range paths {
				out[i] = PathBytes(p)
			}
			return out
		}
	}
	return nil
}

// MarshalJSON writes lb with "roots_bytes" and "within_bytes" beside
// "roots" and "within" when one of their paths is not UTF-8: each path's
// bytes (base64), null for a UTF-8 one.
func (lb LastBuild) MarshalJSON() ([]byte, error) {
	type plain LastBuild
	return json.Marshal(struct {
		plain
		RootsBytes  [][]byte `json:"roots_bytes,omitempty"`
		WithinBytes [][]byte `json:"within_bytes,omitempty"`
	}{plain(lb), PathsBytes(lb.Roots), PathsBytes(lb.Within)})
}
