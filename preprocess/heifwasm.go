package preprocess

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// This file runs the WebAssembly builds that gen2brain/heic (v0.4.5:
// libheif 1.18.2 + libde265 1.0.15) and gen2brain/avif (v0.4.4: libavif +
// dav1d) embed, through their exported C entry point `decode`, with wazero.
// Their Go wrappers are not used, for four reasons found in their source:
//   - Both first dlopen a system libheif.so / libavif.so (purego) and use it
//     when found; only the nodynamic build tag turns that off. Results would
//     depend on the machine (Debian's libheif 1.15 even forces 4:2:0).
//   - heic.Decode lays out the returned planes with its own stride guess
//     (width rounded to 16) while libheif rounds the width to even and to at
//     least 64 before aligning to 16, so any image whose chroma is narrower
//     than 64 (most small images, every odd width) came back garbled, and
//     the C side wrote past the buffer it was given.
//   - The modules' stdout/stderr are wired to the process's; a library
//     must not print.
//   - The runtime is shared and unbounded; here its memory has a limit.
// The embedded .wasm.gz bytes are taken from the pinned packages with
// go:linkname in heifwasm_embed.go (TestHEIFWASMEmbedded fails if an
// upgrade renames them); architectures where those packages do not build
// get heifwasm_other.go instead.

// wasmMemoryPages bounds the linear memory of one decode: 32768 pages of
// 64 KiB are 2 GiB, room for the default 100-megapixel limit. A HEIC
// decoded through heifPlanesFile holds about 13 bytes a pixel at its peak
// (the output buffer, 4; libheif's RGB planes, 3 or 6 at 10 bits, and its
// RGBA or 8-bit copy of them, 4 or 3), beside the decoder's own state.
const wasmMemoryPages = 1 << 15

// wasmModule is one embedded decoder, compiled once. A stoppable one is
// compiled with wazero's close-on-context-done: its code checks at every
// loop back-edge whether the call's context is done and, if so, stops the
// call and closes the instance.
type wasmModule struct {
	gz        *[]byte
	stoppable bool
	once      sync.Once
	rt        wazero.Runtime
	cm        wazero.CompiledModule
	err       error
}

var (
	heifModule          = &wasmModule{gz: &heifWASMgz}
	avifModule          = &wasmModule{gz: &avifWASMgz}
	heifModuleStoppable = &wasmModule{gz: &heifWASMgz, stoppable: true}
	avifModuleStoppable = &wasmModule{gz: &avifWASMgz, stoppable: true}
)

// moduleFor returns fast, or stoppable when ctx can be cancelled. The
// checks that make a call stoppable leave native code at every loop
// iteration and cost several times the decode itself (a 2816x2816 grid:
// 2.7 s without, 12 s and more with, on the 2-core test machine), so a
// context that can never end, such as context.Background (the model's
// path), keeps the fast build.
func moduleFor(ctx context.Context, fast, stoppable *wasmModule) *wasmModule {
	if ctx.Done() == nil {
		return fast
	}
	return stoppable
}

// instantiate returns a fresh instance (its own memory) of the module.
func (w *wasmModule) instantiate(ctx context.Context) (api.Module, error) {
	w.once.Do(func() {
		ctx := context.Background() // the compiled module outlives any request
		if len(*w.gz) == 0 {
			w.err = errNoWASM
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(*w.gz))
		if err != nil {
			w.err = fmt.Errorf("embedded decoder: %w", err)
			return
		}
		code, err := io.ReadAll(zr)
		if err != nil {
			w.err = fmt.Errorf("embedded decoder: %w", err)
			return
		}
		w.rt, w.cm, w.err = compileWASM(ctx, code, codeKey(*w.gz), w.stoppable, codeCacheDir())
	})
	if w.err != nil {
		return nil, w.err
	}
	// Anonymous instances may run concurrently; output is discarded.
	cfg := wazero.NewModuleConfig().WithName("").WithStdout(io.Discard).WithStderr(io.Discard).
		WithStartFunctions("_initialize")
	return w.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, wasmAllocator), w.cm, cfg)
}

// wasmCall holds one instance and the helpers to move bytes in and out.
type wasmCall struct {
	ctx                 context.Context
	mod                 api.Module
	malloc, free, entry api.Function
}

