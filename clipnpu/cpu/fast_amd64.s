//go:build amd64 && !purego

#include "textflag.h"

// func geluAVX2(x *float32, n int)
//
// Per 8 lanes (see fastErf): u = clamp(x/√2, ±4), s = u², erf = clamp(u·P(s)/Q(s), ±1),
// x = 0.5·x·(1 + erf). Registers: Y0 x, Y1 u then 0.5·x, Y2 s, Y3 P, Y4 Q,
// Y5 scratch, Y6–Y10 P0–P4, Y11–Y14 Q1–Q4, Y15 1.0; P5, Q5 and the clamp and
// scale constants are broadcast from ·geluConsts inside the loop.
TEXT ·geluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ ·geluConsts(SB), SI
	VBROADCASTSS 0(SI), Y6
	VBROADCASTSS 4(SI), Y7
	VBROADCASTSS 8(SI), Y8
	VBROADCASTSS 12(SI), Y9
	VBROADCASTSS 16(SI), Y10
	VBROADCASTSS 24(SI), Y11
	VBROADCASTSS 28(SI), Y12
	VBROADCASTSS 32(SI), Y13
	VBROADCASTSS 36(SI), Y14
	VBROADCASTSS 44(SI), Y15
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (DI), Y0
	VBROADCASTSS 56(SI), Y1 // 1/√2
	VMULPS Y0, Y1, Y1
	VBROADCASTSS 64(SI), Y5 // -4
	VMAXPS Y5, Y1, Y1
	VBROADCASTSS 60(SI), Y5 // 4
	VMINPS Y5, Y1, Y1
	VMULPS Y1, Y1, Y2

	VBROADCASTSS 20(SI), Y3 // P5
	VFMADD213PS Y10, Y2, Y3 // P = P·s + P4
	VFMADD213PS Y9, Y2, Y3
	VFMADD213PS Y8, Y2, Y3
	VFMADD213PS Y7, Y2, Y3
	VFMADD213PS Y6, Y2, Y3

	VBROADCASTSS 40(SI), Y4 // Q5
	VFMADD213PS Y14, Y2, Y4 // Q = Q·s + Q4
	VFMADD213PS Y13, Y2, Y4
	VFMADD213PS Y12, Y2, Y4
	VFMADD213PS Y11, Y2, Y4
	VFMADD213PS Y15, Y2, Y4 // + 1

	VMULPS Y1, Y3, Y3       // u·P
	VDIVPS Y4, Y3, Y3       // erf = u·P/Q
	VMINPS Y15, Y3, Y3
	VBROADCASTSS 48(SI), Y5 // -1
	VMAXPS Y5, Y3, Y3

	VBROADCASTSS 52(SI), Y1 // 0.5
	VMULPS Y0, Y1, Y1       // h = 0.5·x
	VFMADD213PS Y1, Y1, Y3  // h·erf + h
	VMOVUPS Y3, (DI)

	ADDQ $32, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET
