package preprocess

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file decodes the HEVC pictures of a HEIC with ffmpeg, when the
// program names one (UseFFmpeg), instead of libde265 run as WebAssembly:
// 0.4 to 0.75 of the CPU time of a 12 MP photo's decode and preprocessing
// (README, Formats). The pixels are the same. HEVC decoding is exact by its standard (every conforming decoder
// gives the same samples), and what libheif does around the decoder for
// the files taken here is done here the same way:
//   - the file's own header (heifbox.go) is read for the primary item: one
//     HEVC image (hvc1) or a grid of them, whose coded bytes (iloc) and
//     parameter sets (hvcC) become one HEVC stream, each picture followed
//     by an end of sequence so that it is decoded on its own, as libheif
//     decodes each item with a fresh decoder;
//   - ffmpeg decodes it (one thread: a build runs a decode per core) to
//     YUV4MPEG, whose header names the planes' size, chroma and depth;
//     each must be what the picture's sequence parameter set says, else
//     nothing of it is used;
//   - tiles are placed on the grid and cropped to its output size; samples
//     of more than 8 bits are shifted to 8 as libheif's
//     convert_hdr_to_8bit does; chroma is taken nearest-neighbour, and each
//     pixel goes through the conversion of heifPlanesFile's GBR path
//     (gbrRows, planarRows), with the same colour description and depth;
//   - a reader of part of the image (the model's input: heifDecodeWindow)
//     has only the grid tiles it reads decoded.
//
// Everything else (a clean aperture, an alpha plane, data in another item
// or file, more than one SPS, a monochrome or separately coded colour
// picture, sizes that disagree with ispe, and any error or warning from
// ffmpeg) goes to libheif, so the WebAssembly decoder stays the reference
// and the judge of damaged files. Coded data damaged in a way neither
// decoder notices (HEVC has no checksum unless the encoder adds one)
// decodes to different garbage with each.

// UseFFmpeg makes HEIC decodes of this process run their HEVC pictures
// through ffmpeg where the file allows it (see above); find is called
// once, at the first HEIC decode, and returns the path of the ffmpeg
// program, or "" to keep the built-in decoder. UseFFmpeg(nil) goes back to
// the built-in decoder. The decoded pixels do not depend on the choice.
func UseFFmpeg(find func() string) {
	if find == nil {
		hevcTool.Store(nil)
		return
	}
	hevcTool.Store(&ffmpegTool{find: find})
}

// HEVCDecoder names what decodes the HEVC pictures of a HEIC: the ffmpeg
// program's path, or "" for the built-in decoder. It runs the find
// function UseFFmpeg was given, if it has not run yet.
func HEVCDecoder() string {
	if t := hevcTool.Load(); t != nil {
		return t.path()
	}
	return ""
}

type ffmpegTool struct {
	find func() string
	once sync.Once
	p    string
}

func (t *ffmpegTool) path() string {
	t.once.Do(func() { t.p = t.find() })
	return t.p
}

var hevcTool atomic.Pointer[ffmpegTool]

// hevcFFmpegDecodes counts the HEICs whose pixels came from ffmpeg (tests
// check that the path they test was taken).
var hevcFFmpegDecodes atomic.Int64

// hevcFailures counts the HEICs ffmpeg was given and did not decode (they
// went to libheif), and keeps the last reason.
var hevcFailures struct {
	n    atomic.Int64
	last atomic.Pointer[error]
}

// FFmpegFailures reports how many HEICs ffmpeg was given since the start
// of the process and did not decode, and why the last one failed: those
// went to the built-in decoder, correctly but at its speed. Files the
// ffmpeg path declines without running it (see UseFFmpeg) do not count.
func FFmpegFailures() (int64, error) {
	n := hevcFailures.n.Load()
	if p := hevcFailures.last.Load(); p != nil {
		return n, *p
	}
	return n, nil
}

// hevcCheckFile is a 67x45 HEIC (a one-tile grid, cropped), the one
// testdata/heif/yuv420.heic holds.
//
//go:embed hevccheck.heic
var hevcCheckFile []byte

