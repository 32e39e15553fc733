package cpu

import (
	"testing"
)

func TestEOSPosition(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		eos  int32
		want int
	}{
		{[]int32{49406, 320, 49407, 49407, 49407}, 49407, 2}, // first EOS, padding with EOS
		{[]int32{5, 9, 7, 9}, 9, 1},
		{[]int32{5, 6, 7}, 9, 0},                    // no EOS: position 0, as HF's argmax of zeros
		{[]int32{49406, 2, 320, 49407, 0, 0}, 2, 3}, // legacy eos_token_id 2: argmax of the ids
		{[]int32{7, 9, 9}, 2, 1},                    // argmax takes the first maximum
	} {
		if got := EOSPosition(c.ids, c.eos); got != c.want {
			t.Errorf("eosPosition(%v, %d) = %d, want %d", c.ids, c.eos, got, c.want)
		}
	}
}
