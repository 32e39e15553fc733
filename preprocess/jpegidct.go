package preprocess

// libjpeg-turbo's "slow" integer inverse DCT (jidctint.c, JDCT_ISLOW, which
// Pillow uses): the Loeffler-Ligtenberg-Moschytz algorithm with 13-bit
// constants, columns first with 2 extra bits of precision, then rows. The
// arithmetic below is the same sequence of integer operations, so the
// result is identical. Outputs are clamped to 0..255 as libjpeg-turbo's SIMD
// code does (the C code's range-limit table wraps values beyond ±512, which
// no real image reaches).

const (
	idctConstBits = 13
	idctPass1Bits = 2

	fix0298631336 = 2446
	fix0390180644 = 3196
	fix0541196100 = 4433
	fix0765366865 = 6270
	fix0899976223 = 7373
	fix1175875602 = 9633
	fix1501321110 = 12299
	fix1847759065 = 15137
	fix1961570560 = 16069
	fix2053119869 = 16819
	fix2562915447 = 20995
	fix3072711026 = 25172
)

// idctOut descales a pass-2 value to a sample.
func idctOut(v int32) byte {
	const shift = idctConstBits + idctPass1Bits + 3
	return clampByte((v+1<<(shift-1))>>shift + 128)
}

// idctDC writes a block whose only coefficient is the (dequantized) DC.
func idctDC(dc int32, dst []byte, stride int) {
	v := dc << idctPass1Bits
	b := clampByte((v+1<<(idctPass1Bits+2))>>(idctPass1Bits+3) + 128)
	for y := 0; y < 8; y++ {
		row := dst[y*stride : y*stride+8 : y*stride+8]
		row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7] = b, b, b, b, b, b, b, b
	}
}

// idctGeneric transforms a dequantized block (natural order) into 8x8
// samples at dst with the given stride: the reference for idct's SIMD
// (jpegsimd_*.go).
func idctGeneric(in *[64]int32, dst []byte, stride int) {
	var ws [64]int32
	// Pass 1: columns.
	for c := 0; c < 8; c++ {
		if in[8+c] == 0 && in[16+c] == 0 && in[24+c] == 0 && in[32+c] == 0 &&
			in[40+c] == 0 && in[48+c] == 0 && in[56+c] == 0 {
			dc := in[c] << idctPass1Bits
			ws[c], ws[8+c], ws[16+c], ws[24+c] = dc, dc, dc, dc
			ws[32+c], ws[40+c], ws[48+c], ws[56+c] = dc, dc, dc, dc
			continue
		}
		z2, z3 := in[16+c], in[48+c]
		z1 := (z2 + z3) * fix0541196100
		tmp2 := z1 + z3*-fix1847759065
		tmp3 := z1 + z2*fix0765366865
		z2, z3 = in[c], in[32+c]
		tmp0 := (z2 + z3) << idctConstBits
		tmp1 := (z2 - z3) << idctConstBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp1+tmp2, tmp1-tmp2

		tmp0, tmp1, tmp2, tmp3 = in[56+c], in[40+c], in[24+c], in[8+c]
		z1, z2, z3 = tmp0+tmp3, tmp1+tmp2, tmp0+tmp2
		z4 := tmp1 + tmp3
		z5 := (z3 + z4) * fix1175875602
		tmp0 *= fix0298631336
		tmp1 *= fix2053119869
		tmp2 *= fix3072711026
		tmp3 *= fix1501321110
		z1 *= -fix0899976223
		z2 *= -fix2562915447
		z3 = z3*-fix1961570560 + z5
		z4 = z4*-fix0390180644 + z5
		tmp0 += z1 + z3
		tmp1 += z2 + z4
		tmp2 += z2 + z3
		tmp3 += z1 + z4

		const sh = idctConstBits - idctPass1Bits
		const rnd = 1 << (sh - 1)
		ws[c] = (tmp10 + tmp3 + rnd) >> sh
		ws[56+c] = (tmp10 - tmp3 + rnd) >> sh
		ws[8+c] = (tmp11 + tmp2 + rnd) >> sh
		ws[48+c] = (tmp11 - tmp2 + rnd) >> sh
		ws[16+c] = (tmp12 + tmp1 + rnd) >> sh
		ws[40+c] = (tmp12 - tmp1 + rnd) >> sh
		ws[24+c] = (tmp13 + tmp0 + rnd) >> sh
		ws[32+c] = (tmp13 - tmp0 + rnd) >> sh
	}
	// Pass 2: rows.
	for r := 0; r < 8; r++ {
		w := ws[r*8 : r*8+8 : r*8+8]
		out := dst[r*stride : r*stride+8 : r*stride+8]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0 {
			const sh = idctPass1Bits + 3
			b := clampByte((w[0]+1<<(sh-1))>>sh + 128)
			out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7] = b, b, b, b, b, b, b, b
			continue
		}
		z2, z3 := w[2], w[6]
		z1 := (z2 + z3) * fix0541196100
		tmp2 := z1 + z3*-fix1847759065
		tmp3 := z1 + z2*fix0765366865
		tmp0 := (w[0] + w[4]) << idctConstBits
		tmp1 := (w[0] - w[4]) << idctConstBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp1+tmp2, tmp1-tmp2

		tmp0, tmp1, tmp2, tmp3 = w[7], w[5], w[3], w[1]
		z1, z2, z3 = tmp0+tmp3, tmp1+tmp2, tmp0+tmp2
		z4 := tmp1 + tmp3
		z5 := (z3 + z4) * fix1175875602
		tmp0 *= fix0298631336
		tmp1 *= fix2053119869
		tmp2 *= fix3072711026
		tmp3 *= fix1501321110
		z1 *= -fix0899976223
		z2 *= -fix2562915447
		z3 = z3*-fix1961570560 + z5
		z4 = z4*-fix0390180644 + z5
		tmp0 += z1 + z3
		tmp1 += z2 + z4
		tmp2 += z2 + z3
		tmp3 += z1 + z4

		out[0] = idctOut(tmp10 + tmp3)
		out[7] = idctOut(tmp10 - tmp3)
		out[1] = idctOut(tmp11 + tmp2)
		out[6] = idctOut(tmp11 - tmp2)
		out[2] = idctOut(tmp12 + tmp1)
		out[5] = idctOut(tmp12 - tmp1)
		out[3] = idctOut(tmp13 + tmp0)
		out[4] = idctOut(tmp13 - tmp0)
	}
}