// CheckFFmpeg decodes a small HEIC with the ffmpeg UseFFmpeg names and with
// the built-in decoder. It returns the ffmpeg's path ("" when none is in
// use) and an error when ffmpeg fails or its pixels differ, in which case
// HEICs are decoded by the built-in decoder (each after a failed try).
func CheckFFmpeg(ctx context.Context) (string, error) {
	path := HEVCDecoder()
	if path == "" {
		return "", nil
	}
	info, err := heifHeader(hevcCheckFile)
	if err != nil {
		return path, err
	}
	job, ok := hevcPlan(hevcCheckFile)
	if !ok {
		return path, errors.New("the test picture has no plan")
	}
	got, err := ffmpegHEIF(ctx, path, job, heifNCLX(info), info.depth)
	if err != nil {
		return path, err
	}
	want, err := heifDecodeBuiltin(ctx, hevcCheckFile, info)
	if err != nil {
		return path, fmt.Errorf("the built-in decoder: %w", err)
	}
	if w, ok := want.(*packedRGB); !ok || !bytes.Equal(w.Pix, got.Pix) {
		return path, fmt.Errorf("%w: its pixels differ from libde265's on a test picture", errFFmpegHEVC)
	}
	return path, nil
}

// hevcPicture is what the sequence parameter set of a coded item says of
// its decoded picture.
type hevcPicture struct {
	w, h   int // after the conformance window
	chroma int // chroma_format_idc: 1 4:2:0, 2 4:2:2, 3 4:4:4
	depth  int // bits of luma and chroma alike
}

// hevcJob is the primary image of a HEIC as one HEVC stream.
type hevcJob struct {
	stream     []byte // Annex B
	ends       []int  // where each picture's part of stream ends
	skip       []bool // pictures not decoded (see window); nil: none
	pic        hevcPicture
	rows, cols int // 1 and 1 for a coded image
	outW, outH int
}

