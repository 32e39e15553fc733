package index

import (
	"bytes"
	"testing"
)

func FuzzSniff(f *testing.F) {
	for _, s := range []string{"\xff\xd8\xff\xe0", png, "GIF89a", "RIFF\x00\x00\x00\x00WEBPVP8 ", "II*\x00", "\x00\x00\x00\x18ftypheic", "BM"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Sniff(b)
		// Sniffing looks only at the header: more bytes never change it.
		if again := Sniff(append(bytes.Clone(b), 0, 1, 2, 3)); len(b) >= 16 && again != got {
			t.Fatalf("Sniff changed from %q to %q when bytes were appended", got, again)
		}
		if got.Supported() && len(b) < 2 {
			t.Fatalf("Sniff(%x) = %q from fewer than 2 bytes", b, got)
		}
	})
}
