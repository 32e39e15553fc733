//go:build amd64 && !purego

#include "textflag.h"

// EXP16 is Z15 = exp(Z0 - Z2) on 16 lanes, Cephes' expf: x = max(Z0 - Z2,
// -87) (e^-87 is still a normal float32), n = round(x·log2e),
// r = x - n·C1 - n·C2 (C1 + C2 = ln 2 split for exactness),
// e^r = 1 + r + r²·P(r), then the result is scaled by 2ⁿ (VSCALEFPS).
// Operands: Z3 log2e, Z4 C1, Z5 C2, Z6–Z11 P0–P5, Z12 1.0, Z13 -87;
// scratch Z14 (n), Z16 (r²). The clamp keeps a NaN of Z0 (VMAXPS returns
// its second Intel source, x, when either is NaN).
#define EXP16 \
	VSUBPS       Z2, Z0, Z0;   \
	VMAXPS       Z0, Z13, Z0;  \
	VMULPS       Z3, Z0, Z14;  \
	VRNDSCALEPS  $0, Z14, Z14; \
	VFNMADD231PS Z4, Z14, Z0;  \
	VFNMADD231PS Z5, Z14, Z0;  \
	VMOVAPS      Z6, Z15;      \
	VFMADD213PS  Z7, Z0, Z15;  \
	VFMADD213PS  Z8, Z0, Z15;  \
	VFMADD213PS  Z9, Z0, Z15;  \
	VFMADD213PS  Z10, Z0, Z15; \
	VFMADD213PS  Z11, Z0, Z15; \
	VMULPS       Z0, Z0, Z16;  \
	VFMADD213PS  Z0, Z16, Z15; \
	VADDPS       Z12, Z15, Z15; \
	VSCALEFPS    Z14, Z15, Z15

// TAILMASK sets K1 to the low CX (1–15) lanes; it clobbers AX.
#define TAILMASK \
	MOVL  $1, AX;   \
	SHLL  CX, AX;   \
	DECL  AX;       \
	KMOVW AX, K1

// func softmaxExpAVX512(x *float32, n int) float32
//
// x[0:n] = exp(x - max(x)), returning the sum, in two passes over x: the
// max (two accumulators of 16 lanes), then exp, store and sum. The last
// n%16 values run under the mask K1 (masked-off lanes neither fault, nor
// store, nor add). n ≥ 1.
TEXT ·softmaxExpAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), BX

	// Pass 1: the max.
	MOVL         $0xff800000, AX // -Inf
	VPBROADCASTD AX, Z0
	VMOVAPS      Z0, Z1
	MOVQ         DI, SI
	MOVQ         BX, DX
	SHRQ         $5, DX
	JZ           max16

max32:
	VMAXPS (SI), Z0, Z0
	VMAXPS 64(SI), Z1, Z1
	ADDQ   $128, SI
	DECQ   DX
	JNZ    max32

max16:
	VMAXPS Z1, Z0, Z0
	MOVQ   BX, CX
	ANDQ   $31, CX
	CMPQ   CX, $16
	JB     maxtail
	VMAXPS (SI), Z0, Z0
	ADDQ   $64, SI
	SUBQ   $16, CX

maxtail:
	TESTQ  CX, CX
	JZ     maxreduce
	TAILMASK
	VMAXPS (SI), Z0, K1, Z0

maxreduce:
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXPS        X1, X0, X0
	VBROADCASTSS  X0, Z2

	// Pass 2: exp, store, sum into Z17.
	LEAQ         ·softmaxConsts(SB), R8
	VBROADCASTSS 0(R8), Z3
	VBROADCASTSS 4(R8), Z4
	VBROADCASTSS 8(R8), Z5
	VBROADCASTSS 12(R8), Z6
	VBROADCASTSS 16(R8), Z7
	VBROADCASTSS 20(R8), Z8
	VBROADCASTSS 24(R8), Z9
	VBROADCASTSS 28(R8), Z10
	VBROADCASTSS 32(R8), Z11
	VBROADCASTSS 36(R8), Z12
	VBROADCASTSS 40(R8), Z13
	VPXORD       Z17, Z17, Z17
	MOVQ         DI, SI
	MOVQ         BX, DX
	SHRQ         $4, DX
	JZ           exptail

exp16:
	VMOVUPS (SI), Z0
	EXP16
	VMOVUPS Z15, (SI)
	VADDPS  Z15, Z17, Z17
	ADDQ    $64, SI
	DECQ    DX
	JNZ     exp16

exptail:
	MOVQ BX, CX
	ANDQ $15, CX
	JZ   sumreduce
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	EXP16
	VMOVUPS   Z15, K1, (SI)
	VADDPS    Z15, Z17, K1, Z17

sumreduce:
	VMOVAPS       Z17, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VADDPS        X1, X0, X0
	MOVSS         X0, ret+16(FP)
	VZEROUPPER
	RET

// func prefetchRows(p *float32, rows, ld, lines int)
//
// PREFETCHT1 (into L2) of lines consecutive cache lines from each of rows
// rows of stride ld floats, starting at p. Prefetches never fault.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ  p+0(FP), SI
	MOVQ  rows+8(FP), CX
	MOVQ  ld+16(FP), DX
	SHLQ  $2, DX
	MOVQ  lines+24(FP), BX
	TESTQ CX, CX
	JZ    pfdone
	TESTQ BX, BX
	JZ    pfdone

pfrow:
	MOVQ SI, DI
	MOVQ BX, AX

pfline:
	PREFETCHT1 (DI)
	ADDQ       $64, DI
	DECQ       AX
	JNZ        pfline
	ADDQ       DX, SI
	DECQ       CX
	JNZ        pfrow

pfdone:
	RET