// hevcPlan returns the job for data's primary item, or ok false when this
// file must go to libheif (see the top of the file).
func hevcPlan(data []byte) (job *hevcJob, ok bool) {
	it, ok := readHEIFItems(data)
	if !ok {
		return nil, false
	}
	primary, idat := it.primary, it.idat
	types := map[uint32]string{}
	if parseIINF(it.iinf, types) != nil {
		return nil, false
	}
	refs, aux, ok := hevcRefs(it.iref, primary)
	if !ok {
		return nil, false
	}
	props, assoc := it.props, it.assoc
	// prop returns the one property of type t of item id (nil when none),
	// and false when the item has a clean aperture or two of type t.
	prop := func(id uint32, t string) ([]byte, bool) {
		var found []byte
		n := 0
		for _, i := range assoc[id] {
			if i < 1 || i > len(props) {
				continue
			}
			switch it.types[i-1] {
			case "clap":
				return nil, false
			case t:
				found = props[i-1]
				n++
			}
		}
		return found, n <= 1
	}
	// An alpha plane goes to libheif; other auxiliary images (depth maps,
	// an iPhone's HDR gain map) are not part of the primary image's pixels.
	for _, id := range aux {
		auxC, ok := prop(id, "auxC")
		if !ok || len(auxC) < 5 {
			return nil, false
		}
		urn, _, _ := bytes.Cut(auxC[4:], []byte{0})
		switch string(urn) {
		case "urn:mpeg:hevc:2015:auxid:1", "urn:mpeg:avc:2015:auxid:1", "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha":
			return nil, false
		}
	}
	locs, ok := ilocItems(it.iloc)
	if !ok {
		return nil, false
	}
	itemData := func(id uint32) ([]byte, bool) {
		l, found := locs[id]
		if !found {
			return nil, false
		}
		return l.bytes(data, idat)
	}
	job = &hevcJob{rows: 1, cols: 1}
	var items []uint32
	switch types[primary] {
	case "hvc1":
		items = []uint32{primary}
	case "grid":
		ispe, ok := prop(primary, "ispe")
		if !ok || len(ispe) < 12 {
			return nil, false
		}
		desc, ok := itemData(primary)
		if !ok {
			return nil, false
		}
		if job.rows, job.cols, job.outW, job.outH, ok = parseGridDesc(desc); !ok {
			return nil, false
		}
		items = refs
		if len(items) != job.rows*job.cols || int(binary.BigEndian.Uint32(ispe[4:])) != job.outW ||
			int(binary.BigEndian.Uint32(ispe[8:])) != job.outH {
			return nil, false
		}
	default:
		return nil, false
	}
	var sps []byte
	for k, id := range items {
		if types[id] != "hvc1" {
			return nil, false
		}
		hvcC, ok1 := prop(id, "hvcC")
		ispe, ok2 := prop(id, "ispe")
		coded, ok3 := itemData(id)
		if !ok1 || !ok2 || !ok3 || hvcC == nil || ispe == nil || len(ispe) < 12 {
			return nil, false
		}
		nals, s, lenSize, ok := hvcCNALs(hvcC)
		if !ok {
			return nil, false
		}
		if k == 0 {
			sps = s
			if job.pic, ok = parseHEVCSPS(s); !ok {
				return nil, false
			}
		} else if !bytes.Equal(s, sps) {
			return nil, false // tiles of different pictures
		}
		if int(binary.BigEndian.Uint32(ispe[4:])) != job.pic.w || int(binary.BigEndian.Uint32(ispe[8:])) != job.pic.h {
			return nil, false
		}
		job.stream = append(job.stream, nals...)
		if job.stream, ok = annexB(job.stream, coded, lenSize); !ok {
			return nil, false
		}
		job.stream = append(job.stream, 0, 0, 0, 1, 36<<1, 1) // end of sequence
		job.ends = append(job.ends, len(job.stream))
	}
	pw, ph := job.pic.w, job.pic.h
	if job.outW == 0 {
		job.outW, job.outH = pw, ph
	}
	// Tiles cover the output and overhang it by less than a tile; chroma
	// of a subsampled tile starts on a whole chroma sample.
	sx, sy := hevcSubsampling(job.pic.chroma)
	if job.outW <= 0 || job.outH <= 0 || job.cols*pw < job.outW || job.rows*ph < job.outH ||
		(job.cols-1)*pw >= job.outW || (job.rows-1)*ph >= job.outH ||
		(job.cols > 1 && pw&sx != 0) || (job.rows > 1 && ph&sy != 0) {
		return nil, false
	}
	return job, true
}

// window leaves out of the decode the grid tiles that do not meet r (in
// the coordinates of the output, before irot/imir): their samples are
// left zero, so whoever reads the image must read only r.
func (j *hevcJob) window(r image.Rectangle) {
	n := j.rows * j.cols
	j.skip = make([]bool, n)
	for k := range n {
		x, y := k%j.cols*j.pic.w, k/j.cols*j.pic.h
		j.skip[k] = !r.Overlaps(image.Rect(x, y, x+j.pic.w, y+j.pic.h))
	}
}

// decoded is the stream of the pictures not skipped, and their count.
func (j *hevcJob) decoded() ([]byte, int) {
	if j.skip == nil {
		return j.stream, len(j.ends)
	}
	var out []byte
	n, start := 0, 0
	for k, end := range j.ends {
		if !j.skip[k] {
			out = append(out, j.stream[start:end]...)
			n++
		}
		start = end
	}
	return out, n
}

// heifItems is a HEIF file's meta box read for its items: the primary
// item, the boxes that describe items (sub-slices of the file), and the
// properties (ipco's children, by index - 1) with their associations.
type heifItems struct {
	primary                uint32
	wideIDs                bool // pitm version 1: 32-bit item ids
	iinf, iloc, idat, iref []byte
	types                  []string
	props                  [][]byte
	assoc                  map[uint32][]int
}

