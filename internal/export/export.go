package export

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/clipidx/clipidx/internal/flock"
	"github.com/clipidx/clipidx/internal/madedirs"
	"github.com/clipidx/clipidx/store"
)

// DefaultRowsPerPartition is the partition size when
// Options.RowsPerPartition is 0, as clip-retrieval's default batch.
const DefaultRowsPerPartition = 1_000_000

var (
	// ErrNotEmpty is returned when the output folder holds anything but
	// what a killed export left (its temporary files and empty folders)
	// or, in partition mode, partitions of the same export.
	ErrNotEmpty = errors.New("output folder is not empty")
	// ErrBusy is returned when another export is writing into the same
	// output (its folder, or the FAISS file's temporary files).
	ErrBusy = errors.New("another export is writing into it")
	// ErrNoRows is returned when nothing is indexed (under Options.Under).
	ErrNoRows = errors.New("no indexed image to export")
	// ErrOptions is returned for contradictory or out-of-range options.
	ErrOptions = errors.New("invalid export options")
)

// Captions says whether ClipRetrieval writes the caption vectors of
// webdataset samples (build --captions) as text_emb files.
type Captions int

const (
	// CaptionsAuto writes text_emb when some exported row has a caption
	// vector. In partition mode each machine then decides from its own
	// rows: one whose share holds no caption writes none while the others
	// do (see Result.CaptionsUnknown), so a split export of a build with
	// captions takes CaptionsOn on every machine.
	CaptionsAuto Captions = iota
	// CaptionsOn always writes text_emb, a zero row for each row without
	// a caption vector.
	CaptionsOn
	// CaptionsOff never writes text_emb.
	CaptionsOff
)

// Options configures an export; the zero value exports everything as
// float16 in partitions of DefaultRowsPerPartition rows.
type Options struct {
	// Under keeps only the files at or under this absolute path (a
	// folder, a file, or a tar shard, whose samples are SHARD#KEY).
	Under string
	// AlsoUnder are more paths kept as Under is (the other names Under
	// has in the index through symbolic links): their rows join Under's
	// in path order, each row once.
	AlsoUnder []string
	// Captions says whether text_emb files are written (clip-retrieval).
	Captions Captions
	// DType is "f16" ('<f2', clip-retrieval's default; "" too) or "f32"
	// ('<f4'). FaissFlat always writes float32.
	DType string
	// RowsPerPartition is the number of rows of each partition; 0 =
	// DefaultRowsPerPartition.
	RowsPerPartition int
	// Partitions > 0 writes every row as the single partition number
	// Partition of an export of Partitions partitions (one per machine of
	// a split build), numbered with Partitions' digits, into a folder that
	// may hold other partitions of that export. A machine whose share
	// holds no row writes an empty partition (0-row files), so that the
	// export is complete.
	Partition, Partitions int
	// Progress, when set, is called with the rows written so far.
	Progress func(rows int)
	// NoSync publishes the files without waiting for the disk (fsync of
	// the files, then of their folders): faster, but a crash may then
	// leave a file of the final name incomplete, or lose it. For
	// benchmarks.
	NoSync bool
}

// Result says what an export wrote.
type Result struct {
	Rows       int      `json:"rows"`
	Dim        int      `json:"dim"`
	Partitions int      `json:"partitions"` // partition files written (one set each)
	Bytes      int64    `json:"bytes"`
	Files      []string `json:"files"`
	// TextEmb says whether text_emb files were written (see Captions);
	// TextRows counts their rows that hold a caption vector, the others
	// being zero (0 without text_emb).
	TextEmb  bool `json:"text_emb"`
	TextRows int  `json:"text_rows"`
	// CaptionsUnknown is set in partition mode with CaptionsAuto when the
	// rows cannot tell whether the build embedded captions: no caption
	// vector, and no sample with a caption (an empty share, or samples
	// without captions). The partition has no text_emb, which lines up
	// with the others only if they have none either.
	CaptionsUnknown bool `json:"captions_unknown,omitempty"`
	// Skipped lists the files left out of the export: for faiss-flat,
	// those whose path holds a line break, which its paths file (one
	// path a line) cannot hold.
	Skipped []string `json:"skipped,omitempty"`
	// Leftovers lists what a killed earlier export had left in the output
	// (its temporary files and the empty folders it made), removed before
	// writing.
	Leftovers []string `json:"leftovers,omitempty"`
	// Removed lists, when the export fails or is stopped, the files and
	// folders it had created and removed again (Files is then empty).
	Removed []string `json:"removed,omitempty"`
}

