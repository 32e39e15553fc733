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

// libjpeg-turbo's jidctint.c constants (13-bit fixed point), rounding
// terms, as 8 lanes each.

DATA idctC0541<>+0(SB)/4, $4433
DATA idctC0541<>+4(SB)/4, $4433
DATA idctC0541<>+8(SB)/4, $4433
DATA idctC0541<>+12(SB)/4, $4433
DATA idctC0541<>+16(SB)/4, $4433
DATA idctC0541<>+20(SB)/4, $4433
DATA idctC0541<>+24(SB)/4, $4433
DATA idctC0541<>+28(SB)/4, $4433
GLOBL idctC0541<>(SB), RODATA|NOPTR, $32
DATA idctCN1847<>+0(SB)/4, $-15137
DATA idctCN1847<>+4(SB)/4, $-15137
DATA idctCN1847<>+8(SB)/4, $-15137
DATA idctCN1847<>+12(SB)/4, $-15137
DATA idctCN1847<>+16(SB)/4, $-15137
DATA idctCN1847<>+20(SB)/4, $-15137
DATA idctCN1847<>+24(SB)/4, $-15137
DATA idctCN1847<>+28(SB)/4, $-15137
GLOBL idctCN1847<>(SB), RODATA|NOPTR, $32
DATA idctC0765<>+0(SB)/4, $6270
DATA idctC0765<>+4(SB)/4, $6270
DATA idctC0765<>+8(SB)/4, $6270
DATA idctC0765<>+12(SB)/4, $6270
DATA idctC0765<>+16(SB)/4, $6270
DATA idctC0765<>+20(SB)/4, $6270
DATA idctC0765<>+24(SB)/4, $6270
DATA idctC0765<>+28(SB)/4, $6270
GLOBL idctC0765<>(SB), RODATA|NOPTR, $32
DATA idctC1175<>+0(SB)/4, $9633
DATA idctC1175<>+4(SB)/4, $9633
DATA idctC1175<>+8(SB)/4, $9633
DATA idctC1175<>+12(SB)/4, $9633
DATA idctC1175<>+16(SB)/4, $9633
DATA idctC1175<>+20(SB)/4, $9633
DATA idctC1175<>+24(SB)/4, $9633
DATA idctC1175<>+28(SB)/4, $9633
GLOBL idctC1175<>(SB), RODATA|NOPTR, $32
DATA idctC0298<>+0(SB)/4, $2446
DATA idctC0298<>+4(SB)/4, $2446
DATA idctC0298<>+8(SB)/4, $2446
DATA idctC0298<>+12(SB)/4, $2446
DATA idctC0298<>+16(SB)/4, $2446
DATA idctC0298<>+20(SB)/4, $2446
DATA idctC0298<>+24(SB)/4, $2446
DATA idctC0298<>+28(SB)/4, $2446
GLOBL idctC0298<>(SB), RODATA|NOPTR, $32
DATA idctC2053<>+0(SB)/4, $16819
DATA idctC2053<>+4(SB)/4, $16819
DATA idctC2053<>+8(SB)/4, $16819
DATA idctC2053<>+12(SB)/4, $16819
DATA idctC2053<>+16(SB)/4, $16819
DATA idctC2053<>+20(SB)/4, $16819
DATA idctC2053<>+24(SB)/4, $16819
DATA idctC2053<>+28(SB)/4, $16819
GLOBL idctC2053<>(SB), RODATA|NOPTR, $32
DATA idctC3072<>+0(SB)/4, $25172
DATA idctC3072<>+4(SB)/4, $25172
DATA idctC3072<>+8(SB)/4, $25172
DATA idctC3072<>+12(SB)/4, $25172
DATA idctC3072<>+16(SB)/4, $25172
DATA idctC3072<>+20(SB)/4, $25172
DATA idctC3072<>+24(SB)/4, $25172
DATA idctC3072<>+28(SB)/4, $25172
GLOBL idctC3072<>(SB), RODATA|NOPTR, $32
DATA idctC1501<>+0(SB)/4, $12299
DATA idctC1501<>+4(SB)/4, $12299
DATA idctC1501<>+8(SB)/4, $12299
DATA idctC1501<>+12(SB)/4, $12299
DATA idctC1501<>+16(SB)/4, $12299
DATA idctC1501<>+20(SB)/4, $12299
DATA idctC1501<>+24(SB)/4, $12299
DATA idctC1501<>+28(SB)/4, $12299
GLOBL idctC1501<>(SB), RODATA|NOPTR, $32
DATA idctCN0899<>+0(SB)/4, $-7373
DATA idctCN0899<>+4(SB)/4, $-7373
DATA idctCN0899<>+8(SB)/4, $-7373
DATA idctCN0899<>+12(SB)/4, $-7373
DATA idctCN0899<>+16(SB)/4, $-7373
DATA idctCN0899<>+20(SB)/4, $-7373
DATA idctCN0899<>+24(SB)/4, $-7373
DATA idctCN0899<>+28(SB)/4, $-7373
GLOBL idctCN0899<>(SB), RODATA|NOPTR, $32
DATA idctCN2562<>+0(SB)/4, $-20995
DATA idctCN2562<>+4(SB)/4, $-20995
DATA idctCN2562<>+8(SB)/4, $-20995
DATA idctCN2562<>+12(SB)/4, $-20995
DATA idctCN2562<>+16(SB)/4, $-20995
DATA idctCN2562<>+20(SB)/4, $-20995
DATA idctCN2562<>+24(SB)/4, $-20995
DATA idctCN2562<>+28(SB)/4, $-20995
GLOBL idctCN2562<>(SB), RODATA|NOPTR, $32
DATA idctCN1961<>+0(SB)/4, $-16069
DATA idctCN1961<>+4(SB)/4, $-16069
DATA idctCN1961<>+8(SB)/4, $-16069
DATA idctCN1961<>+12(SB)/4, $-16069
DATA idctCN1961<>+16(SB)/4, $-16069
DATA idctCN1961<>+20(SB)/4, $-16069
DATA idctCN1961<>+24(SB)/4, $-16069
DATA idctCN1961<>+28(SB)/4, $-16069
GLOBL idctCN1961<>(SB), RODATA|NOPTR, $32
DATA idctCN0390<>+0(SB)/4, $-3196
DATA idctCN0390<>+4(SB)/4, $-3196
DATA idctCN0390<>+8(SB)/4, $-3196
DATA idctCN0390<>+12(SB)/4, $-3196
DATA idctCN0390<>+16(SB)/4, $-3196
DATA idctCN0390<>+20(SB)/4, $-3196
DATA idctCN0390<>+24(SB)/4, $-3196
DATA idctCN0390<>+28(SB)/4, $-3196
GLOBL idctCN0390<>(SB), RODATA|NOPTR, $32
DATA idctRnd1<>+0(SB)/4, $1024
DATA idctRnd1<>+4(SB)/4, $1024
DATA idctRnd1<>+8(SB)/4, $1024
DATA idctRnd1<>+12(SB)/4, $1024
DATA idctRnd1<>+16(SB)/4, $1024
DATA idctRnd1<>+20(SB)/4, $1024
DATA idctRnd1<>+24(SB)/4, $1024
DATA idctRnd1<>+28(SB)/4, $1024
GLOBL idctRnd1<>(SB), RODATA|NOPTR, $32
DATA idctRnd2<>+0(SB)/4, $131072
DATA idctRnd2<>+4(SB)/4, $131072
DATA idctRnd2<>+8(SB)/4, $131072
DATA idctRnd2<>+12(SB)/4, $131072
DATA idctRnd2<>+16(SB)/4, $131072
DATA idctRnd2<>+20(SB)/4, $131072
DATA idctRnd2<>+24(SB)/4, $131072
DATA idctRnd2<>+28(SB)/4, $131072
GLOBL idctRnd2<>(SB), RODATA|NOPTR, $32
DATA idct128<>+0(SB)/4, $128
DATA idct128<>+4(SB)/4, $128
DATA idct128<>+8(SB)/4, $128
DATA idct128<>+12(SB)/4, $128
DATA idct128<>+16(SB)/4, $128
DATA idct128<>+20(SB)/4, $128
DATA idct128<>+24(SB)/4, $128
DATA idct128<>+28(SB)/4, $128
GLOBL idct128<>(SB), RODATA|NOPTR, $32
DATA idctRnd3<>+0(SB)/4, $16
DATA idctRnd3<>+4(SB)/4, $16
DATA idctRnd3<>+8(SB)/4, $16
DATA idctRnd3<>+12(SB)/4, $16
DATA idctRnd3<>+16(SB)/4, $16
DATA idctRnd3<>+20(SB)/4, $16
DATA idctRnd3<>+24(SB)/4, $16
DATA idctRnd3<>+28(SB)/4, $16
GLOBL idctRnd3<>(SB), RODATA|NOPTR, $32
DATA idctPerm<>+0(SB)/8, $0x0000000400000000
DATA idctPerm<>+8(SB)/8, $0x0000000500000001
DATA idctPerm<>+16(SB)/8, $0x0000000600000002
DATA idctPerm<>+24(SB)/8, $0x0000000700000003
GLOBL idctPerm<>(SB), RODATA|NOPTR, $32