// readHEIFItems reads data's meta box; false when it lacks pitm, iloc or
// iprp with ipco, or does not parse.
func readHEIFItems(data []byte) (*heifItems, bool) {
	meta, err := bmffFind(data, "meta")
	if err != nil || len(meta) < 4 {
		return nil, false
	}
	it := &heifItems{assoc: map[uint32][]int{}}
	var pitm, iprp []byte
	if bmffBoxes(meta[4:], func(t string, b []byte) error {
		switch t {
		case "pitm":
			pitm = b
		case "iinf":
			it.iinf = b
		case "iloc":
			it.iloc = b
		case "idat":
			it.idat = b
		case "iprp":
			iprp = b
		case "iref":
			it.iref = b
		}
		return nil
	}) != nil || len(pitm) < 6 || it.iloc == nil || iprp == nil {
		return nil, false
	}
	it.primary, it.wideIDs = uint32(binary.BigEndian.Uint16(pitm[4:])), pitm[0] != 0
	if it.wideIDs {
		if len(pitm) < 8 {
			return nil, false
		}
		it.primary = binary.BigEndian.Uint32(pitm[4:])
	}
	ipco, err := bmffFind(iprp, "ipco")
	if err != nil || ipco == nil {
		return nil, false
	}
	if bmffBoxes(ipco, func(t string, b []byte) error {
		it.types, it.props = append(it.types, t), append(it.props, b)
		return nil
	}) != nil {
		return nil, false
	}
	if bmffBoxes(iprp, func(t string, b []byte) error {
		if t == "ipma" {
			return parseIPMA(b, it.assoc)
		}
		return nil
	}) != nil {
		return nil, false
	}
	return it, true
}

// parseGridDesc reads an ImageGrid descriptor (a grid item's data).
func parseGridDesc(desc []byte) (rows, cols, outW, outH int, ok bool) {
	if len(desc) < 8 || desc[0] != 0 || desc[1]&1 != 0 && len(desc) < 12 {
		return 0, 0, 0, 0, false
	}
	rows, cols = int(desc[2])+1, int(desc[3])+1
	if desc[1]&1 != 0 {
		return rows, cols, int(binary.BigEndian.Uint32(desc[4:])), int(binary.BigEndian.Uint32(desc[8:])), true
	}
	return rows, cols, int(binary.BigEndian.Uint16(desc[4:])), int(binary.BigEndian.Uint16(desc[6:])), true
}

// hevcSubsampling returns the chroma shifts, horizontal and vertical.
func hevcSubsampling(chroma int) (sx, sy int) {
	switch chroma {
	case 1:
		return 1, 1
	case 2:
		return 1, 0
	}
	return 0, 0
}

// hevcRefs returns the dimg references of primary, in order, and the
// auxiliary images (auxl) of primary; false when a premultiplication
// (prem) refers to it.
func hevcRefs(b []byte, primary uint32) (dimg, aux []uint32, ok bool) {
	if b == nil {
		return nil, nil, true
	}
	if len(b) < 4 {
		return nil, nil, false
	}
	size := 2
	if b[0] != 0 {
		size = 4
	}
	id := func(p []byte) uint32 {
		if size == 4 {
			return binary.BigEndian.Uint32(p)
		}
		return uint32(binary.BigEndian.Uint16(p))
	}
	bad := errors.New("refused")
	err := bmffBoxes(b[4:], func(t string, r []byte) error {
		if len(r) < size+2 {
			return bad
		}
		from, n := id(r), int(binary.BigEndian.Uint16(r[size:]))
		r = r[size+2:]
		if len(r) < n*size || len(dimg)+len(aux)+n > maxHEIFItems {
			return bad
		}
		for j := 0; j < n; j++ {
			to := id(r[j*size:])
			switch {
			case t == "dimg" && from == primary:
				dimg = append(dimg, to)
			case t == "auxl" && to == primary:
				aux = append(aux, from)
			case t == "prem" && (to == primary || from == primary):
				return bad
			}
		}
		return nil
	})
	return dimg, aux, err == nil
}

// ilocItem is where an item's bytes are: construction method 0 (the
// file) or 1 (idat), and its extents.
type ilocItem struct {
	method  int
	extents [][2]uint64 // offset, length
}

