package tokenizer

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzEncode: any input gives 77 ids in range, BOS first, EOS before the
// padding, the same ids every time, and no panic. Texts made only of ASCII
// letters and spaces also survive a Decode round trip.
func FuzzEncode(f *testing.F) {
	tok := loadReal(f)
	seeds := []string{
		"", "a photo of a cat", "It's A PHOTO", "\xff\xfe\x00", "\x00\x01\x1c\x7f",
		"a\u3000b\u0085c\u2028", "İstanbul ΟΔΟΣ", "cafe\u0301", "<|endoftext|><|startoftext|>",
		"!!<|endoftext|>??", "'s'''t're", "👨\u200d👩\u200d👧", "\ufeff\u200b",
		strings.Repeat("z", 300), strings.Repeat("9 ", 100), "\xe2\x82", "\xed\xa0\x80",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Encode(text)
		checkIDs(t, tok, ids, "Encode")
		if again := tok.Encode(text); !slices.Equal(ids, again) {
			t.Fatalf("Encode(%q) not deterministic: %v then %v", text, ids, again)
		}
		plain := true
		for _, r := range text {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == ' ') {
				plain = false
				break
			}
		}
		if plain && tok.Length(ids) < ContextLength {
			want := strings.Join(strings.Fields(strings.ToLower(text)), " ")
			if got := tok.Decode(ids); got != want {
				t.Fatalf("Decode(Encode(%q)) = %q, want %q", text, got, want)
			}
		}
	})
}

// FuzzMerges feeds arbitrary merges.txt contents to the loader: it either
// fails with ErrBadVocab or yields a tokenizer that encodes without panicking.
func FuzzMerges(f *testing.F) {
	f.Add("#version: 0.2\nh e\nhe l\n")
	f.Add("h e\n\nl l\n")
	f.Add("a b c\n")
	f.Add("h e\r\nhe llo\r\n")
	f.Fuzz(func(t *testing.T, merges string) {
		dir := t.TempDir()
		synthVocab(t, dir)
		writeFile(t, filepath.Join(dir, MergesFile), merges)
		tok, err := Load(dir)
		if err != nil {
			if !errors.Is(err, ErrBadVocab) {
				t.Fatalf("Load: %v, want an ErrBadVocab", err)
			}
			return
		}
		checkIDs(t, tok, tok.Encode("hello hellohello "+merges), "Encode")
	})
}