// IDCT_OUT stores (A+B+rnd)>>SH at DST+LO and (A-B+rnd)>>SH at DST+HI,
// or Y14 in the lanes Y13 marks.
#define IDCT_OUT(A, B, LO, HI, DST, RND, SH) \
	VPADDD B, A, Y4; \
	VPSUBD B, A, Y5; \
	VPADDD RND, Y4, Y4; \
	VPADDD RND, Y5, Y5; \
	VPSRAD $SH, Y4, Y4; \
	VPSRAD $SH, Y5, Y5; \
	VPBLENDVB Y13, Y14, Y4, Y4; \
	VPBLENDVB Y13, Y14, Y5, Y5; \
	VMOVDQU Y4, LO(DST); \
	VMOVDQU Y5, HI(DST)

// IDCT_PASS runs one pass of the islow IDCT on 8 vectors of 8 lanes read
// from SRC (vector k at 32*k: input k of the 1-D transform, one lane per
// column or row) and writes the 8 outputs, descaled by RND and SH, to DST.
// Integer adds wrap, so the order of the sums does not change the result.
#define IDCT_PASS(SRC, DST, RND, SH) \
	VMOVDQU 64(SRC), Y0; \
	VMOVDQU 192(SRC), Y1; \
	VPADDD Y1, Y0, Y2; \
	VPMULLD idctC0541<>(SB), Y2, Y2; \
	VPMULLD idctCN1847<>(SB), Y1, Y1; \
	VPADDD Y2, Y1, Y1; \
	VPMULLD idctC0765<>(SB), Y0, Y0; \
	VPADDD Y2, Y0, Y0; \
	VMOVDQU 0(SRC), Y2; \
	VMOVDQU 128(SRC), Y3; \
	VPADDD Y3, Y2, Y4; \
	VPSLLD $13, Y4, Y4; \
	VPSUBD Y3, Y2, Y5; \
	VPSLLD $13, Y5, Y5; \
	VPADDD Y0, Y4, Y6; \
	VPSUBD Y0, Y4, Y7; \
	VPADDD Y1, Y5, Y8; \
	VPSUBD Y1, Y5, Y9; \
	VMOVDQU 224(SRC), Y0; \
	VMOVDQU 160(SRC), Y1; \
	VMOVDQU 96(SRC), Y2; \
	VMOVDQU 32(SRC), Y3; \
	VPADDD Y3, Y0, Y4; \
	VPADDD Y2, Y1, Y5; \
	VPADDD Y2, Y0, Y10; \
	VPADDD Y3, Y1, Y11; \
	VPADDD Y11, Y10, Y12; \
	VPMULLD idctC1175<>(SB), Y12, Y12; \
	VPMULLD idctC0298<>(SB), Y0, Y0; \
	VPMULLD idctC2053<>(SB), Y1, Y1; \
	VPMULLD idctC3072<>(SB), Y2, Y2; \
	VPMULLD idctC1501<>(SB), Y3, Y3; \
	VPMULLD idctCN0899<>(SB), Y4, Y4; \
	VPMULLD idctCN2562<>(SB), Y5, Y5; \
	VPMULLD idctCN1961<>(SB), Y10, Y10; \
	VPADDD Y12, Y10, Y10; \
	VPMULLD idctCN0390<>(SB), Y11, Y11; \
	VPADDD Y12, Y11, Y11; \
	VPADDD Y4, Y0, Y0; \
	VPADDD Y10, Y0, Y0; \
	VPADDD Y5, Y1, Y1; \
	VPADDD Y11, Y1, Y1; \
	VPADDD Y5, Y2, Y2; \
	VPADDD Y10, Y2, Y2; \
	VPADDD Y4, Y3, Y3; \
	VPADDD Y11, Y3, Y3; \
	VMOVDQU RND, Y15; \
	IDCT_OUT(Y6, Y3, 0, 224, DST, Y15, SH); \
	IDCT_OUT(Y8, Y2, 32, 192, DST, Y15, SH); \
	IDCT_OUT(Y9, Y1, 64, 160, DST, Y15, SH); \
	IDCT_OUT(Y7, Y0, 96, 128, DST, Y15, SH)