// bytes returns the item's bytes.
func (l ilocItem) bytes(file, idat []byte) ([]byte, bool) {
	src := file
	if l.method == 1 {
		src = idat
	}
	var out []byte
	for i, e := range l.extents {
		off, n := e[0], e[1]
		if n == 0 || off > uint64(len(src)) || n > uint64(len(src))-off {
			return nil, false
		}
		if len(l.extents) == 1 && i == 0 {
			return src[off : off+n], true
		}
		out = append(out, src[off:off+n]...)
	}
	return out, len(out) > 0
}

// ilocItems reads an iloc box (versions 0 to 2): items whose bytes are in
// this file or its idat; an item in another file or built from another
// item is left out.
func ilocItems(b []byte) (map[uint32]ilocItem, bool) {
	if len(b) < 8 || b[0] > 2 {
		return nil, false
	}
	v := b[0]
	offSize, lenSize, baseSize, idxSize := int(b[4]>>4), int(b[4]&15), int(b[5]>>4), int(b[5]&15)
	if v == 0 {
		idxSize = 0
	}
	p := 6
	fail := false
	get := func(n int) uint64 {
		if (n != 0 && n != 2 && n != 4 && n != 8) || len(b)-p < n {
			fail = true
			return 0
		}
		var x uint64
		for i := 0; i < n; i++ {
			x = x<<8 | uint64(b[p+i])
		}
		p += n
		return x
	}
	count := get(2)
	if v == 2 {
		p -= 2
		count = get(4)
	}
	out := map[uint32]ilocItem{}
	for k := uint64(0); k < count && !fail; k++ {
		if len(out) >= maxHEIFItems {
			return nil, false
		}
		var id uint32
		if v < 2 {
			id = uint32(get(2))
		} else {
			id = uint32(get(4))
		}
		method := 0
		if v >= 1 {
			method = int(get(2) & 15)
		}
		ref := get(2)
		base := get(baseSize)
		n := get(2)
		it := ilocItem{method: method}
		for e := uint64(0); e < n && !fail; e++ {
			get(idxSize)
			off, l := get(offSize), get(lenSize)
			if len(it.extents) < maxHEIFItems {
				it.extents = append(it.extents, [2]uint64{base + off, l})
			}
		}
		if ref == 0 && method <= 1 && len(it.extents) > 0 {
			out[id] = it
		}
	}
	return out, !fail
}

// hvcCNALs returns the parameter sets of an hvcC box as Annex B, the one
// SPS (without its start code), and the size of the length field before
// each NAL unit of the item's data; false if it has none or several SPS.
func hvcCNALs(b []byte) (nals, sps []byte, lenSize int, ok bool) {
	if len(b) < 23 {
		return nil, nil, 0, false
	}
	lenSize = int(b[21]&3) + 1
	n, p := int(b[22]), 23
	spsCount := 0
	for i := 0; i < n; i++ {
		if len(b)-p < 3 {
			return nil, nil, 0, false
		}
		typ, count := b[p]&0x3f, int(binary.BigEndian.Uint16(b[p+1:]))
		p += 3
		for j := 0; j < count; j++ {
			if len(b)-p < 2 {
				return nil, nil, 0, false
			}
			l := int(binary.BigEndian.Uint16(b[p:]))
			p += 2
			if len(b)-p < l || l < 2 {
				return nil, nil, 0, false
			}
			nal := b[p : p+l]
			p += l
			if typ == 33 {
				sps, spsCount = nal, spsCount+1
			}
			nals = append(append(nals, 0, 0, 0, 1), nal...)
		}
	}
	return nals, sps, lenSize, spsCount == 1 && lenSize != 3
}

// annexB appends the NAL units of an item's data, each preceded by a
// lenSize-byte length, to dst with start codes.
func annexB(dst, data []byte, lenSize int) ([]byte, bool) {
	for len(data) > 0 {
		if len(data) < lenSize {
			return dst, false
		}
		var l uint64
		for i := 0; i < lenSize; i++ {
			l = l<<8 | uint64(data[i])
		}
		data = data[lenSize:]
		if l == 0 || l > uint64(len(data)) {
			return dst, false
		}
		dst = append(append(dst, 0, 0, 0, 1), data[:l]...)
		data = data[l:]
	}
	return dst, true
}