// row is one exported file.
type row struct {
	path string
	file store.File
}

// collectAll lists the indexed files under Options.Under and AlsoUnder
// (all when neither is set) in path order, each once.
func collectAll(s *store.Snapshot, opts Options) ([]row, error) {
	var unders []string
	for _, u := range append([]string{opts.Under}, opts.AlsoUnder...) {
		if u != "" && !slices.Contains(unders, u) {
			unders = append(unders, u)
		}
	}
	if len(unders) == 0 {
		return collect(s, "")
	}
	var rows []row
	for _, u := range unders {
		r, err := collect(s, u)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	if len(unders) > 1 {
		// One path under two of them (nested links) is one row.
		slices.SortStableFunc(rows, func(a, b row) int { return strings.Compare(a.path, b.path) })
		rows = slices.CompactFunc(rows, func(a, b row) bool { return a.path == b.path })
	}
	return rows, nil
}

// collect lists the indexed files at or under the path under (all when
// it is "") in path order.
func collect(s *store.Snapshot, under string) ([]row, error) {
	var rows []row
	keep := func(p string, f store.File) error {
		if !f.Failed() {
			rows = append(rows, row{p, f})
		}
		return nil
	}
	if under == "" {
		return rows, s.Files("", keep)
	}
	if err := s.Files(under, keep); err != nil {
		return nil, err
	}
	// The samples of a tar shard: SHARD.tar#KEY sorts after SHARD.tar and
	// before SHARD.tar/..., so they follow in path order.
	var samples []row
	err := s.FilesPrefix(under+store.SampleSep, func(p string, f store.File) error {
		if !f.Failed() {
			samples = append(samples, row{p, f})
		}
		return nil
	})
	if err != nil || len(samples) == 0 {
		return rows, err
	}
	if len(rows) > 0 && rows[0].path == under {
		return append(append(rows[:1:1], samples...), rows[1:]...), nil
	}
	return append(samples, rows...), nil
}

// dtype returns the NPY descr and the bytes per value.
func dtype(name string) (string, int, error) {
	switch name {
	case "", "f16":
		return "<f2", 2, nil
	case "f32":
		return "<f4", 4, nil
	}
	return "", 0, fmt.Errorf("%w: dtype %q (want f16 or f32)", ErrOptions, name)
}

// encodeRow appends v as little-endian float16 (size 2) or float32.
func encodeRow(dst []byte, v []float32, size int) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, size*len(v))...)
	out := dst[n:]
	if size == 2 {
		_ = out[2*len(v)-1]
		for i, x := range v {
			binary.LittleEndian.PutUint16(out[2*i:], f16(x))
		}
		return dst
	}
	_ = out[4*len(v)-1]
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return dst
}