// ZERO_AC sets Y13 to the lanes of the 8 vectors at M whose inputs 1..7
// are all zero, and loads input 0 into Y14: idct takes a shortcut there
// which differs from the full computation when the values overflow.
#define ZERO_AC(M) \
	VMOVDQU 32(M), Y13; \
	VPOR 64(M), Y13, Y13; \
	VPOR 96(M), Y13, Y13; \
	VPOR 128(M), Y13, Y13; \
	VPOR 160(M), Y13, Y13; \
	VPOR 192(M), Y13, Y13; \
	VPOR 224(M), Y13, Y13; \
	VPXOR Y14, Y14, Y14; \
	VPCMPEQD Y14, Y13, Y13; \
	VMOVDQU 0(M), Y14

// TRANSPOSE loads the 8x8 int32 matrix at M and leaves its columns in
// Y0..Y7.
#define TRANSPOSE(M) \
	VMOVDQU 0(M), Y0; \
	VMOVDQU 64(M), Y2; \
	VMOVDQU 128(M), Y4; \
	VMOVDQU 192(M), Y6; \
	VPUNPCKHDQ 32(M), Y0, Y1; \
	VPUNPCKLDQ 32(M), Y0, Y0; \
	VPUNPCKHDQ 96(M), Y2, Y3; \
	VPUNPCKLDQ 96(M), Y2, Y2; \
	VPUNPCKHDQ 160(M), Y4, Y5; \
	VPUNPCKLDQ 160(M), Y4, Y4; \
	VPUNPCKHDQ 224(M), Y6, Y7; \
	VPUNPCKLDQ 224(M), Y6, Y6; \
	VPUNPCKLQDQ Y2, Y0, Y8; \
	VPUNPCKHQDQ Y2, Y0, Y9; \
	VPUNPCKLQDQ Y3, Y1, Y10; \
	VPUNPCKHQDQ Y3, Y1, Y11; \
	VPUNPCKLQDQ Y6, Y4, Y12; \
	VPUNPCKHQDQ Y6, Y4, Y13; \
	VPUNPCKLQDQ Y7, Y5, Y14; \
	VPUNPCKHQDQ Y7, Y5, Y15; \
	VPERM2I128 $0x20, Y12, Y8, Y0; \
	VPERM2I128 $0x31, Y12, Y8, Y4; \
	VPERM2I128 $0x20, Y13, Y9, Y1; \
	VPERM2I128 $0x31, Y13, Y9, Y5; \
	VPERM2I128 $0x20, Y14, Y10, Y2; \
	VPERM2I128 $0x31, Y14, Y10, Y6; \
	VPERM2I128 $0x20, Y15, Y11, Y3; \
	VPERM2I128 $0x31, Y15, Y11, Y7

