//go:build amd64 && !purego

#include "textflag.h"

// Byte shuffles interleaving R|B and G|B (8 pixels each) into packed RGB:
// the first 16 output bytes, then the last 8.

DATA yccLo1<>+0(SB)/8, $0x8002098001088000
DATA yccLo1<>+8(SB)/8, $0x050c80040b80030a
GLOBL yccLo1<>(SB), RODATA|NOPTR, $16

DATA yccHi1<>+0(SB)/8, $0x0280800180800080
DATA yccHi1<>+8(SB)/8, $0x8080048080038080
GLOBL yccHi1<>(SB), RODATA|NOPTR, $16

DATA yccLo2<>+0(SB)/8, $0x0f80070e80060d80
DATA yccLo2<>+8(SB)/8, $0x8080808080808080
GLOBL yccLo2<>(SB), RODATA|NOPTR, $16

DATA yccHi2<>+0(SB)/8, $0x8007808006808005
DATA yccHi2<>+8(SB)/8, $0x8080808080808080
GLOBL yccHi2<>(SB), RODATA|NOPTR, $16

DATA ycc128<>+0(SB)/4, $128
GLOBL ycc128<>(SB), RODATA|NOPTR, $4
DATA yccHalf<>+0(SB)/4, $32768
GLOBL yccHalf<>(SB), RODATA|NOPTR, $4
DATA yccCrR<>+0(SB)/4, $91881
GLOBL yccCrR<>(SB), RODATA|NOPTR, $4
DATA yccCbB<>+0(SB)/4, $116130
GLOBL yccCbB<>(SB), RODATA|NOPTR, $4
DATA yccCbG<>+0(SB)/4, $-22554
GLOBL yccCbG<>(SB), RODATA|NOPTR, $4
DATA yccCrG<>+0(SB)/4, $-46802
GLOBL yccCrG<>(SB), RODATA|NOPTR, $4

// func yccRGBAVX2(dst, y, cb, cr *byte, n int)
// jdcolor.c's fixed-point YCbCr->RGB, 8 pixels a step in 32-bit lanes:
// R = Y + (91881*(Cr-128) + 2^15) >> 16, B = Y + (116130*(Cb-128) + 2^15) >> 16,
// G = Y + (-22554*(Cb-128) - 46802*(Cr-128) + 2^15) >> 16, packed with
// saturation to 0..255 (clampByte).
TEXT ·yccRGBAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ cb+16(FP), BX
	MOVQ cr+24(FP), DX
	MOVQ n+32(FP), CX
	VPBROADCASTD ycc128<>(SB), Y15
	VPBROADCASTD yccHalf<>(SB), Y14
	VPBROADCASTD yccCrR<>(SB), Y13
	VPBROADCASTD yccCbB<>(SB), Y12
	VPBROADCASTD yccCbG<>(SB), Y11
	VPBROADCASTD yccCrG<>(SB), Y10
	TESTQ CX, CX
	JLE done

loop:
	VPMOVZXBD (SI), Y0
	VPMOVZXBD (BX), Y1
	VPMOVZXBD (DX), Y2
	VPSUBD Y15, Y1, Y1
	VPSUBD Y15, Y2, Y2

	VPMULLD Y13, Y2, Y3
	VPADDD Y14, Y3, Y3
	VPSRAD $16, Y3, Y3
	VPADDD Y0, Y3, Y3 // R

	VPMULLD Y12, Y1, Y4
	VPADDD Y14, Y4, Y4
	VPSRAD $16, Y4, Y4
	VPADDD Y0, Y4, Y4 // B

	VPMULLD Y11, Y1, Y5
	VPMULLD Y10, Y2, Y6
	VPADDD Y6, Y5, Y5
	VPADDD Y14, Y5, Y5
	VPSRAD $16, Y5, Y5
	VPADDD Y0, Y5, Y5 // G

	VPACKSSDW Y5, Y3, Y7 // [R0-3 G0-3 | R4-7 G4-7]
	VPERMQ $0xD8, Y7, Y7 // [R0-7 | G0-7]
	VPACKSSDW Y4, Y4, Y8
	VPERMQ $0xD8, Y8, Y8 // [B0-7 | B0-7]
	VPACKUSWB Y8, Y7, Y9 // bytes [R0-7 B0-7 | G0-7 B0-7]
	VEXTRACTI128 $1, Y9, X6

	VPSHUFB yccLo1<>(SB), X9, X0
	VPSHUFB yccHi1<>(SB), X6, X1
	VPOR X1, X0, X0
	VMOVDQU X0, (DI)
	VPSHUFB yccLo2<>(SB), X9, X0
	VPSHUFB yccHi2<>(SB), X6, X1
	VPOR X1, X0, X0
	MOVQ X0, 16(DI)

	ADDQ $8, SI
	ADDQ $8, BX
	ADDQ $8, DX
	ADDQ $24, DI
	SUBQ $8, CX
	JG loop

done:
	VZEROUPPER
	RET
