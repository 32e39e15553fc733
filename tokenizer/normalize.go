package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// isSpace reports whether r is white space for the tokenizers library's
// regular expressions (Oniguruma's `\s`: U+0009..U+000D, U+0085 and the
// Zs, Zl and Zp categories), which is exactly Unicode's White_Space.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.Is(unicode.White_Space, r)
}

// isLetter is \p{L}: categories Lu, Ll, Lt, Lm, Lo.
func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

// isNumber is \p{N}: categories Nd, Nl, No.
func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

// validUTF8 replaces each byte that does not start a valid UTF-8 sequence by
// U+FFFD, the way ranging over a Go string decodes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		b.WriteRune(r) // an invalid byte decodes as utf8.RuneError
	}
	return b.String()
}

// Normalize is the text the tokenizer reads of s (normalize), with the
// white space at its ends trimmed: two texts with the same Normalize give
// the same tokens ("Cat" and "cat ", "Ångström" composed or not).
func Normalize(s string) string { return strings.TrimSpace(normalize(s)) }

// normalize applies the normalizer of Hugging Face's CLIP tokenizer: NFC,
// every run of white space to one space, then lowercase.
func normalize(s string) string {
	s = norm.NFC.String(validUTF8(s))
	var b strings.Builder
	b.Grow(len(s))
	inSpace := false
	for _, r := range s {
		if isSpace(r) {
			if !inSpace {
				b.WriteByte(' ')
			}
			inSpace = true
			continue
		}
		inSpace = false
		writeLower(&b, r)
	}
	return b.String()
}

// writeLower writes the full Unicode lowercase mapping of r, character by
// character as Rust's char::to_lowercase does (no Final_Sigma context, no
// language rules). The only character whose full mapping differs from the
// simple one that unicode.ToLower implements is U+0130 (İ → i + U+0307).
func writeLower(b *strings.Builder, r rune) {
	switch {
	case r < utf8.RuneSelf:
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteByte(byte(r))
	case r == 'İ':
		b.WriteString("i\u0307")
	default:
		b.WriteRune(unicode.ToLower(r))
	}
}

// contractions are tried in this order, as in CLIP's pattern.
var contractions = [...]string{"s", "t", "re", "ve", "m", "ll", "d"}

// splitPieces calls fn with each piece of s matched by CLIP's pattern
// 's|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+ (leftmost
// alternative first, as Oniguruma matches it); text between matches (white
// space) is dropped. It stops early when fn returns false.
func splitPieces(s string, fn func(piece string) bool) {
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		start := i
		switch {
		case r == '\'' && matchContraction(s[i+1:]) > 0:
			i += 1 + matchContraction(s[i+1:])
		case isLetter(r):
			i += w
			for i < len(s) {
				r, w := utf8.DecodeRuneInString(s[i:])
				if !isLetter(r) {
					break
				}
				i += w
			}
		case isNumber(r):
			i += w
		case isSpace(r):
			i += w
			continue
		default:
			i += w
			for i < len(s) {
				r, w := utf8.DecodeRuneInString(s[i:])
				if isSpace(r) || isLetter(r) || isNumber(r) {
					break
				}
				i += w
			}
		}
		if !fn(s[start:i]) {
			return
		}
	}
}

// matchContraction returns the length of the contraction suffix that rest
// (the text after an apostrophe) starts with, or 0.
func matchContraction(rest string) int {
	for _, c := range contractions {
		if strings.HasPrefix(rest, c) {
			return len(c)
		}
	}
	return 0
}
