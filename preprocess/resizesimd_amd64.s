//go:build amd64 && !purego

#include "textflag.h"

// Byte shuffles taking 16 packed-RGB pixels (48 bytes, three loads a, b,
// c) apart into 16 R, 16 G and 16 B bytes: rgbDe<plane><load>, 0x80 where
// the byte comes from another load.

DATA rgbDeR0<>+0(SB)/8, $0x80800f0c09060300
DATA rgbDeR0<>+8(SB)/8, $0x8080808080808080
GLOBL rgbDeR0<>(SB), RODATA|NOPTR, $16
DATA rgbDeR1<>+0(SB)/8, $0x0502808080808080
DATA rgbDeR1<>+8(SB)/8, $0x80808080800e0b08
GLOBL rgbDeR1<>(SB), RODATA|NOPTR, $16
DATA rgbDeR2<>+0(SB)/8, $0x8080808080808080
DATA rgbDeR2<>+8(SB)/8, $0x0d0a070401808080
GLOBL rgbDeR2<>(SB), RODATA|NOPTR, $16
DATA rgbDeG0<>+0(SB)/8, $0x8080800d0a070401
DATA rgbDeG0<>+8(SB)/8, $0x8080808080808080
GLOBL rgbDeG0<>(SB), RODATA|NOPTR, $16
DATA rgbDeG1<>+0(SB)/8, $0x0603008080808080
DATA rgbDeG1<>+8(SB)/8, $0x80808080800f0c09
GLOBL rgbDeG1<>(SB), RODATA|NOPTR, $16
DATA rgbDeG2<>+0(SB)/8, $0x8080808080808080
DATA rgbDeG2<>+8(SB)/8, $0x0e0b080502808080
GLOBL rgbDeG2<>(SB), RODATA|NOPTR, $16
DATA rgbDeB0<>+0(SB)/8, $0x8080800e0b080502
DATA rgbDeB0<>+8(SB)/8, $0x8080808080808080
GLOBL rgbDeB0<>(SB), RODATA|NOPTR, $16
DATA rgbDeB1<>+0(SB)/8, $0x0704018080808080
DATA rgbDeB1<>+8(SB)/8, $0x8080808080800d0a
GLOBL rgbDeB1<>(SB), RODATA|NOPTR, $16
DATA rgbDeB2<>+0(SB)/8, $0x8080808080808080
DATA rgbDeB2<>+8(SB)/8, $0x0f0c090603008080
GLOBL rgbDeB2<>(SB), RODATA|NOPTR, $16

// func deinterleaveRGB(rp, gp, bp, src *byte, n int)
// Splits n packed-RGB pixels (n a multiple of 16) into three planes.
TEXT ·deinterleaveRGB(SB), NOSPLIT, $0-40
	MOVQ rp+0(FP), DI
	MOVQ gp+8(FP), R8
	MOVQ bp+16(FP), R9
	MOVQ src+24(FP), SI
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	JZ   dedone

deloop:
	VMOVDQU (SI), X0
	VMOVDQU 16(SI), X1
	VMOVDQU 32(SI), X2
	VPSHUFB rgbDeR0<>(SB), X0, X3
	VPSHUFB rgbDeR1<>(SB), X1, X6
	VPOR X6, X3, X3
	VPSHUFB rgbDeR2<>(SB), X2, X6
	VPOR X6, X3, X3
	VPSHUFB rgbDeG0<>(SB), X0, X4
	VPSHUFB rgbDeG1<>(SB), X1, X6
	VPOR X6, X4, X4
	VPSHUFB rgbDeG2<>(SB), X2, X6
	VPOR X6, X4, X4
	VPSHUFB rgbDeB0<>(SB), X0, X5
	VPSHUFB rgbDeB1<>(SB), X1, X6
	VPOR X6, X5, X5
	VPSHUFB rgbDeB2<>(SB), X2, X6
	VPOR X6, X5, X5
	VMOVDQU X3, (DI)
	VMOVDQU X4, (R8)
	VMOVDQU X5, (R9)
	ADDQ $48, SI
	ADDQ $16, DI
	ADDQ $16, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  deloop

