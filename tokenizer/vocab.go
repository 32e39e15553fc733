package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names looked for in a model folder.
const (
	VocabFile         = "vocab.json"                   // Hugging Face: token → id
	MergesFile        = "merges.txt"                   // Hugging Face: "#version" header, one merge a line
	OpenAIVocabFile   = "bpe_simple_vocab_16e6.txt.gz" // OpenAI: the merges; ids are implied
	SpecialTokensFile = "special_tokens_map.json"
	TokenizerConfig   = "tokenizer_config.json"
)

// openAIMerges is how many merges of the OpenAI file CLIP uses: its vocabulary
// holds 49152-256-2 of them (lines 1..48894 after the header line).
const openAIMerges = 49152 - 256 - 2

// Special token strings.
const (
	bosToken = "<|startoftext|>"
	eosToken = "<|endoftext|>"
	eowMark  = "</w>"
)

// ErrNoVocab is returned when a model folder holds neither vocab.json with
// merges.txt nor bpe_simple_vocab_16e6.txt.gz. The message names the folder
// and the missing file.
var ErrNoVocab = errors.New("no tokenizer vocabulary")

// ErrBadVocab is returned when a vocabulary file exists but is malformed or
// inconsistent (a merge whose parts or result are not in the vocabulary, a
// special token with an unexpected id, fewer merges than the vocabulary
// implies, ...). The message names the file.
var ErrBadVocab = errors.New("malformed tokenizer vocabulary")

// vocabulary is what the loaders produce: ids by token and the merges in rank
// order.
type vocabulary struct {
	ids    map[string]int32
	merges [][2]string
	// source and mfile name the files the ids and the merges came from,
	// for error messages.
	source, mfile string
}

// loadVocabulary finds and reads the vocabulary files of dir.
func loadVocabulary(dir string) (*vocabulary, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("model folder %s does not exist: %w", dir, ErrNoVocab)
		}
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("model folder %s is not a folder: %w", dir, ErrNoVocab)
	}
	vpath := filepath.Join(dir, VocabFile)
	mpath := filepath.Join(dir, MergesFile)
	gzpath := filepath.Join(dir, OpenAIVocabFile)
	hasV, hasM, hasGz := exists(vpath), exists(mpath), exists(gzpath)
	switch {
	case hasV && hasM:
		return loadHF(vpath, mpath)
	case hasGz:
		return loadOpenAI(gzpath)
	case hasV:
		return nil, fmt.Errorf("%s has %s but no %s: %w", dir, VocabFile, MergesFile, ErrNoVocab)
	case hasM:
		return nil, fmt.Errorf("%s has %s but no %s: %w", dir, MergesFile, VocabFile, ErrNoVocab)
	}
	return nil, fmt.Errorf("%s has no %s and %s (nor %s): %w", dir, VocabFile, MergesFile, OpenAIVocabFile, ErrNoVocab)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// loadHF reads the Hugging Face layout.
func loadHF(vpath, mpath string) (*vocabulary, error) {
	data, err := os.ReadFile(vpath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", vpath, err)
	}
	var ids map[string]int32
	if err := json.Unmarshal(data, &ids); err != nil {
		return nil, fmt.Errorf("decode %s: %w: %v", vpath, ErrBadVocab, err)
	}
	mdata, err := os.ReadFile(mpath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", mpath, err)
	}
	merges, err := parseMerges(mpath, string(mdata))
	if err != nil {
		return nil, err
	}
	if err := checkMergeCount(mpath, vpath, len(merges), len(ids)); err != nil {
		return nil, err
	}
	return &vocabulary{ids: ids, merges: merges, source: vpath, mfile: mpath}, nil
}

// checkMergeCount refuses a merges file with fewer merges than the
// vocabulary implies. A CLIP vocabulary is the 2×256 byte tokens, one token
// per merge and the 2 special tokens, so without this check an empty or
// truncated merges.txt would load and silently encode text letter by letter.
func checkMergeCount(mpath, vpath string, merges, tokens int) error {
	want := tokens - 2*256 - 2
	switch {
	case merges == 0 && want > 0:
		return fmt.Errorf("%s is empty (no merges): %s has %d tokens, which implies %d merges; restore %s from the model: %w",
			mpath, filepath.Base(vpath), tokens, want, MergesFile, ErrBadVocab)
	case merges < want:
		return fmt.Errorf("%s has %d merges, but %s has %d tokens, which implies %d: the file is truncated; restore %s from the model: %w",
			mpath, merges, filepath.Base(vpath), tokens, want, MergesFile, ErrBadVocab)
	}
	return nil
}