// ClipRetrieval writes the rows of the snapshot into the folder dir as
// clip-retrieval's inference does (see the package doc). dir must be
// absent or empty, except in partition mode (Options.Partitions > 0)
// where it may hold other partitions of the same export (the same digits,
// dtype and dimension, and text_emb in all or none); no existing file is
// ever overwritten. What a killed export left in dir (temporary files,
// the empty folders it makes) does not count: it is removed and listed in
// Result.Leftovers.
//
// ctx is checked between blocks of rows. When the export fails or ctx is
// done, it removes the files and folders it created, so dir is as it was
// (in partition mode the folders are kept: other machines write there),
// and returns a Result listing them in Removed with the error (ctx's
// error when stopped).
func ClipRetrieval(ctx context.Context, s *store.Snapshot, dir string, opts Options) (*Result, error) {
	descr, size, err := dtype(opts.DType)
	if err != nil {
		return nil, err
	}
	rpp := opts.RowsPerPartition
	switch {
	case rpp < 0:
		return nil, fmt.Errorf("%w: rows per partition %d", ErrOptions, rpp)
	case rpp == 0:
		rpp = DefaultRowsPerPartition
	case opts.Partitions > 0 && opts.RowsPerPartition > 0:
		return nil, fmt.Errorf("%w: a partition of a split export holds every row of its index: rows per partition does not apply", ErrOptions)
	}
	if opts.Partitions < 0 || opts.Partitions > 0 && (opts.Partition < 0 || opts.Partition >= opts.Partitions) {
		return nil, fmt.Errorf("%w: partition %d of %d (want 0 <= partition < partitions)", ErrOptions, opts.Partition, opts.Partitions)
	}
	if opts.Captions < CaptionsAuto || opts.Captions > CaptionsOff {
		return nil, fmt.Errorf("%w: captions %d", ErrOptions, opts.Captions)
	}
	rows, err := collectAll(s, opts)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && opts.Partitions == 0 {
		return nil, ErrNoRows
	}
	dim := s.Dim()
	res := &Result{Rows: len(rows), Dim: dim}
	ms, text, err := scanSamples(s, rows, opts, res)
	if err != nil {
		return nil, err
	}

	// parts are the partitions to write: in partition mode the one
	// numbered Partition, with every row (none for an empty share).
	first, count := 0, (len(rows)+rpp-1)/rpp
	var parts [][]row
	if opts.Partitions > 0 {
		first, count, parts = opts.Partition, opts.Partitions, [][]row{rows}
	} else {
		for lo := 0; lo < len(rows); lo += rpp {
			parts = append(parts, rows[lo:min(lo+rpp, len(rows))])
		}
	}
	digits := len(strconv.Itoa(count))
	// made lists the folders this export creates, for undo.
	var made []string
	if opts.Partitions == 0 {
		// One export at a time writes into a folder: another's temporary
		// files would be taken for a killed export's and removed. (In
		// partition mode nothing of another's is removed.)
		m, err := madedirs.MkdirAll(dir)
		made = m
		if err == nil {
			var lock *flock.File
			lock, err = flock.TryLockDir(dir)
			if errors.Is(err, flock.ErrHeld) {
				err = fmt.Errorf("%s: %w", dir, ErrBusy)
			}
			defer lock.Unlock()
		}
		if err != nil {
			_, err = undo(nil, made, err)
			return nil, err
		}
	}
	left, err := checkFolder(dir, digits, descr, dim, opts.Partitions > 0, text)
	if err == nil {
		err = removeLeftovers(left)
	}
	if err != nil {
		_, err = undo(nil, made, err)
		return nil, err
	}
	res.Leftovers = left
	fail := func(err error) (*Result, error) {
		if opts.Partitions > 0 {
			made = nil // shared with the other machines' partitions
		}
		res.Removed, err = undo(res.Files, made, err)
		res.Files, res.Partitions, res.Bytes = nil, 0, 0
		return res, err
	}
	subdirs := []string{"img_emb", "metadata"}
	if text {
		subdirs = append(subdirs, "text_emb")
	}
	for _, sd := range subdirs {
		m, err := madedirs.MkdirAll(filepath.Join(dir, sd))
		made = append(made, m...)
		if err != nil {
			return fail(err)
		}
	}
	done := 0
	for i, part := range parts {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		name := fmt.Sprintf("%0*d", digits, first+i)
		n, files, err := writePartition(ctx, s, part, dir, name, descr, size, ms, text, opts.NoSync, func(k int) {
			if opts.Progress != nil {
				opts.Progress(done + k)
			}
		})
		if err != nil {
			return fail(err)
		}
		done += len(part)
		res.Bytes += n
		res.Files = append(res.Files, files...)
		res.Partitions++
	}
	return res, nil
}

