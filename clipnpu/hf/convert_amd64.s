//go:build amd64 && !purego

#include "textflag.h"

// func roundF16F16C(dst *uint16, src *float32, n int) (overflow bool)
// Rounds n floats (n a multiple of 8) to binary16, to nearest with ties to
// even (VCVTPS2PH immediate 0), eight at a time, and reports whether any
// finite value had |x| ≥ 65520, the values that round to infinity.
TEXT ·roundF16F16C(SB), NOSPLIT, $0-25
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x7fffffff, AX         // |x| mask
	MOVQ AX, X2
	VPBROADCASTD X2, Y2
	MOVL $0x477ff000, AX         // 65520.0
	MOVQ AX, X3
	VPBROADCASTD X3, Y3
	MOVL $0x7f800000, AX         // +inf
	MOVQ AX, X4
	VPBROADCASTD X4, Y4
	VXORPS Y5, Y5, Y5            // overflow lanes seen so far
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU   X1, (DI)
	VANDPS    Y2, Y0, Y6         // |x|
	VCMPPS    $0x0d, Y3, Y6, Y7  // |x| >= 65520 (GE_OS; NaN false)
	VCMPPS    $0x01, Y4, Y6, Y8  // |x| < inf (LT_OS; NaN false)
	VANDPS    Y8, Y7, Y7
	VORPS     Y7, Y5, Y5
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       loop

done:
	VMOVMSKPS Y5, AX
	TESTL     AX, AX
	SETNE     overflow+24(FP)
	VZEROUPPER
	RET