// rbspReader reads an RBSP (emulation prevention bytes removed) bit by bit.
type rbspReader struct {
	b   []byte
	pos int // in bits
	bad bool
}

func (r *rbspReader) u(n int) uint64 {
	var x uint64
	for i := 0; i < n; i++ {
		if r.pos>>3 >= len(r.b) {
			r.bad = true
			return 0
		}
		x = x<<1 | uint64(r.b[r.pos>>3]>>(7-r.pos&7)&1)
		r.pos++
	}
	return x
}

func (r *rbspReader) ue() uint64 {
	zeros := 0
	for r.u(1) == 0 && !r.bad {
		if zeros++; zeros > 31 {
			r.bad = true
			return 0
		}
	}
	return 1<<zeros - 1 + r.u(zeros)
}

// parseHEVCSPS reads what a sequence parameter set NAL unit (with its
// two-byte header) says of the decoded picture (H.265 7.3.2.2), or false
// for what this file leaves to libheif.
func parseHEVCSPS(nal []byte) (hevcPicture, bool) {
	if len(nal) < 3 || nal[0]>>1&0x3f != 33 {
		return hevcPicture{}, false
	}
	rbsp := make([]byte, 0, len(nal))
	zeros := 0
	for _, c := range nal[2:] {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		rbsp = append(rbsp, c)
	}
	r := &rbspReader{b: rbsp}
	r.u(4) // sps_video_parameter_set_id
	sub := int(r.u(3))
	r.u(1)
	// profile_tier_level(1, sub)
	r.u(96)
	var prof, lvl [8]bool
	for i := 0; i < sub; i++ {
		prof[i], lvl[i] = r.u(1) == 1, r.u(1) == 1
	}
	if sub > 0 {
		r.u(2 * (8 - sub))
	}
	for i := 0; i < sub; i++ {
		if prof[i] {
			r.u(88)
		}
		if lvl[i] {
			r.u(8)
		}
	}
	r.ue() // sps_seq_parameter_set_id
	p := hevcPicture{chroma: int(r.ue())}
	if p.chroma < 1 || p.chroma > 3 {
		return p, false // monochrome, or not a chroma format
	}
	if p.chroma == 3 && r.u(1) == 1 {
		return p, false // separate colour planes
	}
	w, h := r.ue(), r.ue()
	var left, right, top, bottom uint64
	if r.u(1) == 1 {
		left, right, top, bottom = r.ue(), r.ue(), r.ue(), r.ue()
	}
	luma, chroma := r.ue()+8, r.ue()+8
	sx, sy := hevcSubsampling(p.chroma)
	cw, ch := (left+right)<<sx, (top+bottom)<<sy
	if r.bad || luma != chroma || luma > 16 || w > 1<<16 || h > 1<<16 || cw >= w || ch >= h {
		return p, false
	}
	p.w, p.h, p.depth = int(w-cw), int(h-ch), int(luma)
	return p, true
}

// hevcTimeLimit bounds one ffmpeg decode (a 12 MP photo takes 1 to 2 s,
// a 48 MP one about 8): an ffmpeg that hangs sends the file to libheif.
var hevcTimeLimit = 2 * time.Minute

// errFFmpegHEVC is wrapped by every reason ffmpegHEIF gives up; the file
// then goes to libheif.
var errFFmpegHEVC = errors.New("ffmpeg's HEVC decode not used")