// scanSamples makes one pass over the samples of rows: it types the JSON
// columns (the same schema in every partition), counts the caption
// vectors into res and decides whether text_emb is written.
func scanSamples(s *store.Snapshot, rows []row, opts Options, res *Result) (*metaSchema, bool, error) {
	ms := &metaSchema{fields: map[string]kind{}}
	samples, captioned := false, false
	for _, r := range rows {
		smp, ok, err := s.Sample(r.path)
		if err != nil {
			return nil, false, err
		}
		if ok {
			samples = true
			captioned = captioned || smp.Caption != ""
			ms.observe(smp.JSON)
			if smp.Text != nil {
				res.TextRows++
			}
		}
	}
	ms.build()
	switch opts.Captions {
	case CaptionsOn:
		res.TextEmb = true
	case CaptionsAuto:
		res.TextEmb = res.TextRows > 0
		// Samples with captions but no caption vector were built without
		// them; the rows of a share without a caption cannot tell.
		res.CaptionsUnknown = opts.Partitions > 0 && !res.TextEmb && !captioned && (samples || len(rows) == 0)
	}
	if !res.TextEmb {
		res.TextRows = 0
	}
	return ms, res.TextEmb, nil
}

var partName = regexp.MustCompile(`^(img_emb|text_emb|metadata)_([0-9]+)\.(npy|parquet)$`)

// checkFolder refuses an output folder holding anything but what a killed
// export left, which it returns (see leftovers), or, in partition mode,
// partitions of the same export: the same number of digits, dtype and
// dimension, and text_emb files when this export writes them (text) and
// only then. In partition mode a temporary file may be another machine's
// partition being written: it is neither counted nor removed.
func checkFolder(dir string, digits int, descr string, dim int, partitions, text bool) ([]string, error) {
	top, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !partitions {
		left, other, err := leftovers(dir, top)
		if err != nil {
			return nil, err
		}
		if other != "" {
			return nil, fmt.Errorf("%s: %w (it holds %s); export into a new folder (or, for one partition of a split export, pass --partition I --partitions N)", dir, ErrNotEmpty, other)
		}
		return left, nil
	}
	return nil, checkPartitions(dir, top, digits, descr, dim, text)
}

// checkPartitions is checkFolder in partition mode. A partition's
// img_emb file is published after its text_emb file (writePartition), so
// an img_emb file without its text_emb is a partition written without.
func checkPartitions(dir string, top []os.DirEntry, digits int, descr string, dim int, text bool) error {
	foreign := func(p, why string) error {
		return fmt.Errorf("%s: %w: %s %s, not a partition of this export; export into a new folder", dir, ErrNotEmpty, p, why)
	}
	var imgs []string            // partition numbers with an img_emb file
	texts := map[string]string{} // partition number → its text_emb file
	for _, e := range top {
		sub := e.Name()
		if !e.IsDir() || (sub != "img_emb" && sub != "text_emb" && sub != "metadata") {
			return foreign(filepath.Join(dir, sub), "is there")
		}
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return err
		}
		for _, f := range entries {
			p := filepath.Join(dir, sub, f.Name())
			if strings.HasPrefix(f.Name(), ".") && strings.Contains(f.Name(), ".tmp-") {
				continue // another machine's partition being written
			}
			m := partName.FindStringSubmatch(f.Name())
			if m == nil || m[1] != sub || (m[3] == "npy") != (sub != "metadata") {
				return foreign(p, "is there")
			}
			if len(m[2]) != digits {
				return foreign(p, fmt.Sprintf("is numbered with %d digits, not %d (another --partitions count)", len(m[2]), digits))
			}
			if sub != "metadata" {
				if err := sameNPY(p, descr, dim); err != nil {
					return foreign(p, err.Error())
				}
			}
			switch sub {
			case "img_emb":
				imgs = append(imgs, m[2])
			case "text_emb":
				texts[m[2]] = p
			}
		}
	}
	// Every partition has text_emb, or none: readers join the sorted
	// text_emb files row for row with the img_emb files.
	const how = "every partition of a split export has text_emb or none: run every machine's export with --captions (text_emb, a zero row for each sample without a caption vector), or every one with --captions=false"
	if others := slices.Sorted(maps.Values(texts)); !text && len(others) > 0 {
		return fmt.Errorf("%s: %w: %s is there, and this export writes no text_emb; %s", dir, ErrNotEmpty, others[0], how)
	}
	for _, n := range imgs {
		if _, ok := texts[n]; text && !ok {
			return fmt.Errorf("%s: %w: %s has no text_emb_%s.npy beside it, and this export writes text_emb; %s", dir, ErrNotEmpty, filepath.Join(dir, "img_emb", "img_emb_"+n+".npy"), n, how)
		}
	}
	return nil
}

