package xdna_test

import (
	"fmt"

	"github.com/clipidx/clipidx/clipnpu/xdna"
)

// The command packet of one run of an IRON kernel with three buffers.
func ExampleStartCUPacket() {
	p, err := xdna.StartCUPacket(0x4000100, 2048, []uint64{0x7f0000001000, 0x7f0000200000, 0x7f0000400000})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, w := range p {
		fmt.Printf("%2d %#08x\n", i, w)
	}
	// Output:
	//  0 0x30010001
	//  1 0x00000001
	//  2 0x00000003
	//  3 0x00000000
	//  4 0x04000100
	//  5 0x00000000
	//  6 0x00000800
	//  7 0x00001000
	//  8 0x00007f00
	//  9 0x00200000
	// 10 0x00007f00
	// 11 0x00400000
	// 12 0x00007f00
	// 13 0x00000000
	// 14 0x00000000
	// 15 0x00000000
	// 16 0x00000000
}