// ffmpegHEIF decodes job with the ffmpeg at path into packed RGB, with the
// colour description c and depth as gbrToRGB takes them.
func ffmpegHEIF(parent context.Context, path string, job *hevcJob, c nclx, depth int) (*packedRGB, error) {
	// Cancelled to stop ffmpeg when its output is refused, and at the
	// time limit.
	ctx, cancel := context.WithTimeout(parent, hevcTimeLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-nostdin", "-hide_banner", "-loglevel", "error",
		"-threads", "1", "-err_detect", "explode", "-f", "hevc", "-i", "pipe:0", "-map", "0:v:0",
		"-f", "yuv4mpegpipe", "-strict", "-1", "pipe:1")
	cmd.WaitDelay = 2 * time.Second // a child of a wrapper keeping a pipe open
	stream, _ := job.decoded()
	cmd.Stdin = bytes.NewReader(stream)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if err := parent.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errFFmpegHEVC, err)
	}
	// The read ends when the context does, even if something still
	// holds the pipe's other end.
	stop := context.AfterFunc(ctx, func() { out.Close() })
	img, rerr := readHEVCFrames(bufio.NewReaderSize(out, 1<<20), job, c, depth)
	if rerr != nil {
		cancel()
	} else if _, err := io.Copy(io.Discard, out); err != nil {
		rerr = err
	}
	stop()
	werr := cmd.Wait()
	if err := parent.Err(); err != nil {
		return nil, err
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w: ffmpeg took over %v", errFFmpegHEVC, hevcTimeLimit)
	}
	switch {
	case rerr != nil:
		return nil, fmt.Errorf("%w: %v", errFFmpegHEVC, rerr)
	case werr != nil:
		return nil, fmt.Errorf("%w: %v: %s", errFFmpegHEVC, werr, strings.TrimSpace(stderr.String()))
	case stderr.Len() > 0:
		return nil, fmt.Errorf("%w: ffmpeg said: %s", errFFmpegHEVC, strings.TrimSpace(stderr.String()))
	}
	return img, nil
}

// y4mChroma is the C tag of a YUV4MPEG stream for a chroma format and
// depth, as ffmpeg writes it (4:2:0 at 8 bits has three tags, for three
// chroma sitings).
func y4mChroma(tag string, p hevcPicture) bool {
	if p.depth == 8 {
		switch p.chroma {
		case 1:
			return tag == "C420jpeg" || tag == "C420mpeg2" || tag == "C420paldv" || tag == "C420"
		case 2:
			return tag == "C422"
		}
		return tag == "C444"
	}
	return tag == "C"+[4]string{"", "420", "422", "444"}[p.chroma]+"p"+strconv.Itoa(p.depth)
}

// readHEVCFrames reads ffmpeg's YUV4MPEG output of job, places its frames
// and converts them.
func readHEVCFrames(r *bufio.Reader, job *hevcJob, c nclx, depth int) (*packedRGB, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("no YUV4MPEG header: %w", err)
	}
	p := job.pic
	f := strings.Fields(head)
	if len(f) == 0 || f[0] != "YUV4MPEG2" {
		return nil, fmt.Errorf("not YUV4MPEG: %q", head)
	}
	var w, h int
	tag := "C420jpeg" // YUV4MPEG's default
	for _, t := range f[1:] {
		switch t[0] {
		case 'W':
			w, _ = strconv.Atoi(t[1:])
		case 'H':
			h, _ = strconv.Atoi(t[1:])
		case 'C':
			tag = t
		}
	}
	if w != p.w || h != p.h || !y4mChroma(tag, p) {
		return nil, fmt.Errorf("frames of %dx%d %s where the SPS says %dx%d, chroma %d, %d bits", w, h, tag, p.w, p.h, p.chroma, p.depth)
	}
	sx, sy := hevcSubsampling(p.chroma)
	cw, ch := (w+sx)>>sx, (h+sy)>>sy
	bps := 1
	if p.depth > 8 {
		bps = 2
	}
	shift := uint(p.depth - 8)
	ow, oh := job.outW, job.outH
	ocw, och := (ow+sx)>>sx, (oh+sy)>>sy
	planes := [3][]byte{make([]byte, ow*oh), make([]byte, ocw*och), make([]byte, ocw*och)}
	frame := make([]byte, (w*h+2*cw*ch)*bps)
	for k := 0; k < job.rows*job.cols; k++ {
		if job.skip != nil && job.skip[k] {
			continue
		}
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "FRAME") {
			return nil, fmt.Errorf("frame %d of %d: %q, %v", k+1, job.rows*job.cols, line, err)
		}
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, fmt.Errorf("frame %d of %d: %w", k+1, job.rows*job.cols, err)
		}
		row, col := k/job.cols, k%job.cols
		src := frame
		for i := range 3 {
			pw, ph, ox, oy, dw, dh := w, h, col*w, row*h, ow, oh
			if i > 0 {
				pw, ph, ox, oy, dw, dh = cw, ch, ox>>sx, oy>>sy, ocw, och
			}
			plane := src[:pw*ph*bps]
			src = src[pw*ph*bps:]
			n := min(pw, dw-ox) // the part of the tile inside the output
			for y := 0; y < ph && oy+y < dh; y++ {
				d := planes[i][(oy+y)*dw+ox:][:n]
				s := plane[y*pw*bps:][:n*bps]
				if bps == 1 {
					copy(d, s)
					continue
				}
				for x := range d {
					d[x] = uint8(binary.LittleEndian.Uint16(s[2*x:]) >> shift)
				}
			}
		}
	}
	if _, err := r.Peek(1); err != io.EOF {
		return nil, fmt.Errorf("more frames than the %d pictures", job.rows*job.cols)
	}
	v := newHeifConv(c, depth)
	if out := v.planarRows(planes, ow, oh, ocw, sx, sy); out != nil {
		return out, nil
	}
	buf := make([]byte, 4*ow)
	return gbrRows(v, ow, oh, func(y int) []byte {
		yr, cy := planes[0][y*ow:][:ow], (y>>sy)*ocw
		cb, cr := planes[1][cy:][:ocw], planes[2][cy:][:ocw]
		for x := 0; x < ow; x++ {
			q := buf[4*x : 4*x+4 : 4*x+4]
			q[0], q[1], q[2], q[3] = cr[x>>sx], yr[x], cb[x>>sx], 255
		}
		return buf
	}), nil
}