func sameNPY(path, descr string, dim int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := readNPYHeader(f)
	if err != nil {
		return err
	}
	if info.descr != descr || info.cols != dim {
		return fmt.Errorf("holds %s vectors of dimension %d, not %s of %d", info.descr, info.cols, descr, dim)
	}
	return nil
}

// writePartition writes the three files of one partition, all or none.
func writePartition(ctx context.Context, s *store.Snapshot, rows []row, dir, name, descr string, size int, ms *metaSchema, text, noSync bool, progress func(int)) (int64, []string, error) {
	dim := s.Dim()
	var g group
	var err error
	open := func(path string) (*outFile, error) {
		o, err := createOut(path)
		if err == nil {
			g = append(g, o)
		}
		return o, err
	}
	// Opened (and so published) text_emb, metadata, img_emb: a
	// partition's img_emb file is there only once the others are, which
	// checkPartitions counts on.
	var txt *outFile
	if text {
		if txt, err = open(filepath.Join(dir, "text_emb", "text_emb_"+name+".npy")); err != nil {
			return 0, nil, err
		}
	}
	meta, err := open(filepath.Join(dir, "metadata", "metadata_"+name+".parquet"))
	if err != nil {
		g.abort()
		return 0, nil, err
	}
	img, err := open(filepath.Join(dir, "img_emb", "img_emb_"+name+".npy"))
	if err != nil {
		g.abort()
		return 0, nil, err
	}
	hdr, err := npyHeader(descr, len(rows), dim)
	if err != nil {
		g.abort()
		return 0, nil, err
	}
	img.Write(hdr)
	if txt != nil {
		txt.Write(hdr)
	}
	p := &pipeline{ctx: ctx, s: s, dim: dim, size: size, text: text, img: img, txt: txt, meta: ms.newWriter(meta), progress: progress}
	if err := p.run(rows); err != nil {
		g.abort()
		return 0, nil, err
	}
	if err := p.meta.close(); err != nil {
		g.abort()
		return 0, nil, fmt.Errorf("write %s: %w", meta.final, err)
	}
	n, err := g.commit(noSync)
	if err != nil {
		return 0, nil, err
	}
	// Listed img_emb first: undo removes them in this order.
	names := []string{img.final, meta.final}
	if txt != nil {
		names = append(names, txt.final)
	}
	return n, names, nil
}

// blockRows is the number of rows converted as one unit of work.
const blockRows = 1024

// block is blockRows rows on their way through the pipeline.
type block struct {
	rows     []row
	hi, lo   [][]byte        // halves of each row's vector (aliasing the map)
	samples  []*store.Sample // nil for a plain file
	metas    []*store.Meta   // nil without photo metadata
	img, txt []byte          // encoded rows
	done     chan struct{}   // closed when img and txt are ready
}

// pipeline writes a partition's rows: this goroutine reads the index
// (bbolt lookups stay on one goroutine), workers convert blocks to float16
// or float32 bytes, and a writer goroutine writes them and the metadata
// in row order.
type pipeline struct {
	ctx       context.Context // checked before each block is read
	s         *store.Snapshot
	dim, size int
	text      bool
	img, txt  *outFile
	meta      *metaWriter
	progress  func(int)
}

