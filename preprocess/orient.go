package preprocess

// orientDims returns the size of an image of size w x h after EXIF
// orientation o: 5..8 swap the axes.
func orientDims(w, h, o int) (int, int) {
	if o >= 5 && o <= 8 {
		return h, w
	}
	return w, h
}

// orient writes the packed-RGB image src (w x h) into dst displayed as EXIF
// orientation o asks, exactly as Pillow's ImageOps.exif_transpose:
// 2 mirror left-right, 3 rotate 180, 4 mirror top-bottom, 5 transpose,
// 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise.
// dst must hold w*h*3 bytes; it returns the new width and height.
func orient(dst, src []byte, w, h, o int) (int, int) {
	ow, oh := orientDims(w, h, o)
	// Output pixel (x, y) reads source pixel index base + x*dx + y*dy.
	var base, dx, dy int
	switch o {
	case 2:
		base, dx, dy = w-1, -1, w
	case 3:
		base, dx, dy = w*h-1, -1, -w
	case 4:
		base, dx, dy = (h-1)*w, 1, -w
	case 5: // (x, y) <- (y, x)
		base, dx, dy = 0, w, 1
	case 6: // (x, y) <- (y, h-1-x)
		base, dx, dy = (h-1)*w, -w, 1
	case 7: // (x, y) <- (w-1-y, h-1-x)
		base, dx, dy = (h-1)*w+w-1, -w, -1
	case 8: // (x, y) <- (w-1-y, x)
		base, dx, dy = w-1, w, -1
	default:
		copy(dst, src[:w*h*3])
		return w, h
	}
	// Tiles keep the strided reads of the transposing cases in cache.
	const tile = 64
	for ty := 0; ty < oh; ty += tile {
		for tx := 0; tx < ow; tx += tile {
			for y := ty; y < min(ty+tile, oh); y++ {
				p := base + tx*dx + y*dy
				d := dst[(y*ow+tx)*3 : (y*ow+min(tx+tile, ow))*3]
				for i := 0; i < len(d); i += 3 {
					s := src[p*3 : p*3+3 : p*3+3]
					d[i], d[i+1], d[i+2] = s[0], s[1], s[2]
					p += dx
				}
			}
		}
	}
	return ow, oh
}