dedone:
	RET

// func hpassPlanarAVX2(dst, planes *byte, pstride int, starts *int32, w *int16, kw, n int, prec uint)
//
// n outputs of a horizontal pass from a row held as three planes (R at
// planes, G pstride bytes on, B 2·pstride on): output i is, per plane,
// Σ_t plane[starts[i]+t] · w[i·kw+t] for t < kw (kw a multiple of 16,
// the taps beyond an output's own zero), plus 2^(prec-1), shifted right by
// prec and clamped to 0..255 (VPACKSSDW, VPACKUSWB: the same as clamp8),
// written as 3 packed-RGB bytes at dst + 3i. Samples and weights are
// 16-bit lanes and VPMADDWD sums adjacent pairs into 32 bits: exact, since
// |sample · weight| < 2^23 and every sum of an output < 2^31 (newPass).
// Reads kw bytes from each plane at starts[i]: the planes need that slack.
TEXT ·hpassPlanarAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ planes+8(FP), SI
	MOVQ pstride+16(FP), R8
	MOVQ starts+24(FP), R9
	MOVQ w+32(FP), R10
	MOVQ kw+40(FP), R11
	MOVQ prec+56(FP), CX
	VMOVQ CX, X7           // shift count
	DECQ CX
	MOVL $1, DX
	SHLL CX, DX            // 2^(prec-1)
	VMOVD DX, X8
	VPBROADCASTD X8, X8    // rounding term
	MOVQ n+48(FP), CX
	TESTQ CX, CX
	JZ   hpdone

hpout:
	MOVLQSX (R9), BX
	LEAQ (SI)(BX*1), R12   // R plane at the output's first tap
	LEAQ (R12)(R8*1), R13  // G
	LEAQ (R13)(R8*1), BX   // B
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	MOVQ R11, DX

hptap:
	VMOVDQU (R10), Y3
	VPMOVZXBW (R12), Y4
	VPMADDWD Y3, Y4, Y4
	VPADDD Y4, Y0, Y0
	VPMOVZXBW (R13), Y5
	VPMADDWD Y3, Y5, Y5
	VPADDD Y5, Y1, Y1
	VPMOVZXBW (BX), Y6
	VPMADDWD Y3, Y6, Y6
	VPADDD Y6, Y2, Y2
	ADDQ $32, R10
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, BX
	SUBQ $16, DX
	JG   hptap

	VPHADDD Y1, Y0, Y0     // [R01 R23 G01 G23 | R45 R67 G45 G67]
	VPHADDD Y2, Y2, Y2     // [B01 B23 B01 B23 | B45 B67 B45 B67]
	VPHADDD Y2, Y0, Y0     // [R0-3 G0-3 B0-3 B0-3 | R4-7 G4-7 B4-7 B4-7]
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0      // [R G B B]
	VPADDD X8, X0, X0
	VPSRAD X7, X0, X0
	VPACKSSDW X0, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD X0, AX
	MOVW AX, (DI)
	SHRL $16, AX
	MOVB AX, 2(DI)
	ADDQ $3, DI
	ADDQ $4, R9
	DECQ CX
	JNZ  hpout

hpdone:
	VZEROUPPER
	RET

// func vaccAVX2(acc *int32, src *byte, n int, w int32)
// acc[i] += int32(src[i]) * w for i < n, n a multiple of 16.
TEXT ·vaccAVX2(SB), NOSPLIT, $0-28
	MOVQ acc+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL w+24(FP), AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	SHRQ $4, CX
	JZ   vaccDone

vaccLoop:
	VPMOVZXBD (SI), Y1
	VPMOVZXBD 8(SI), Y2
	VPMULLD   Y0, Y1, Y1
	VPMULLD   Y0, Y2, Y2
	VPADDD    (DI), Y1, Y1
	VPADDD    32(DI), Y2, Y2
	VMOVDQU   Y1, (DI)
	VMOVDQU   Y2, 32(DI)
	ADDQ      $16, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       vaccLoop

vaccDone:
	VZEROUPPER
	RET
