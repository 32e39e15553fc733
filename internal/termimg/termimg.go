// Package termimg draws images inline in terminals that can show them: the
// kitty graphics protocol (kitty, Ghostty, WezTerm) and iTerm2's inline
// images (iTerm2, WezTerm). The caller passes the environment; this
// package reads none.
package termimg

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
)

// Protocol is a way of drawing images in a terminal.
type Protocol int

const (
	None   Protocol = iota // the terminal shows no images (or cannot be told)
	Kitty                  // kitty graphics protocol, PNG payload
	ITerm2                 // iTerm2 inline images (OSC 1337)
)

func (p Protocol) String() string {
	return [...]string{"none", "kitty", "iterm2"}[p]
}

// Detect tells from the environment (getenv is os.Getenv or a fake) which
// protocol the terminal speaks, and when it is None, why, for a message.
// Inside tmux or screen, whose escapes would need a passthrough the user
// may have disabled, it answers None.
func Detect(getenv func(string) string) (Protocol, string) {
	term, prog := getenv("TERM"), getenv("TERM_PROGRAM")
	switch {
	case getenv("TMUX") != "" || strings.HasPrefix(term, "screen") || strings.HasPrefix(term, "tmux"):
		return None, "inside tmux or screen, which do not pass images through"
	case term == "xterm-kitty" || getenv("KITTY_WINDOW_ID") != "" || term == "xterm-ghostty" || prog == "ghostty":
		return Kitty, ""
	case prog == "iTerm.app" || getenv("LC_TERMINAL") == "iTerm2" || prog == "WezTerm":
		return ITerm2, ""
	}
	return None, fmt.Sprintf("TERM=%q TERM_PROGRAM=%q is not a terminal known to show images (kitty, Ghostty, WezTerm, iTerm2)", term, prog)
}

// Write draws img at the cursor with protocol p, then a newline.
func Write(w io.Writer, p Protocol, img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	data := base64.StdEncoding.EncodeToString(buf.Bytes())
	var out strings.Builder
	switch p {
	case Kitty:
		// Transmit and display (a=T) a PNG (f=100) in chunks of at most
		// 4096 base64 bytes, each saying whether more follow (m=1).
		for first := true; first || data != ""; first = false {
			n := min(len(data), 4096)
			chunk := data[:n]
			data = data[n:]
			more := 0
			if data != "" {
				more = 1
			}
			if first {
				fmt.Fprintf(&out, "\x1b_Ga=T,f=100,q=2,m=%d;%s\x1b\\", more, chunk)
			} else {
				fmt.Fprintf(&out, "\x1b_Gm=%d;%s\x1b\\", more, chunk)
			}
		}
	case ITerm2:
		fmt.Fprintf(&out, "\x1b]1337;File=inline=1;size=%d;preserveAspectRatio=1:%s\a", buf.Len(), data)
	default:
		return fmt.Errorf("termimg: this terminal shows no images")
	}
	out.WriteString("\n")
	_, err := io.WriteString(w, out.String())
	return err
}