func (p *pipeline) run(rows []row) error {
	work := make(chan *block, 4)
	order := make(chan *block, 4)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				p.convert(b)
				close(b.done)
			}
		}()
	}
	werr := make(chan error, 1)
	go func() { werr <- p.write(order) }()
	var err error
	for lo := 0; lo < len(rows) && err == nil; lo += blockRows {
		if err = p.ctx.Err(); err != nil {
			break
		}
		b := &block{rows: rows[lo:min(lo+blockRows, len(rows))], done: make(chan struct{})}
		if err = p.read(b); err != nil {
			break
		}
		work <- b
		order <- b
	}
	close(work)
	close(order)
	wg.Wait()
	return errors.Join(err, <-werr)
}

// read looks up the vectors and samples of a block.
func (p *pipeline) read(b *block) error {
	n := len(b.rows)
	b.hi, b.lo, b.samples, b.metas = make([][]byte, n), make([][]byte, n), make([]*store.Sample, n), make([]*store.Meta, n)
	for i, r := range b.rows {
		hi, lo, ok := p.s.VectorHalves(r.file.Vec)
		if !ok {
			return fmt.Errorf("the vector of %s is missing from the index (run clipidx status --check)", r.path)
		}
		b.hi[i], b.lo[i] = hi, lo
		smp, ok, err := p.s.Sample(r.path)
		if err != nil {
			return err
		}
		if ok {
			b.samples[i] = &smp
		}
		pm, ok, err := p.s.Meta(r.path)
		if err != nil {
			return err
		}
		if ok {
			b.metas[i] = &pm
		}
	}
	return nil
}

// convert encodes a block's vectors (and caption vectors, zero for a row
// without one).
func (p *pipeline) convert(b *block) {
	vec := make([]float32, p.dim)
	b.img = make([]byte, 0, len(b.rows)*p.dim*p.size)
	for i := range b.rows {
		hi, lo := b.hi[i], b.lo[i]
		if p.size == 2 {
			n := len(b.img)
			b.img = b.img[:n+2*p.dim]
			joinF16(b.img[n:], hi, lo, p.dim)
			continue
		}
		for k := range vec {
			vec[k] = store.Join(binary.LittleEndian.Uint16(hi[2*k:]), binary.LittleEndian.Uint16(lo[2*k:]))
		}
		b.img = encodeRow(b.img, vec, p.size)
	}
	if !p.text {
		return
	}
	zero := make([]float32, p.dim)
	b.txt = make([]byte, 0, len(b.rows)*p.dim*p.size)
	for _, smp := range b.samples {
		t := zero
		if smp != nil && len(smp.Text) == p.dim {
			t = smp.Text
		}
		b.txt = encodeRow(b.txt, t, p.size)
	}
}

// write takes the blocks in row order; after an error it drains them.
func (p *pipeline) write(order <-chan *block) error {
	var err error
	done := 0
	for b := range order {
		<-b.done
		if err != nil {
			continue
		}
		if _, err = p.img.Write(b.img); err != nil {
			err = fmt.Errorf("write %s: %w", p.img.final, err)
			continue
		}
		if p.txt != nil {
			if _, err = p.txt.Write(b.txt); err != nil {
				err = fmt.Errorf("write %s: %w", p.txt.final, err)
				continue
			}
		}
		for i, r := range b.rows {
			if err = p.meta.add(r.path, r.file, b.samples[i], b.metas[i]); err != nil {
				break
			}
		}
		done += len(b.rows)
		if p.progress != nil {
			p.progress(done)
		}
	}
	return err
}

// lineBreaks are the characters Python's str.splitlines breaks lines at:
// LF, CR, VT, FF, the file, group and record separators, NEL, and the
// Unicode line and paragraph separators.
const lineBreaks = "\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029"

