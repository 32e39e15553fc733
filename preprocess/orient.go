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
	base, dx, dy, moved := orientWalk(w, h, o)
	if !moved {
		copy(dst, src[:w*h*3])
		return w, h
	}
	if dx == 1 || dx == -1 {
		// Rows stay rows (2, 3, 4): each is read straight, forwards or
		// backwards; tiles only cost here (2.4x for orientation 2).
		for y := 0; y < oh; y++ {
			p := base + y*dy
			d := dst[y*ow*3 : (y+1)*ow*3]
			for i := 0; i < len(d); i += 3 {
				s := src[p*3 : p*3+3 : p*3+3]
				d[i], d[i+1], d[i+2] = s[0], s[1], s[2]
				p += dx
			}
		}
		return ow, oh
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

// orientWalk says how orientation o reads a w x h source: output pixel
// (x, y) is source pixel base + x*dx + y*dy. moved is false for 1 (and
// unknown values): the image stays as it is.
func orientWalk(w, h, o int) (base, dx, dy int, moved bool) {
	switch o {
	case 2:
		return w - 1, -1, w, true
	case 3:
		return w*h - 1, -1, -w, true
	case 4:
		return (h - 1) * w, 1, -w, true
	case 5: // (x, y) <- (y, x)
		return 0, w, 1, true
	case 6: // (x, y) <- (y, h-1-x)
		return (h - 1) * w, -w, 1, true
	case 7: // (x, y) <- (w-1-y, h-1-x)
		return (h-1)*w + w - 1, -w, -1, true
	case 8: // (x, y) <- (w-1-y, x)
		return w - 1, w, -1, true
	}
	return 0, 0, 0, false
}
