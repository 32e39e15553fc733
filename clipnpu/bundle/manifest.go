package bundle

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Record is one manifest line: a tag, then whitespace-separated fields. A
// field written k=v can also be looked up by key.
type Record struct {
	Line   int      // 1-based line number in manifest.txt
	Tag    string   // first word
	Fields []string // every word after the tag, k=v ones included
	Text   string   // the line as written (without the line break)
}

// Get returns the value of the field written key=value.
func (r Record) Get(key string) (string, bool) {
	for _, f := range r.Fields {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Rest returns the free text after the first n fields (after the tag) with
// its spacing intact, minus the one space that separates it from field n:
// how a prompt, a label or a param value is written.
func (r Record) Rest(n int) string {
	s := r.Text
	for i := 0; i <= n; i++ {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		j := strings.IndexFunc(s, unicode.IsSpace)
		if j < 0 {
			return ""
		}
		s = s[j:]
	}
	// A single separator: a tab or a space, like the exporter writes.
	if s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

// manifest is manifest.txt parsed: the three records every bundle shares
// interpreted, the model's own records kept in file order.
type manifest struct {
	version    int
	versionSet bool
	params     map[string]string
	paramLine  map[string]int
	xclbins    []Xclbin
	records    []Record
}

// Xclbin is an `xclbin <key> <file> <kernel-name>` record: a hardware
// context the kernel records refer to by key.
type Xclbin struct {
	Key    string
	File   string // bundle-relative path, checked not to leave the bundle
	Kernel string // kernel name inside the xclbin, usually MLIR_AIE
	Line   int
}

// parseManifest reads manifest.txt (file names it in errors). It checks the
// syntax of the shared records; the model records are checked by their
// accessors and by Open.
func parseManifest(file string, data []byte) (*manifest, error) {
	m := &manifest{params: map[string]string{}, paramLine: map[string]int{}}
	if !utf8.Valid(data) {
		// Find the line for a useful message.
		for i, line := range bytes.Split(data, []byte("\n")) {
			if !utf8.Valid(line) {
				return nil, &Error{File: file, Line: i + 1, Msg: "not valid UTF-8 text"}
			}
		}
	}
	lines := strings.Split(string(data), "\n")
	for i, text := range lines {
		text = strings.TrimSuffix(text, "\r")
		r, ok := splitRecord(i+1, text)
		if !ok {
			continue
		}
		bad := func(format string, a ...any) error {
			return &Error{File: file, Line: r.Line, Msg: fmt.Sprintf(format, a...)}
		}
		switch r.Tag {
		case "version":
			if m.versionSet {
				return nil, bad("second version record")
			}
			if len(r.Fields) != 1 {
				return nil, bad("want `version <n>`")
			}
			v, err := strconv.Atoi(r.Fields[0])
			if err != nil || v < 0 {
				return nil, bad("version %q is not a number", r.Fields[0])
			}
			m.version, m.versionSet = v, true
		case "param":
			if len(r.Fields) < 2 {
				return nil, bad("want `param <name> <value>`")
			}
			k := r.Fields[0]
			if _, dup := m.params[k]; dup {
				return nil, bad("param %s defined twice (first on line %d)", k, m.paramLine[k])
			}
			m.params[k] = r.Rest(1)
			m.paramLine[k] = r.Line
		case "xclbin":
			if len(r.Fields) != 3 {
				return nil, bad("want `xclbin <key> <file> <kernel-name>`")
			}
			for _, x := range m.xclbins {
				if x.Key == r.Fields[0] {
					return nil, bad("xclbin %s defined twice (first on line %d)", x.Key, x.Line)
				}
			}
			if err := checkRel(r.Fields[1]); err != nil {
				return nil, bad("xclbin %s: %v", r.Fields[0], err)
			}
			m.xclbins = append(m.xclbins, Xclbin{Key: r.Fields[0], File: r.Fields[1], Kernel: r.Fields[2], Line: r.Line})
		default:
			m.records = append(m.records, r)
		}
	}
	return m, nil
}

// splitRecord splits one line; blank lines and lines whose first word starts
// with '#' are not records.
func splitRecord(line int, text string) (Record, bool) {
	f := strings.Fields(text)
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return Record{}, false
	}
	return Record{Line: line, Tag: f[0], Fields: f[1:], Text: text}, true
}

// Unescape undoes Python's unicode_escape codec, the way prompts and labels
// are written into a manifest: \t \n \r \\ \' \" \a \b \f \v, \xNN (the code
// point U+00NN), \uNNNN, \UNNNNNNNN and octal \ooo. An unknown escape is kept
// literally, as Python does; a truncated or invalid one is an error.
func Unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("trailing backslash at byte %d", i)
		}
		e := s[i+1]
		i += 2
		switch e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\n':
			// A backslash-newline is a line continuation in Python; the
			// manifest is line based, so it cannot occur, but honour it.
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", fmt.Errorf(`truncated \%c escape at byte %d`, e, i-2)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || strings.ContainsAny(s[i:i+n], "+-_") {
				return "", fmt.Errorf(`bad \%c escape %q at byte %d`, e, s[i-2:i+n], i-2)
			}
			if v > unicode.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
				return "", fmt.Errorf(`\%c escape %q is not a Unicode scalar value`, e, s[i-2:i+n])
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := rune(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				v = v*8 + rune(s[i]-'0')
				i++
			}
			b.WriteRune(v)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

// Escape writes s the way Python's unicode_escape codec encodes it, so that
// Unescape(Escape(s)) == s for any valid UTF-8 s, and the result never holds
// a line break.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}
