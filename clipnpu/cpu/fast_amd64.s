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

// func geluAVX512(x *float32, n int)
//
// geluAVX2 on 16 lanes, n a multiple of 16, with the division u·P/Q
// replaced by u·P times 1/Q from VRCP14PS and one Newton step (relative
// error about 2⁻²⁸ before rounding; Q ≥ 1). Registers: Z0 x, Z1 u then
// 0.5·x, Z2 s, Z3 P, Z4 Q, Z5 1/Q, Z23 scratch, Z6–Z10 P0–P4, Z11–Z14
// Q1–Q4, Z15 1, Z16 P5, Z17 Q5, Z18 -1, Z19 0.5, Z20 1/√2, Z21 4, Z22 -4.
TEXT ·geluAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ ·geluConsts(SB), SI
	VBROADCASTSS 0(SI), Z6
	VBROADCASTSS 4(SI), Z7
	VBROADCASTSS 8(SI), Z8
	VBROADCASTSS 12(SI), Z9
	VBROADCASTSS 16(SI), Z10
	VBROADCASTSS 20(SI), Z16
	VBROADCASTSS 24(SI), Z11
	VBROADCASTSS 28(SI), Z12
	VBROADCASTSS 32(SI), Z13
	VBROADCASTSS 36(SI), Z14
	VBROADCASTSS 40(SI), Z17
	VBROADCASTSS 44(SI), Z15
	VBROADCASTSS 48(SI), Z18
	VBROADCASTSS 52(SI), Z19
	VBROADCASTSS 56(SI), Z20
	VBROADCASTSS 60(SI), Z21
	VBROADCASTSS 64(SI), Z22
	SHRQ $4, CX
	JZ   done512

loop512:
	VMOVUPS (DI), Z0
	VMULPS  Z0, Z20, Z1 // u = x/√2, clamped to ±4
	VMAXPS  Z22, Z1, Z1
	VMINPS  Z21, Z1, Z1
	VMULPS  Z1, Z1, Z2  // s = u²

	VMOVAPS     Z16, Z3
	VFMADD213PS Z10, Z2, Z3 // P = P·s + P4
	VFMADD213PS Z9, Z2, Z3
	VFMADD213PS Z8, Z2, Z3
	VFMADD213PS Z7, Z2, Z3
	VFMADD213PS Z6, Z2, Z3

	VMOVAPS     Z17, Z4
	VFMADD213PS Z14, Z2, Z4 // Q = Q·s + Q4
	VFMADD213PS Z13, Z2, Z4
	VFMADD213PS Z12, Z2, Z4
	VFMADD213PS Z11, Z2, Z4
	VFMADD213PS Z15, Z2, Z4 // + 1

	VRCP14PS     Z4, Z5          // r ≈ 1/Q
	VMOVAPS      Z15, Z23
	VFNMADD231PS Z5, Z4, Z23     // e = 1 - Q·r
	VFMADD213PS  Z5, Z23, Z5     // r = r·e + r
	VMULPS       Z1, Z3, Z3      // u·P
	VMULPS       Z5, Z3, Z3      // erf = u·P/Q
	VMINPS       Z15, Z3, Z3
	VMAXPS       Z18, Z3, Z3

	VMULPS      Z0, Z19, Z1 // h = 0.5·x
	VFMADD213PS Z1, Z1, Z3  // h·erf + h
	VMOVUPS     Z3, (DI)

	ADDQ $64, DI
	DECQ CX
	JNZ  loop512

done512:
	VZEROUPPER
	RET
