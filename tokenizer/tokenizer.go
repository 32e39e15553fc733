package tokenizer

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// CLIP's sequence layout.
const (
	ContextLength = 77    // ids per text, BOS and EOS included
	BOS           = 49406 // <|startoftext|>
	EOS           = 49407 // <|endoftext|>
)

// maxVocab bounds the ids a vocabulary file may use, so that a corrupt file
// cannot make Load allocate gigabytes (CLIP's has 49408).
const maxVocab = 1 << 22

// Tokenizer encodes text into CLIP token ids. It is safe for concurrent use.
type Tokenizer struct {
	tokens    []string // id → token, byte-level characters ("</w>" kept)
	merges    map[uint64]merge
	byteID    [256]int32 // id of each byte's character
	byteEndID [256]int32 // id of each byte's character + "</w>"
	unbyte    map[rune]byte
	pad       int32
	cache     wordCache
}

// Load reads the vocabulary of a model folder: vocab.json and merges.txt
// (Hugging Face layout) or bpe_simple_vocab_16e6.txt.gz (OpenAI layout). The
// pad id comes from special_tokens_map.json or tokenizer_config.json when the
// folder has them (their pad_token resolved through the vocabulary and the
// added tokens), else it is EOS. Errors name the folder or the file at fault
// and wrap ErrNoVocab or ErrBadVocab.
func Load(dir string) (*Tokenizer, error) {
	v, err := loadVocabulary(dir)
	if err != nil {
		return nil, err
	}
	t, err := build(v)
	if err != nil {
		return nil, err
	}
	pad, from, added, err := padToken(dir)
	if err != nil {
		return nil, err
	}
	id, ok := v.ids[pad]
	if !ok {
		id, ok = added[pad]
	}
	if !ok || id < 0 || int(id) >= len(t.tokens) {
		if from == "" {
			from = v.source
		}
		return nil, fmt.Errorf("%s: pad token %q is not in %s: %w", from, pad, filepath.Base(v.source), ErrBadVocab)
	}
	t.pad = id
	return t, nil
}

// build checks a vocabulary and turns it into a Tokenizer.
func build(v *vocabulary) (*Tokenizer, error) {
	size := int32(0)
	for tok, id := range v.ids {
		if id < 0 || id >= maxVocab {
			return nil, fmt.Errorf("%s: token %q has id %d outside [0, %d): %w", v.source, tok, id, maxVocab, ErrBadVocab)
		}
		size = max(size, id+1)
	}
	t := &Tokenizer{
		tokens: make([]string, size),
		merges: make(map[uint64]merge, len(v.merges)),
		unbyte: make(map[rune]byte, 256),
	}
	for tok, id := range v.ids {
		t.tokens[id] = tok
	}
	for name, want := range map[string]int32{bosToken: BOS, eosToken: EOS} {
		if id, ok := v.ids[name]; !ok || id != want {
			return nil, fmt.Errorf("%s: special token %s must have id %d: %w", v.source, name, want, ErrBadVocab)
		}
	}
	chars := byteChars()
	for b, c := range chars {
		t.unbyte[c] = byte(b)
		id, ok := v.ids[string(c)]
		idEnd, okEnd := v.ids[string(c)+eowMark]
		if !ok || !okEnd {
			return nil, fmt.Errorf("%s: byte 0x%02x (%q and %q) must be in the vocabulary: %w", v.source, b, string(c), string(c)+eowMark, ErrBadVocab)
		}
		t.byteID[b], t.byteEndID[b] = id, idEnd
	}
	for rank, m := range v.merges {
		a, okA := v.ids[m[0]]
		b, okB := v.ids[m[1]]
		id, okM := v.ids[m[0]+m[1]]
		if !okA || !okB || !okM {
			return nil, fmt.Errorf("%s: merge %d %q %q: the parts and the result must be in %s: %w", v.mfile, rank+1, m[0], m[1], filepath.Base(v.source), ErrBadVocab)
		}
		// A repeated pair keeps its last rank, as in both reference
		// implementations (a dict / hash map built in order).
		t.merges[pairKey(a, b)] = merge{rank: int32(rank), id: id}
	}
	return t, nil
}

// PadID returns the id that fills the positions after EOS.
func (t *Tokenizer) PadID() int32 { return t.pad }