// FaissFlat writes the rows of the snapshot as a FAISS IndexFlatIP file
// at path (float32, row i = id i) and their paths, one per line, at
// path + ".paths". Neither file may exist; the folder of path is created
// when missing. A file whose path holds a line break cannot be a line of
// the paths file: it is left out of both, and listed in Result.Skipped. A
// line break is any that Python's str.splitlines splits at (lineBreaks),
// since readers of the paths file are mostly Python. The temporary files
// a killed FaissFlat into path left beside it are removed and listed in
// Result.Leftovers. Another FaissFlat still writing path makes it fail
// with ErrBusy, touching nothing (see createFaissFiles). ctx is checked
// every 4096 rows; when it is done, or the export fails, neither file is
// left, nor the folders it created (listed in the Result's Removed).
func FaissFlat(ctx context.Context, s *store.Snapshot, path string, opts Options) (*Result, error) {
	all, err := collectAll(s, opts)
	if err != nil {
		return nil, err
	}
	var rows []row
	var skipped []string
	for _, r := range all {
		if strings.ContainsAny(r.path, lineBreaks) {
			skipped = append(skipped, r.path)
			continue
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, ErrNoRows
	}
	dim := s.Dim()
	var g group
	made, err := madedirs.MkdirAll(filepath.Dir(path))
	fail := func(err error) (*Result, error) {
		g.abort()
		if errors.Is(err, ErrBusy) {
			made = nil // the other export writes there
		}
		if len(made) == 0 {
			return nil, err
		}
		removed, err := undo(nil, made, err)
		return &Result{Removed: removed}, err
	}
	if err != nil {
		return fail(err)
	}
	left, ix, pf, err := createFaissFiles(path)
	if err != nil {
		return fail(err)
	}
	g = group{ix, pf}
	if err := writeFaissHeader(ix, len(rows), dim); err != nil {
		return fail(err)
	}
	vec := make([]float32, dim)
	buf := make([]byte, 0, 4*dim)
	for i, r := range rows {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
		}
		if !s.VectorInto(r.file.Vec, vec) {
			return fail(fmt.Errorf("the vector of %s is missing from the index (run clipidx status --check)", r.path))
		}
		ix.Write(encodeRow(buf[:0], vec, 4))
		pf.WriteString(r.path)
		pf.WriteByte('\n')
		if opts.Progress != nil && (i+1)%65536 == 0 {
			opts.Progress(i + 1)
		}
	}
	n, err := g.commit(opts.NoSync)
	if err == nil && !opts.NoSync {
		// commit synced the file's folder and that folder's own; the
		// names of the folders made above them are made durable here.
		for _, m := range made {
			if err = syncDir(filepath.Dir(m)); err != nil {
				err = fmt.Errorf("sync folder %s: %w", filepath.Dir(m), err)
				os.Remove(pf.final)
				os.Remove(ix.final)
				break
			}
		}
	}
	if err != nil {
		g = nil // commit removed its files
		return fail(err)
	}
	return &Result{Rows: len(rows), Dim: dim, Partitions: 1, Bytes: n, Files: []string{path, path + ".paths"}, Skipped: skipped, Leftovers: left}, nil
}

// createFaissFiles removes what a killed FaissFlat into path left beside
// it (returned) and creates the temporary files of path and its .paths
// file, held (createOut). It does so under the lock of their folder, which
// another FaissFlat takes to look for leftovers: it cannot take these
// files, created but not yet held, for a killed export's. An export still
// writing into path (its files held) makes it fail with ErrBusy.
func createFaissFiles(path string) (left []string, ix, pf *outFile, err error) {
	dir := filepath.Dir(path)
	lock, err := lockFolder(dir)
	if errors.Is(err, flock.ErrHeld) {
		return nil, nil, nil, fmt.Errorf("%s: %w (it holds the lock of %s)", path, ErrBusy, dir)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("write %s: lock its folder: %w", path, err)
	}
	defer lock.Unlock()
	if left, err = faissLeftovers(path); err != nil {
		return nil, nil, nil, err
	}
	if err = removeLeftovers(left); err != nil {
		return nil, nil, nil, err
	}
	if ix, err = createOut(path); err != nil {
		return nil, nil, nil, err
	}
	if pf, err = createOut(path + ".paths"); err != nil {
		ix.discard()
		return nil, nil, nil, err
	}
	return left, ix, pf, nil
}