// parseMerges reads merges.txt as the tokenizers library does: lines starting
// with "#version" are skipped, every other line is exactly two tokens
// separated by one space. A final empty line is tolerated. An empty file
// gives no merges; loadHF then refuses it against the vocabulary's size.
func parseMerges(path, text string) ([][2]string, error) {
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	merges := make([][2]string, 0, len(lines))
	for i, line := range lines {
		if strings.HasPrefix(line, "#version") {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("%s:%d: want two tokens separated by a space, got %q: %w", path, i+1, line, ErrBadVocab)
		}
		merges = append(merges, [2]string{a, b})
	}
	return merges, nil
}

// loadOpenAI reads OpenAI's bpe_simple_vocab_16e6.txt.gz. The ids are
// implied by the original simple_tokenizer: the 256 byte characters in
// bytes_to_unicode order, the same with "</w>", one token per merge in merge
// order, then <|startoftext|> and <|endoftext|>.
func loadOpenAI(path string) (*vocabulary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w: %v", path, ErrBadVocab, err)
	}
	sc := bufio.NewScanner(io.LimitReader(zr, 64<<20))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	merges := make([][2]string, 0, openAIMerges)
	for line := 0; len(merges) < openAIMerges && sc.Scan(); line++ {
		if line == 0 {
			continue // header
		}
		a, b, ok := strings.Cut(sc.Text(), " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("%s:%d: want two tokens separated by a space, got %q: %w", path, line+1, sc.Text(), ErrBadVocab)
		}
		merges = append(merges, [2]string{a, b})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("decode %s: %w: %v", path, ErrBadVocab, err)
	}
	if len(merges) < openAIMerges {
		return nil, fmt.Errorf("%s: %d merges, want at least %d: %w", path, len(merges), openAIMerges, ErrBadVocab)
	}
	chars := byteOrder()
	ids := make(map[string]int32, 2*256+len(merges)+2)
	add := func(tok string) {
		if _, dup := ids[tok]; !dup {
			ids[tok] = int32(len(ids))
		}
	}
	for _, c := range chars {
		add(string(c))
	}
	for _, c := range chars {
		add(string(c) + eowMark)
	}
	for _, m := range merges {
		add(m[0] + m[1])
	}
	add(bosToken)
	add(eosToken)
	return &vocabulary{ids: ids, merges: merges, source: path, mfile: path}, nil
}

// tokenString is a special-token entry of special_tokens_map.json or
// tokenizer_config.json: either a plain string or {"content": "..."}.
type tokenString struct {
	set     bool
	content string
}

func (t *tokenString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		t.set = true
		return json.Unmarshal(b, &t.content)
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	if obj.Content != nil {
		t.set, t.content = true, *obj.Content
	}
	return nil
}

// tokenizerConfig is the part of tokenizer_config.json (and of
// special_tokens_map.json) that the tokenizer reads.
type tokenizerConfig struct {
	PadToken    tokenString `json:"pad_token"`
	AddedTokens map[string]struct {
		Content string `json:"content"`
	} `json:"added_tokens_decoder"`
}

// readConfig decodes path into cfg; a missing file leaves cfg untouched.
func readConfig(path string, cfg *tokenizerConfig) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, cfg); err != nil {
		return fmt.Errorf("decode %s: %w: %v", path, ErrBadVocab, err)
	}
	return nil
}

// padToken returns the pad token string of dir and the file it came from:
// special_tokens_map.json wins over tokenizer_config.json (as in
// transformers), and CLIPTokenizer's default "<|endoftext|>" applies when
// neither names one. It also returns the added tokens of
// tokenizer_config.json (id by content), which may define tokens vocab.json
// lacks.
func padToken(dir string) (pad, from string, added map[string]int32, err error) {
	var stm, tc tokenizerConfig
	stmPath := filepath.Join(dir, SpecialTokensFile)
	tcPath := filepath.Join(dir, TokenizerConfig)
	if err := readConfig(stmPath, &stm); err != nil {
		return "", "", nil, err
	}
	if err := readConfig(tcPath, &tc); err != nil {
		return "", "", nil, err
	}
	added = make(map[string]int32, len(tc.AddedTokens))
	for id, tok := range tc.AddedTokens {
		var n int32
		if _, err := fmt.Sscan(id, &n); err != nil || n < 0 {
			return "", "", nil, fmt.Errorf("%s: added token id %q is not a number: %w", tcPath, id, ErrBadVocab)
		}
		added[tok.Content] = n
	}
	switch {
	case stm.PadToken.set:
		return stm.PadToken.content, stmPath, added, nil
	case tc.PadToken.set:
		return tc.PadToken.content, tcPath, added, nil
	}
	return eosToken, "", added, nil
}
