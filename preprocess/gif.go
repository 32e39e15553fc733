package preprocess

import (
	"errors"
	"image"
	"image/color"
)

var errNoGIFPalette = errors.New("no palette")

// fixGIFTransparent restores the palette colour of the transparent index of
// the first frame: Go's decoder blanks it to transparent black, Pillow's
// convert("RGB") uses the stored colour.
func fixGIFTransparent(img image.Image, d []byte) {
	p, ok := img.(*image.Paletted)
	if !ok {
		return
	}
	table, ti, err := gifFirstFrameTable(d)
	if err != nil || ti < 0 || ti >= len(p.Palette) || 3*ti+3 > len(table) {
		return
	}
	pal := append(p.Palette[:0:0], p.Palette...) // the palette may be shared
	pal[ti] = rgbColor(table[3*ti], table[3*ti+1], table[3*ti+2])
	p.Palette = pal
}

// gifFirstFrameTable walks a GIF up to its first image descriptor and
// returns the colour table that frame uses and its transparent index (-1
// when it has none).
func gifFirstFrameTable(d []byte) (table []byte, transparent int, err error) {
	if len(d) < 13 {
		return nil, -1, errNoGIFPalette
	}
	i := 13
	var global []byte
	if flags := d[10]; flags&0x80 != 0 {
		n := 3 << ((flags & 7) + 1)
		if i+n > len(d) {
			return nil, -1, errNoGIFPalette
		}
		global, i = d[i:i+n], i+n
	}
	transparent = -1
	for i < len(d) {
		switch d[i] {
		case 0x21: // extension: label, then sub-blocks
			if i+2 > len(d) {
				return nil, -1, errNoGIFPalette
			}
			label := d[i+1]
			i += 2
			first := true
			for i < len(d) && d[i] != 0 {
				n := int(d[i])
				if i+1+n > len(d) {
					return nil, -1, errNoGIFPalette
				}
				if label == 0xf9 && first && n >= 4 {
					transparent = -1
					if d[i+1]&1 != 0 {
						transparent = int(d[i+4])
					}
				}
				first = false
				i += 1 + n
			}
			i++ // block terminator
		case 0x2c: // image descriptor
			if i+10 > len(d) {
				return nil, -1, errNoGIFPalette
			}
			if flags := d[i+9]; flags&0x80 != 0 {
				n := 3 << ((flags & 7) + 1)
				if i+10+n > len(d) {
					return nil, -1, errNoGIFPalette
				}
				return d[i+10 : i+10+n], transparent, nil
			}
			if global == nil {
				return nil, -1, errNoGIFPalette
			}
			return global, transparent, nil
		default:
			return nil, -1, errNoGIFPalette
		}
	}
	return nil, -1, errNoGIFPalette
}

func rgbColor(r, g, b byte) color.Color { return color.RGBA{r, g, b, 0xff} }