// planarRows is gbrRows over Y, Cb, Cr planes (chroma subsampled by sx,
// sy, ocw samples a row) for matrixRow's case, through the same tables
// and in the same order of arithmetic, without making GBR rows; nil in
// the other cases.
func (v *heifConv) planarRows(planes [3][]byte, w, h, cw, sx, sy int) *packedRGB {
	if v.shift > 0 || v.c.matrix == 0 || v.c.matrix == 8 {
		return nil
	}
	t := v.tables()
	out := &packedRGB{Pix: rgbOutput(w * h * 3), W: w, H: h}
	for y := 0; y < h; y++ {
		yr, co := planes[0][y*w:][:w], (y>>sy)*cw
		cb, cr := planes[1][co:][:cw], planes[2][co:][:cw]
		dst := out.Pix[y*w*3:][:w*3]
		for x, l := range yr {
			c := x >> sx
			yc, yb := int(l)<<8|int(cr[c]), int(l)<<8|int(cb[c])
			d := dst[x*3 : x*3+3 : x*3+3]
			d[0] = t.r[yc]
			d[1] = heifClipF(t.g[yb] + t.gCr[cr[c]])
			d[2] = t.b[yb]
		}
	}
	return out
}

// hevcTilesSkipped counts the grid tiles left out by windows (tests).
var hevcTilesSkipped atomic.Int64

// heifFFmpeg decodes data's primary item with ffmpeg when UseFFmpeg named
// one and the file allows it; ok false sends it to libheif. A window that
// is not empty (output coordinates, before irot/imir) leaves the grid
// tiles outside it undecoded (hevcJob.window).
func heifFFmpeg(ctx context.Context, data []byte, c nclx, depth int, win image.Rectangle) (img image.Image, ok bool) {
	t := hevcTool.Load()
	if t == nil {
		return nil, false
	}
	path := t.path()
	if path == "" {
		return nil, false
	}
	job, ok := hevcPlan(data)
	if !ok {
		return nil, false
	}
	if !win.Empty() && job.rows*job.cols > 1 {
		job.window(win)
	}
	m, err := ffmpegHEIF(ctx, path, job, c, depth)
	if err != nil {
		if ctx.Err() == nil {
			hevcFailures.n.Add(1)
			hevcFailures.last.Store(&err)
		}
		return nil, false
	}
	hevcFFmpegDecodes.Add(1)
	for _, k := range job.skip {
		if k {
			hevcTilesSkipped.Add(1)
		}
	}
	return m, true
}
