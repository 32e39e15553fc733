package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMergeHeapMatchesSimple checks the heap BPE used for long pieces
// against the quadratic scan on random words, short and long.
func TestMergeHeapMatchesSimple(t *testing.T) {
	tok := loadReal(t)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"abcdefghijklmnopqrstuvwxyz", "aeiou", "ab", "lo", "!?.,;:-", "éèàç", "猫の写真"}
	for i := 0; i < 400; i++ {
		alpha := []rune(alphabets[i%len(alphabets)])
		n := 1 + rng.IntN(150)
		var b strings.Builder
		for b.Len() < n {
			b.WriteRune(alpha[rng.IntN(len(alpha))])
		}
		word := b.String()
		if i%5 == 0 { // raw bytes, any value
			buf := make([]byte, n)
			for k := range buf {
				buf[k] = byte(rng.IntN(256))
			}
			word = string(buf)
		}
		syms := make([]int32, len(word))
		tok.initSymbols(syms, word)
		simple := tok.mergeSimple(slices.Clone(syms))
		fromHeap := tok.mergeHeap(slices.Clone(syms))
		if !slices.Equal(simple, fromHeap) {
			t.Fatalf("word %q: simple %v, heap %v", word, simple, fromHeap)
		}
	}
}

func TestDecode(t *testing.T) {
	tok := loadReal(t)
	tests := []struct{ in, want string }{
		{"a photo of a cat", "a photo of a cat"},
		{"Café  NAÏVE", "café naïve"},
		{"猫の写真", "猫の写真"},
		{"hello, world!", "hello , world !"},
		{"a <|endoftext|> b", "a <|endoftext|>b"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := tok.Decode(tok.Encode(tt.in)); got != tt.want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := tok.Decode([]int32{BOS, 320, 99999, -1, EOS}); got != "a <|id 99999|><|id -1|>" {
		t.Errorf("Decode with bad ids = %q", got)
	}
	if got := tok.Decode(nil); got != "" {
		t.Errorf("Decode(nil) = %q", got)
	}
}

func TestLength(t *testing.T) {
	tok := loadReal(t)
	pad := func(ids ...int32) []int32 {
		for len(ids) < ContextLength {
			ids = append(ids, EOS)
		}
		return ids
	}
	tests := []struct {
		ids  []int32
		want int
	}{
		{pad(BOS, EOS), 2},
		{pad(BOS, 320, EOS), 3},
		{pad(BOS, 320, EOS, 321, EOS), 5},
		{tok.Encode(strings.Repeat("cat ", 100)), ContextLength},
		{[]int32{BOS, 320, EOS}, 3},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := tok.Length(tt.ids); got != tt.want {
			t.Errorf("Length(%v) = %d, want %d", tt.ids[:min(len(tt.ids), 8)], got, tt.want)
		}
	}
}

// TestTruncation checks that long texts keep their first 75 tokens and end
// with EOS whatever the length of the piece that crosses the limit.
func TestTruncation(t *testing.T) {
	tok := loadReal(t)
	for _, n := range []int{74, 75, 76, 200} {
		text := strings.Repeat("7", n) // one token per digit
		ids := tok.Encode(text)
		want := min(n, ContextLength-2)
		if got := tok.Length(ids); got != want+2 {
			t.Errorf("%d digits: Length %d, want %d", n, got, want+2)
		}
		if ids[want+1] != EOS || ids[want] == EOS {
			t.Errorf("%d digits: ids %v", n, ids)
		}
	}
	// A piece of many tokens crossing position 75.
	long := strings.Repeat("a ", 70) + strings.Repeat("zq", 40)
	ids := tok.Encode(long)
	if ids[0] != BOS || ids[76] != EOS || tok.Length(ids) != ContextLength {
		t.Errorf("long piece: %v", ids)
	}
	// The text tokens must be a prefix of the untruncated tokenisation.
	full := tok.tokenize(nil, long, 1<<20)
	if !slices.Equal(ids[1:76], full[:75]) {
		t.Errorf("truncated ids are not a prefix:\n%v\n%v", ids[1:76], full[:75])
	}
}

func TestEncodeBatchAndConcurrency(t *testing.T) {
	tok := loadReal(t)
	texts := []string{"a photo of a cat", "", "ΟΔΟΣ", strings.Repeat("x", 1000), "a dog"}
	flat := tok.EncodeBatch(texts)
	if len(flat) != len(texts)*ContextLength {
		t.Fatalf("EncodeBatch returned %d ids, want %d", len(flat), len(texts)*ContextLength)
	}
	want := make([][]int32, len(texts))
	for i, text := range texts {
		want[i] = tok.Encode(text)
		if !slices.Equal(flat[i*ContextLength:(i+1)*ContextLength], want[i]) {
			t.Errorf("EncodeBatch row %d differs from Encode(%q)", i, text)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				i := (k + w) % len(texts)
				if !slices.Equal(tok.Encode(texts[i]), want[i]) {
					errs <- texts[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for text := range errs {
		t.Errorf("concurrent Encode(%q) differs", text)
	}
}

func TestCacheBounded(t *testing.T) {
	var c wordCache
	for i := 0; i < 3*cacheMaxEntries; i++ {
		c.put(strings.Repeat("w", i%100)+string(rune('a'+i%26))+string(rune(i)), []int32{int32(i)})
	}
	if n := len(c.m); n == 0 || n > cacheMaxEntries {
		t.Fatalf("cache holds %d entries, want 1..%d", n, cacheMaxEntries)
	}
	c.put(strings.Repeat("z", cacheMaxWord+1), []int32{1})
	if _, ok := c.get(strings.Repeat("z", cacheMaxWord+1)); ok {
		t.Errorf("a piece longer than %d bytes was cached", cacheMaxWord)
	}
}

// TestMegabyte encodes megabyte texts of several shapes: one piece, many
// pieces, only spaces, random bytes, many special tokens.
func TestMegabyte(t *testing.T) {
	tok := loadReal(t)
	const mb = 1 << 20
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, mb)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	texts := map[string]string{
		"one piece":   strings.Repeat("abcdefghij", mb/10),
		"punctuation": strings.Repeat("!?", mb/2),
		"words":       strings.Repeat("a photo of a cat ", mb/17),
		"spaces":      strings.Repeat(" \t\n", mb/3),
		"random":      string(random),
		"specials":    strings.Repeat("<|endoftext|>", mb/13),
	}
	for name, text := range texts {
		ids := tok.Encode(text)
		checkIDs(t, tok, ids, name)
	}
}

// checkIDs verifies the invariants of an encoding.
func checkIDs(t *testing.T, tok *Tokenizer, ids []int32, what string) {
	t.Helper()
	if len(ids) != ContextLength {
		t.Fatalf("%s: %d ids, want %d", what, len(ids), ContextLength)
	}
	if ids[0] != BOS {
		t.Fatalf("%s: first id %d, want BOS", what, ids[0])
	}
	for i, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("%s: id %d at %d out of range", what, id, i)
		}
	}
	n := tok.Length(ids)
	if n < 2 || ids[n-1] != EOS {
		t.Fatalf("%s: length %d, ids %v: no EOS before the padding", what, n, ids)
	}
	for i := n; i < len(ids); i++ {
		if ids[i] != tok.PadID() {
			t.Fatalf("%s: id %d at %d after the end, want pad", what, ids[i], i)
		}
	}
}
