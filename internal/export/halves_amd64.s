//go:build amd64 && !purego

#include "textflag.h"

// func joinF16x8(dst, hi, lo *byte, n8 int)
//
// For each group of 8: widen hi and lo (u16) to 32-bit lanes, undo the
// rounding of hi (t = hi - lo>>15), rebuild the float32 bits t<<16 | lo
// (store.Join), and round them to float16 with VCVTPS2PH, immediate 0:
// round to nearest even whatever MXCSR says.
TEXT ·joinF16x8(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ hi+8(FP), SI
	MOVQ lo+16(FP), DX
	MOVQ n8+24(FP), CX
	TESTQ CX, CX
	JE done
loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD (DX), Y1
	VPSRLD $15, Y1, Y2
	VPSUBD Y2, Y0, Y0
	VPSLLD $16, Y0, Y0
	VPOR Y1, Y0, Y0
	VCVTPS2PH $0, Y0, X3
	VMOVDQU X3, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	DECQ CX
	JNE loop
	VZEROUPPER
done:
	RET