// STORE4 packs rows A..D (int32, already offset by 128) to bytes with
// saturation (clampByte) and stores them at DI, DI+R8, DI+2*R8, DI+3*R8;
// DI moves on 4 rows.
#define STORE4(A, B, C, D) \
	VPACKSSDW B, A, Y8; \
	VPACKSSDW D, C, Y9; \
	VPACKUSWB Y9, Y8, Y8; \
	VPERMD Y8, Y14, Y8; \
	VEXTRACTI128 $1, Y8, X9; \
	MOVQ X8, (DI); \
	VPEXTRQ $1, X8, (DI)(R8*1); \
	MOVQ X9, (DI)(R8*2); \
	VPEXTRQ $1, X9, (DI)(R9*1); \
	LEAQ (DI)(R8*4), DI

// func idctAVX2(in, ws *[64]int32, dst *byte, stride int)
// jidctint.c's jpeg_idct_islow as idct (jpegidct.go) computes it: pass 1
// on the 8 columns at once, transpose, pass 2 on the 8 rows at once,
// transpose, +128, clamp, store 8 rows of 8 bytes.
TEXT ·idctAVX2(SB), NOSPLIT, $0-32
	MOVQ in+0(FP), SI
	MOVQ ws+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R8
	LEAQ (R8)(R8*2), R9
	ZERO_AC(SI)
	VPSLLD $2, Y14, Y14 // a column of DC only: DC << 2
	IDCT_PASS(SI, DX, idctRnd1<>(SB), 11)
	TRANSPOSE(DX)
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VMOVDQU Y4, 128(DX)
	VMOVDQU Y5, 160(DX)
	VMOVDQU Y6, 192(DX)
	VMOVDQU Y7, 224(DX)
	ZERO_AC(DX)
	VPADDD idctRnd3<>(SB), Y14, Y14
	VPSRAD $5, Y14, Y14 // a row of DC only: (DC + 16) >> 5
	IDCT_PASS(DX, DX, idctRnd2<>(SB), 18)
	TRANSPOSE(DX)
	VMOVDQU idct128<>(SB), Y15
	VPADDD Y15, Y0, Y0
	VPADDD Y15, Y1, Y1
	VPADDD Y15, Y2, Y2
	VPADDD Y15, Y3, Y3
	VPADDD Y15, Y4, Y4
	VPADDD Y15, Y5, Y5
	VPADDD Y15, Y6, Y6
	VPADDD Y15, Y7, Y7
	VMOVDQU idctPerm<>(SB), Y14
	STORE4(Y0, Y1, Y2, Y3)
	STORE4(Y4, Y5, Y6, Y7)
	VZEROUPPER
	RET

