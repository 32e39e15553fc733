package tokenizer

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"ascii lower", "A Photo OF", "a photo of"},
		{"nfc composes", "cafe\u0301", "café"},
		{"nfc singleton", "\u212b", "å"}, // ANGSTROM SIGN → Å → å
		{"ws run", "a \t\n\r\v\f b", "a b"},
		{"ws unicode", "a\u00a0\u0085\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000b", "a b"},
		{"not ws: file separators", "a\x1c\x1d\x1e\x1fb", "a\x1c\x1d\x1e\x1fb"},
		{"not ws: zero width", "a\u200b\ufeff\u180eb", "a\u200b\ufeff\u180eb"},
		{"ws kept at ends", "  a  ", " a "},
		{"dotted capital I", "İSTANBUL", "i\u0307stanbul"},
		{"sigma never final", "ΟΔΟΣ", "οδοσ"},
		{"titlecase digraph", "ǅ", "ǆ"},
		{"no lowercase for ß or ﬁ", "ß ﬁ", "ß ﬁ"},
		{"fullwidth", "ＡＢＣ", "ａｂｃ"},
		{"invalid bytes", "a\xffb\xc3", "a\ufffdb\ufffd"},
		{"truncated sequence", "\xe2\x82", "\ufffd\ufffd"},
		{"special tokens survive", "A <|ENDOFTEXT|>", "a <|endoftext|>"},
	}
	for _, tt := range tests {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("%s: normalize(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestSplitPieces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a photo of a cat", []string{"a", "photo", "of", "a", "cat"}},
		{"it's we'll they've i'm she'd we're don't", []string{"it", "'s", "we", "'ll", "they", "'ve", "i", "'m", "she", "'d", "we", "'re", "don", "'t"}},
		// Contractions only where a match starts; a run of punctuation
		// swallows apostrophes.
		{"''s", []string{"''", "s"}},
		{"x.'s", []string{"x", ".'", "s"}},
		{"'sx 'l 'lll", []string{"'s", "x", "'", "l", "'ll", "l"}},
		{"2023", []string{"2", "0", "2", "3"}},
		{"gpt4x", []string{"gpt", "4", "x"}},
		{"½Ⅻ٣", []string{"½", "Ⅻ", "٣"}}, // No, Nl and Nd are all \p{N}
		{"hello,world!!!", []string{"hello", ",", "world", "!!!"}},
		{"e\u0301", []string{"e", "\u0301"}}, // a combining mark is not a letter
		{"नमस्ते", []string{"नमस", "्", "त", "े"}},
		{"🐱🐶 &amp;", []string{"🐱🐶", "&", "amp", ";"}},
		{"a\x1cb", []string{"a", "\x1c", "b"}},
		{"  ", nil},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		splitPieces(tt.in, func(p string) bool { got = append(got, p); return true })
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitPieces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Stopping early.
	n := 0
	splitPieces("a b c d", func(string) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("splitPieces kept calling after false: %d calls", n)
	}
}

func TestNextSpecial(t *testing.T) {
	tests := []struct {
		in, before string
		id         int32
		after      string
	}{
		{"plain", "plain", -1, ""},
		{"a <|endoftext|> b", "a ", EOS, " b"},
		{"<|startoftext|>x", "", BOS, "x"},
		{"<|<|endoftext|>", "<|", EOS, ""},
		{"<|endoftext|", "<|endoftext|", -1, ""},
		{"<|other|> <|startoftext|><|endoftext|>", "<|other|> ", BOS, "<|endoftext|>"},
	}
	for _, tt := range tests {
		b, id, a := nextSpecial(tt.in)
		if b != tt.before || id != tt.id || a != tt.after {
			t.Errorf("nextSpecial(%q) = %q, %d, %q; want %q, %d, %q", tt.in, b, id, a, tt.before, tt.id, tt.after)
		}
	}
}

// TestEquivalences checks rules on the real vocabulary: texts that the
// normaliser maps to the same string encode the same.
func TestEquivalences(t *testing.T) {
	tok := loadReal(t)
	pairs := [][2]string{
		{"A PHOTO OF A CAT", "a photo of a cat"},
		{"a\u3000photo\u2029of\u00a0a\tcat", "a photo of a cat"},
		{"  a photo  ", "a photo"},
		{"cafe\u0301 nai\u0308ve", "café naïve"},
		{"İ", "i\u0307"},
		{"ΣΑΣ", "σασ"},
		{"a<|ENDOFTEXT|>b", "a <|endoftext|> b"},
		{"it'S", "it 's"},
		{"\xff", "\ufffd"},
	}
	for _, p := range pairs {
		a, b := tok.Encode(p[0]), tok.Encode(p[1])
		if d := firstDiff(a, b); d >= 0 {
			t.Errorf("Encode(%q) = %q, Encode(%q) = %q", p[0], tok.pieces(a), p[1], tok.pieces(b))
		}
	}
	// And texts that differ must not collapse.
	diffs := [][2]string{
		{"a\x1cb", "a b"},
		{"a\u200bb", "ab"},
		{"σ", "ς"},
		{"!!<|endoftext|>", "!!<|endoftext|"},
	}
	for _, p := range diffs {
		if a, b := tok.Encode(p[0]), tok.Encode(p[1]); firstDiff(a, b) < 0 {
			t.Errorf("Encode(%q) == Encode(%q) = %q", p[0], p[1], tok.pieces(a))
		}
	}
}
