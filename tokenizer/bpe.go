package tokenizer

import (
	"strings"
	"sync"
)

// byteOrder returns GPT-2's bytes_to_unicode table in its original order:
// the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, then
// the remaining bytes, in increasing order, map to U+0100, U+0101, ...
// byteOrder()[k] is the character of the k-th byte in that order, which is
// also the order of the first 256 ids of OpenAI's vocabulary.
func byteOrder() []rune {
	order := make([]rune, 0, 256)
	printable := func(b int) bool {
		return '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF
	}
	for b := 0; b < 256; b++ {
		if printable(b) {
			order = append(order, rune(b))
		}
	}
	n := 0
	for b := 0; b < 256; b++ {
		if !printable(b) {
			order = append(order, rune(256+n))
			n++
		}
	}
	return order
}

// byteChars returns the byte-level character of each byte (indexed by byte).
func byteChars() [256]rune {
	var chars [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			chars[b] = rune(b)
		} else {
			chars[b] = rune(256 + n)
			n++
		}
	}
	return chars
}

// merge is the rank of a pair of ids and the id of the merged token.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// simpleBPELimit is the word length (in bytes) up to which bpe uses the
// quadratic scan; longer words use a heap so that a megabyte without a space
// stays O(n log n).
const simpleBPELimit = 48

// bpe appends to dst the ids of one pre-tokenised piece: its UTF-8 bytes
// mapped to byte-level symbols, the last one carrying "</w>", merged lowest
// rank first and leftmost first on ties.
func (t *Tokenizer) bpe(dst []int32, word string) []int32 {
	if word == "" {
		return dst
	}
	if len(word) <= simpleBPELimit {
		var buf [simpleBPELimit]int32
		syms := buf[:len(word)]
		t.initSymbols(syms, word)
		return append(dst, t.mergeSimple(syms)...)
	}
	syms := make([]int32, len(word))
	t.initSymbols(syms, word)
	return append(dst, t.mergeHeap(syms)...)
}

func (t *Tokenizer) initSymbols(syms []int32, word string) {
	for i := 0; i < len(word); i++ {
		syms[i] = t.byteID[word[i]]
	}
	syms[len(syms)-1] = t.byteEndID[word[len(word)-1]]
}

// mergeSimple merges syms in place by repeated scans for the best pair.
func (t *Tokenizer) mergeSimple(syms []int32) []int32 {
	for len(syms) > 1 {
		best, bestRank, bestID := -1, int32(0), int32(0)
		for i := 0; i+1 < len(syms); i++ {
			m, ok := t.merges[pairKey(syms[i], syms[i+1])]
			if ok && (best < 0 || m.rank < bestRank) {
				best, bestRank, bestID = i, m.rank, m.id
			}
		}
		if best < 0 {
			break
		}
		syms[best] = bestID
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	return syms
}

// candidate is a possible merge of the symbol at pos with the one after it,
// valid while both still hold the ids left and right.
type candidate struct {
	rank, pos   int32
	left, right int32
}

// candidates is a binary min-heap ordered by (rank, pos): lowest rank first,
// leftmost first on ties.
type candidates []candidate

func (h candidates) less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}

func (h *candidates) push(c candidate) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *candidates) pop() candidate {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// mergeHeap computes the same result as mergeSimple with a priority queue of
// candidate pairs over a linked list of symbols. Stale candidates (one of
// whose symbols has since changed) are skipped when popped.
func (t *Tokenizer) mergeHeap(syms []int32) []int32 {
	n := len(syms)
	next := make([]int32, n)
	prev := make([]int32, n)
	alive := make([]bool, n)
	for i := range syms {
		next[i], prev[i], alive[i] = int32(i+1), int32(i-1), true
	}
	next[n-1] = -1
	h := make(candidates, 0, n)
	// push adds the pair starting at symbol i, if it has a merge.
	push := func(i int32) {
		if i < 0 || next[i] < 0 {
			return
		}
		j := next[i]
		if m, ok := t.merges[pairKey(syms[i], syms[j])]; ok {
			h.push(candidate{rank: m.rank, pos: i, left: syms[i], right: syms[j]})
		}
	}
	for i := int32(0); i+1 < int32(n); i++ {
		push(i)
	}
	for len(h) > 0 {
		c := h.pop()
		i := c.pos
		j := next[i]
		if !alive[i] || j < 0 || syms[i] != c.left || syms[j] != c.right {
			continue // stale: a neighbour merged since this was pushed
		}
		syms[i] = t.merges[pairKey(c.left, c.right)].id
		alive[j] = false
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		push(prev[i])
		push(i)
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

// Cache bounds: pieces longer than cacheMaxWord bytes are never cached, and
// the cache is emptied when it reaches cacheMaxEntries, so its memory stays
// under a few megabytes whatever the input.
const (
	cacheMaxWord    = 64
	cacheMaxEntries = 1 << 15
)

// wordCache maps a piece to its BPE ids. Safe for concurrent use.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func (c *wordCache) get(word string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[word]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int32) {
	if len(word) > cacheMaxWord {
		return
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMaxEntries {
		c.m = make(map[string][]int32, 1024)
	}
	// Clone: word may be a slice of a much larger text.
	c.m[strings.Clone(word)] = ids
	c.mu.Unlock()
}

// word appends the ids of one piece, through the cache.
func (t *Tokenizer) word(dst []int32, piece string) []int32 {
	if len(piece) > cacheMaxWord {
		return t.bpe(dst, piece)
	}
	if ids, ok := t.cache.get(piece); ok {
		return append(dst, ids...)
	}
	ids := t.bpe(nil, piece)
	t.cache.put(piece, ids)
	return append(dst, ids...)
}