DATA upC3<>+0(SB)/2, $3
DATA upC3<>+2(SB)/2, $3
DATA upC3<>+4(SB)/2, $3
DATA upC3<>+6(SB)/2, $3
DATA upC3<>+8(SB)/2, $3
DATA upC3<>+10(SB)/2, $3
DATA upC3<>+12(SB)/2, $3
DATA upC3<>+14(SB)/2, $3
DATA upC3<>+16(SB)/2, $3
DATA upC3<>+18(SB)/2, $3
DATA upC3<>+20(SB)/2, $3
DATA upC3<>+22(SB)/2, $3
DATA upC3<>+24(SB)/2, $3
DATA upC3<>+26(SB)/2, $3
DATA upC3<>+28(SB)/2, $3
DATA upC3<>+30(SB)/2, $3
GLOBL upC3<>(SB), RODATA|NOPTR, $32
DATA upC8<>+0(SB)/2, $8
DATA upC8<>+2(SB)/2, $8
DATA upC8<>+4(SB)/2, $8
DATA upC8<>+6(SB)/2, $8
DATA upC8<>+8(SB)/2, $8
DATA upC8<>+10(SB)/2, $8
DATA upC8<>+12(SB)/2, $8
DATA upC8<>+14(SB)/2, $8
DATA upC8<>+16(SB)/2, $8
DATA upC8<>+18(SB)/2, $8
DATA upC8<>+20(SB)/2, $8
DATA upC8<>+22(SB)/2, $8
DATA upC8<>+24(SB)/2, $8
DATA upC8<>+26(SB)/2, $8
DATA upC8<>+28(SB)/2, $8
DATA upC8<>+30(SB)/2, $8
GLOBL upC8<>(SB), RODATA|NOPTR, $32
DATA upC7<>+0(SB)/2, $7
DATA upC7<>+2(SB)/2, $7
DATA upC7<>+4(SB)/2, $7
DATA upC7<>+6(SB)/2, $7
DATA upC7<>+8(SB)/2, $7
DATA upC7<>+10(SB)/2, $7
DATA upC7<>+12(SB)/2, $7
DATA upC7<>+14(SB)/2, $7
DATA upC7<>+16(SB)/2, $7
DATA upC7<>+18(SB)/2, $7
DATA upC7<>+20(SB)/2, $7
DATA upC7<>+22(SB)/2, $7
DATA upC7<>+24(SB)/2, $7
DATA upC7<>+26(SB)/2, $7
DATA upC7<>+28(SB)/2, $7
DATA upC7<>+30(SB)/2, $7
GLOBL upC7<>(SB), RODATA|NOPTR, $32

