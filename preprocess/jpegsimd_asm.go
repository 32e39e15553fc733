//go:build (amd64 || arm64) && !purego

package preprocess

// h2v2Edges finishes a row of h2v2 fancy upsampling whose inside, outputs
// 2..2*from-1, an assembly kernel wrote: the rest of the inside from input
// sample from on, and the two samples at each edge, as h2v2RowGeneric
// computes them. out is 2*len(near) long, far len(near).
func h2v2Edges(out, near, far []byte, from int) {
	n := len(near)
	s := func(i int) int32 { return 3*int32(near[i]) + int32(far[i]) }
	out[0] = byte((4*s(0) + 8) >> 4)
	out[1] = byte((3*s(0) + s(1) + 7) >> 4)
	for i := from; i < n-1; i++ {
		v := 3 * s(i)
		out[2*i] = byte((v + s(i-1) + 8) >> 4)
		out[2*i+1] = byte((v + s(i+1) + 7) >> 4)
	}
	out[2*n-2] = byte((3*s(n-1) + s(n-2) + 8) >> 4)
	out[2*n-1] = byte((4*s(n-1) + 7) >> 4)
}