// VocabSize returns the number of ids (one more than the largest id).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Encode returns the ContextLength ids of text: BOS, the text's tokens cut to
// ContextLength-2, EOS, then padding. It never fails: invalid UTF-8 bytes are
// read as U+FFFD.
func (t *Tokenizer) Encode(text string) []int32 {
	out := make([]int32, ContextLength)
	t.encodeInto(out, text)
	return out
}

// EncodeBatch returns the ids of each text, flat: [len(texts), ContextLength].
func (t *Tokenizer) EncodeBatch(texts []string) []int32 {
	out := make([]int32, len(texts)*ContextLength)
	for i, text := range texts {
		t.encodeInto(out[i*ContextLength:(i+1)*ContextLength], text)
	}
	return out
}

// encodeInto fills out (ContextLength ids) with the encoding of text.
func (t *Tokenizer) encodeInto(out []int32, text string) {
	out[0] = BOS
	// The content ids go straight into out[1:76] unless a long last piece
	// overflows it; tokenize cuts them to ContextLength-2 either way.
	ids := t.tokenize(out[1:1:ContextLength-1], text, ContextLength-2)
	n := 1 + copy(out[1:ContextLength-1], ids)
	out[n] = EOS
	for i := n + 1; i < len(out); i++ {
		out[i] = t.pad
	}
}

// tokenize appends to dst the ids of text (no BOS/EOS), at most limit of
// them. It stops reading the text once limit ids are known, so a megabyte
// costs only its normalisation.
func (t *Tokenizer) tokenize(dst []int32, text string, limit int) []int32 {
	start := len(dst)
	s := normalize(text)
	for len(s) > 0 && len(dst)-start < limit {
		seg, special, rest := nextSpecial(s)
		s = rest
		splitPieces(seg, func(piece string) bool {
			dst = t.word(dst, piece)
			return len(dst)-start < limit
		})
		if special >= 0 && len(dst)-start < limit {
			dst = append(dst, special)
		}
	}
	if len(dst)-start > limit {
		dst = dst[:start+limit]
	}
	return dst
}

// nextSpecial splits s at its first special token: the text before it, the
// token's id (-1 when there is none) and the text after it.
func nextSpecial(s string) (before string, id int32, after string) {
	i := strings.Index(s, "<|")
	for i >= 0 {
		switch rest := s[i:]; {
		case strings.HasPrefix(rest, bosToken):
			return s[:i], BOS, rest[len(bosToken):]
		case strings.HasPrefix(rest, eosToken):
			return s[:i], EOS, rest[len(eosToken):]
		}
		j := strings.Index(s[i+2:], "<|")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return s, -1, ""
}

// Length returns the number of ids that are not padding, BOS and EOS
// included (the attention mask's ones). When the pad id equals EOS, the first
// of the trailing pad ids is taken as the EOS; a text that itself ends with a
// literal <|endoftext|> therefore counts one id short (ids alone cannot tell
// the two apart; the model pools at the first EOS, so this only affects
// reporting).
func (t *Tokenizer) Length(ids []int32) int {
	n := len(ids)
	for n > 0 && ids[n-1] == t.pad {
		n--
	}
	if t.pad == EOS && n < len(ids) && n > 0 {
		n++
	}
	return n
}

// Decode renders ids as text for debugging: padding, the leading BOS and the
// final EOS are dropped, other special tokens appear literally, word ends
// become spaces, and ids outside the vocabulary appear as <|id N|>. Bytes that
// do not form valid UTF-8 become U+FFFD.
func (t *Tokenizer) Decode(ids []int32) string {
	ids = ids[:t.Length(ids)]
	if len(ids) > 0 && ids[0] == BOS {
		ids = ids[1:]
	}
	if len(ids) > 0 && ids[len(ids)-1] == EOS {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for _, id := range ids {
		switch {
		case id < 0 || int(id) >= len(t.tokens):
			b = fmt.Appendf(b, "<|id %d|>", id)
		case id == BOS || id == EOS:
			b = append(b, t.tokens[id]...)
		default:
			tok, eow := strings.CutSuffix(t.tokens[id], eowMark)
			for _, r := range tok {
				if c, ok := t.unbyte[r]; ok {
					b = append(b, c)
				} else {
					b = utf8.AppendRune(b, r)
				}
			}
			if eow {
				b = append(b, ' ')
			}
		}
	}
	return strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), " ")
}