// UP_SUM sets Y to 3*near[OFF..OFF+15] + far[OFF..OFF+15] in 16-bit lanes
// (at most 1020), with T as scratch.
#define UP_SUM(OFF, Y, T) \
	VPMOVZXBW OFF(SI)(AX*1), Y; \
	VPMOVZXBW OFF(DX)(AX*1), T; \
	VPMULLW Y11, Y, Y; \
	VPADDW T, Y, Y

// func h2v2AVX2(out, near, far *byte, m int)
// jdsample.c's h2v2_fancy_upsample inside the row, 16 input samples a
// step in 16-bit lanes: with s = 3*near + far, out[2i] = (3*s[i] + s[i-1]
// + 8) >> 4 and out[2i+1] = (3*s[i] + s[i+1] + 7) >> 4, both at most 255,
// stored as the words even | odd<<8.
TEXT ·h2v2AVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ near+8(FP), SI
	MOVQ far+16(FP), DX
	MOVQ m+24(FP), CX
	VMOVDQU upC3<>(SB), Y11
	VMOVDQU upC8<>(SB), Y12
	VMOVDQU upC7<>(SB), Y13
	XORQ AX, AX
	TESTQ CX, CX
	JLE updone

uploop:
	UP_SUM(0, Y0, Y3)
	UP_SUM(1, Y1, Y3)
	UP_SUM(2, Y2, Y3)
	VPMULLW Y11, Y1, Y1
	VPADDW Y1, Y0, Y0
	VPADDW Y12, Y0, Y0
	VPSRLW $4, Y0, Y0 // even outputs
	VPADDW Y1, Y2, Y2
	VPADDW Y13, Y2, Y2
	VPSRLW $4, Y2, Y2
	VPSLLW $8, Y2, Y2 // odd outputs, in the high bytes
	VPOR Y2, Y0, Y0
	VMOVDQU Y0, (DI)(AX*2)
	ADDQ $16, AX
	CMPQ AX, CX
	JLT uploop

updone:
	VZEROUPPER
	RET