func newWASMCall(ctx context.Context, w *wasmModule) (*wasmCall, error) {
	mod, err := w.instantiate(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c := &wasmCall{ctx: ctx, mod: mod, malloc: mod.ExportedFunction("malloc"),
		free: mod.ExportedFunction("free"), entry: mod.ExportedFunction("decode")}
	if c.malloc == nil || c.free == nil || c.entry == nil {
		mod.Close(ctx)
		return nil, errors.New("embedded decoder lacks malloc, free or decode")
	}
	return c, nil
}

// close frees the instance (its context may be done by now).
func (c *wasmCall) close() { c.mod.Close(context.Background()) }

// callErr is the error of a failed call into the module: the context's
// when it ended the call, else the trap.
func (c *wasmCall) callErr(lib string, err error) error {
	if cerr := c.ctx.Err(); cerr != nil {
		return cerr
	}
	return wasmTrap(lib, err)
}

// alloc reserves n bytes of wasm memory (zeroed by the fresh instance or
// not: every byte read back is written by the decoder first).
func (c *wasmCall) alloc(n int) (uint64, error) {
	if n <= 0 || uint64(n) > uint64(wasmMemoryPages)*65536 {
		return 0, fmt.Errorf("embedded decoder: cannot allocate %d bytes", n)
	}
	r, err := c.malloc.Call(c.ctx, uint64(n))
	if err != nil {
		if cerr := c.ctx.Err(); cerr != nil {
			return 0, cerr
		}
		return 0, fmt.Errorf("embedded decoder: %w", err)
	}
	if r[0] == 0 {
		return 0, fmt.Errorf("embedded decoder: out of memory for %d bytes", n)
	}
	return r[0], nil
}

func (c *wasmCall) write(data []byte) (uint64, error) {
	p, err := c.alloc(len(data))
	if err != nil {
		return 0, err
	}
	if !c.mod.Memory().Write(uint32(p), data) {
		return 0, errors.New("embedded decoder: memory write out of range")
	}
	return p, nil
}

func (c *wasmCall) u32s(p uint64, n int) ([]uint32, error) {
	b, ok := c.mod.Memory().Read(uint32(p), uint32(4*n))
	if !ok {
		return nil, errors.New("embedded decoder: memory read out of range")
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, nil
}

// decodeInto allocates size bytes of wasm memory, runs the full decode
// (call with configOnly 0) into them and returns them where they are: in
// the instance's memory, valid until it closes.
func (c *wasmCall) decodeInto(size int, call func(configOnly, out uint64) error) ([]byte, error) {
	out, err := c.alloc(size)
	if err != nil {
		return nil, err
	}
	if err := call(0, out); err != nil {
		return nil, err
	}
	b, ok := c.mod.Memory().Read(uint32(out), uint32(size))
	if !ok {
		return nil, errors.New("embedded decoder: memory read out of range")
	}
	return b, nil
}

// wasmTrap turns a trap inside a decoder into a one-line error: wazero's
// message carries the WebAssembly stack after the first line.
func wasmTrap(lib string, err error) error {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return fmt.Errorf("%s crashed: %s", lib, msg)
}

// libheif's heif_colorspace and heif_chroma values (heif.h).
const (
	heifColorspaceYCbCr      = 0
	heifColorspaceRGB        = 1
	heifColorspaceMonochrome = 2
	heifChroma420            = 1
	heifChroma422            = 2
	heifChroma444            = 3
)

// heifStride is libheif's plane stride for a plane w samples wide of bpp
// bytes each: the width rounded up to even and to at least 64, times bpp,
// aligned to 16 bytes (pixelimage.cc, ImagePlane::alloc).
func heifStride(w, bpp int) int {
	m := (w + 1) &^ 1
	m = max(m, 64)
	return (m*bpp + 15) &^ 15
}

// libheifDecode runs libheif's decode: Y, Cb, Cr planes (HDR reduced to 8
// bits), grey, or RGBA when the file is coded as RGB; with irot, imir,
// clap and grids applied by libheif. convert, when not nil, is given the
// image while its pixels are still in the decoder's memory, and what it
// returns (pixels of its own) is the result; when it returns nil, or is
// nil, the pixels are copied out as they are.
func libheifDecode(ctx context.Context, data []byte, convert func(image.Image) image.Image) (image.Image, error) {
	c, err := newWASMCall(ctx, moduleFor(ctx, heifModule, heifModuleStoppable))
	if err != nil {
		return nil, err
	}
	defer c.close()
	in, err := c.write(data)
	if err != nil {
		return nil, err
	}
	outs, err := c.alloc(5 * 4)
	if err != nil {
		return nil, err
	}
	call := func(configOnly uint64, out uint64) error {
		r, err := c.entry.Call(c.ctx, in, uint64(len(data)), configOnly, outs, outs+4, outs+8, outs+12, outs+16, out)
		if err != nil {
			return c.callErr("libheif", err)
		}
		if r[0] == 0 {
			return errors.New("libheif could not decode the image")
		}
		return nil
	}
	if err := call(1, 0); err != nil {
		return nil, err
	}
	v, err := c.u32s(outs, 5)
	if err != nil {
		return nil, err
	}
	w, h, colorspace, chroma := int(v[0]), int(v[1]), v[2], v[3]
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return nil, fmt.Errorf("libheif reports a %dx%d image", w, h)
	}
	rect := image.Rect(0, 0, w, h)
	// The pixels stay in the instance's memory until done has them
	// converted, or copies them out.
	done := func(pix []byte, mk func(pix []byte) image.Image) (image.Image, error) {
		if convert != nil {
			if out := convert(mk(pix)); out != nil {
				return out, nil
			}
		}
		return mk(bytes.Clone(pix)), nil
	}
	switch colorspace {
	case heifColorspaceYCbCr:
		ratio, cw, ch := image.YCbCrSubsampleRatio420, (w+1)/2, (h+1)/2
		switch chroma {
		case heifChroma420:
		case heifChroma422:
			ratio, ch = image.YCbCrSubsampleRatio422, h
		case heifChroma444:
			ratio, cw, ch = image.YCbCrSubsampleRatio444, w, h
		default:
			return nil, fmt.Errorf("libheif: unsupported chroma format %d", chroma)
		}
		ys, cs := heifStride(w, 1), heifStride(cw, 1)
		size := ys*h + 2*cs*ch
		pix, err := c.decodeInto(size, call)
		if err != nil {
			return nil, err
		}
		i0, i1 := ys*h, ys*h+cs*ch
		return done(pix, func(pix []byte) image.Image {
			return &image.YCbCr{Y: pix[:i0:i0], Cb: pix[i0:i1:i1], Cr: pix[i1:], YStride: ys, CStride: cs,
				SubsampleRatio: ratio, Rect: rect}
		})
	case heifColorspaceMonochrome:
		s := heifStride(w, 1)
		pix, err := c.decodeInto(s*h, call)
		if err != nil {
			return nil, err
		}
		return done(pix, func(pix []byte) image.Image { return &image.Gray{Pix: pix, Stride: s, Rect: rect} })
	case heifColorspaceRGB:
		s := heifStride(w, 4)
		pix, err := c.decodeInto(s*h, call)
		if err != nil {
			return nil, err
		}
		return done(pix, func(pix []byte) image.Image {
			if v[4] != 0 { // premultiplied alpha
				return &image.RGBA{Pix: pix, Stride: s, Rect: rect}
			}
			return &image.NRGBA{Pix: pix, Stride: s, Rect: rect}
		})
	}
	return nil, fmt.Errorf("libheif: unsupported colour space %d", colorspace)
}

// libavifDecode runs libavif's decode of the first frame: RGBA with
// premultiplied alpha, 8-bit, or 16-bit for deeper files, converted by
// libavif from the file's nclx, returned as packed RGB (toRGB) converted
// straight from the instance's memory. irot/imir are not applied by
// libavif.
func libavifDecode(ctx context.Context, data []byte) (*packedRGB, error) {
	c, err := newWASMCall(ctx, moduleFor(ctx, avifModule, avifModuleStoppable))
	if err != nil {
		return nil, err
	}
	defer c.close()
	in, err := c.write(data)
	if err != nil {
		return nil, err
	}
	outs, err := c.alloc(4 * 4)
	if err != nil {
		return nil, err
	}
	delay, err := c.alloc(8)
	if err != nil {
		return nil, err
	}
	call := func(configOnly uint64, out uint64) error {
		r, err := c.entry.Call(c.ctx, in, uint64(len(data)), configOnly, 0, outs, outs+4, outs+8, outs+12, delay, out)
		if err != nil {
			return c.callErr("libavif", err)
		}
		if r[0] == 0 {
			return errors.New("libavif could not decode the image")
		}
		return nil
	}
	if err := call(1, 0); err != nil {
		return nil, err
	}
	v, err := c.u32s(outs, 4)
	if err != nil {
		return nil, err
	}
	w, h, depth := int(v[0]), int(v[1]), v[2]
	if w <= 0 || h <= 0 || w > 1<<16 || h > 1<<16 {
		return nil, fmt.Errorf("libavif reports a %dx%d image", w, h)
	}
	bpp := 4
	if depth > 8 {
		bpp = 8
	}
	size := w * h * bpp
	view, err := c.decodeInto(size, call)
	if err != nil {
		return nil, err
	}
	// view lies in the instance, which closes on return.
	rect := image.Rect(0, 0, w, h)
	var img image.Image
	if bpp == 4 {
		img = &image.RGBA{Pix: view, Stride: 4 * w, Rect: rect}
	} else {
		// libavif's 16-bit samples are little-endian in wasm memory; Go's
		// RGBA64 is big-endian.
		for i := 0; i+1 < len(view); i += 2 {
			view[i], view[i+1] = view[i+1], view[i]
		}
		img = &image.RGBA64{Pix: view, Stride: 8 * w, Rect: rect}
	}
	out := &packedRGB{Pix: rgbOutput(w * h * 3), W: w, H: h}
	toRGB(out.Pix, img, yccJFIF) // writes into out.Pix, which has the room
	return out, nil
}
