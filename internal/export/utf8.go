package export

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Text that is not UTF-8 (a Latin-1 file name, a caption or JSON member
// in another encoding) is written, in every output of an export, with
// one U+FFFD for each maximal invalid subpart: the rule of the WHATWG
// Encoding Standard and of Python's bytes.decode("utf-8", "replace"),
// which most readers of these files use. A run of bad bytes is thus
// neither one U+FFFD (strings.ToValidUTF8) nor one a byte
// (encoding/json): "\xe2\x82" (a cut "€") is one, "\xff\xfe" two.

// validUTF8 is s with each maximal invalid subpart replaced by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 { // a valid sequence (U+FFFD itself is 3 bytes)
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidSubpart(s[i:])
	}
	return b.String()
}

// invalidSubpart is the length of the maximal subpart at the start of s,
// which begins with no valid sequence: a lead byte and the bytes after it
// that could still continue it (the second byte's range depends on the
// lead: E0 A0..BF, ED 80..9F, F0 90..BF, F4 80..8F), or a single byte
// that starts no sequence (80..C1, F5..FF).
func invalidSubpart(s string) int {
	lo, hi := byte(0x80), byte(0xBF)
	var more int // continuation bytes the lead byte asks for
	switch c := s[0]; {
	case c >= 0xC2 && c <= 0xDF:
		more = 1
	case c == 0xE0:
		more, lo = 2, 0xA0
	case c == 0xED:
		more, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		more = 2
	case c == 0xF0:
		more, lo = 3, 0x90
	case c == 0xF4:
		more, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		more = 3
	default:
		return 1
	}
	n := 1
	for n <= more && n < len(s) && s[n] >= lo && s[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}

// validJSON is a JSON text with the bytes that are not UTF-8 replaced as
// validUTF8 does, before encoding/json decodes it (which would replace
// each bad byte). Outside its strings such bytes make the text invalid
// either way.
func validJSON(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return []byte(validUTF8(string(b)))
}

// validUTF8s maps validUTF8 over ps (nil stays nil).
func validUTF8s(ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = validUTF8(p)
	}
	return out
}

// MarshalJSON writes r with its paths (Files, Skipped, Leftovers, Removed)
// made UTF-8 by the rule of the Parquet files (validUTF8), where
// encoding/json alone would replace each bad byte.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Files, p.Skipped, p.Leftovers, p.Removed = validUTF8s(r.Files), validUTF8s(r.Skipped), validUTF8s(r.Leftovers), validUTF8s(r.Removed)
	return json.Marshal(p)
}
