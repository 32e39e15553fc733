package termimg

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"regexp"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Protocol
	}{
		{map[string]string{"TERM": "xterm-kitty"}, Kitty},
		{map[string]string{"TERM": "xterm-256color", "KITTY_WINDOW_ID": "1"}, Kitty},
		{map[string]string{"TERM": "xterm-ghostty"}, Kitty},
		{map[string]string{"TERM_PROGRAM": "iTerm.app"}, ITerm2},
		{map[string]string{"LC_TERMINAL": "iTerm2"}, ITerm2},
		{map[string]string{"TERM_PROGRAM": "WezTerm"}, ITerm2},
		{map[string]string{"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"}, None},
		{map[string]string{"TERM": "xterm-256color"}, None},
		{map[string]string{}, None},
	} {
		got, why := Detect(func(k string) string { return tc.env[k] })
		if got != tc.want || (got == None) != (why != "") {
			t.Errorf("%v: %v %q, want %v", tc.env, got, why, tc.want)
		}
	}
}

// TestWrite decodes what was written back to the image.
func TestWrite(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 90, 70))
	x := uint32(1)
	for i := range img.Pix {
		x = x*1664525 + 1013904223 // noise: a PNG of many chunks
		img.Pix[i] = byte(x >> 24)
	}
	check := func(name, b64 string) {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := png.Decode(bytes.NewReader(raw))
		if err != nil || got.Bounds() != img.Bounds() {
			t.Fatalf("%s: %v %v", name, err, got)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, Kitty, img); err != nil {
		t.Fatal(err)
	}
	chunks := regexp.MustCompile("\x1b_G([^;]*);([^\x1b]*)\x1b\\\\").FindAllStringSubmatch(buf.String(), -1)
	if len(chunks) < 2 || !strings.HasPrefix(chunks[0][1], "a=T,f=100") || chunks[len(chunks)-1][1] != "m=0" {
		t.Fatalf("kitty: %d chunks, first %q", len(chunks), chunks[0][1])
	}
	var all string
	for i, c := range chunks {
		if len(c[2]) > 4096 || (i < len(chunks)-1 && !strings.HasSuffix(c[1], "m=1")) {
			t.Errorf("chunk %d: %q, %d bytes", i, c[1], len(c[2]))
		}
		all += c[2]
	}
	check("kitty", all)
	buf.Reset()
	if err := Write(&buf, ITerm2, img); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("^\x1b]1337;File=inline=1;size=(\\d+);preserveAspectRatio=1:([^\a]*)\a\n$").FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("iterm2: %q", buf.String()[:40])
	}
	check("iterm2", m[2])
	if Write(&buf, None, img) == nil {
		t.Error("None wrote an image")
	}
}
