package export

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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

// Options configures an export; the zero value exports everything as
// float16 in partitions of DefaultRowsPerPartition rows.
type Options struct {
	// Under keeps only the files at or under this absolute path (a
	// folder, a file, or a tar shard, whose samples are SHARD#KEY).
	Under string
	// DType is "f16" ('<f2', clip-retrieval's default; "" too) or "f32"
	// ('<f4'). FaissFlat always writes float32.
	DType string
	// RowsPerPartition is the number of rows of each partition; 0 =
	// DefaultRowsPerPartition.
	RowsPerPartition int
	// Partitions > 0 writes every row as the single partition number
	// Partition of an export of Partitions partitions (one per machine of
	// a split build), numbered with Partitions' digits, into a folder that
	// may hold other partitions of that export.
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
	// TextRows counts the rows with a caption vector; when some rows have
	// one, text_emb files are written and the rows without one are zero.
	TextRows int `json:"text_rows"`
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

// collect lists the indexed files under Options.Under in path order.
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
// dtype and dimension); no existing file is ever overwritten. What a
// killed export left in dir (temporary files, the empty folders it makes)
// does not count: it is removed and listed in Result.Leftovers.
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
	rows, err := collect(s, opts.Under)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNoRows
	}
	dim := s.Dim()
	// One pass over the samples types the JSON columns (the same schema
	// in every partition) and tells whether captions were embedded.
	ms := &metaSchema{fields: map[string]kind{}}
	res := &Result{Rows: len(rows), Dim: dim}
	for _, r := range rows {
		smp, ok, err := s.Sample(r.path)
		if err != nil {
			return nil, err
		}
		if ok {
			ms.observe(smp.JSON)
			if smp.Text != nil {
				res.TextRows++
			}
		}
	}
	ms.build()

	first, count := 0, (len(rows)+rpp-1)/rpp
	if opts.Partitions > 0 {
		first, count, rpp = opts.Partition, opts.Partitions, len(rows)
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
	left, err := checkFolder(dir, digits, descr, dim, opts.Partitions > 0)
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
	if res.TextRows > 0 {
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
	for lo := 0; lo < len(rows); lo += rpp {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		p := first + lo/rpp
		name := fmt.Sprintf("%0*d", digits, p)
		part := rows[lo:min(lo+rpp, len(rows))]
		n, files, err := writePartition(ctx, s, part, dir, name, descr, size, ms, res.TextRows > 0, opts.NoSync, func(k int) {
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

var partName = regexp.MustCompile(`^(img_emb|text_emb|metadata)_([0-9]+)\.(npy|parquet)$`)

// checkFolder refuses an output folder holding anything but what a killed
// export left, which it returns (see leftovers), or, in partition mode,
// partitions of the same export: the same number of digits, dtype and
// dimension. In partition mode a temporary file may be another machine's
// partition being written: it is neither counted nor removed.
func checkFolder(dir string, digits int, descr string, dim int, partitions bool) ([]string, error) {
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
	return nil, checkPartitions(dir, top, digits, descr, dim)
}

// checkPartitions is checkFolder in partition mode.
func checkPartitions(dir string, top []os.DirEntry, digits int, descr string, dim int) error {
	foreign := func(p, why string) error {
		return fmt.Errorf("%s: %w: %s %s, not a partition of this export; export into a new folder", dir, ErrNotEmpty, p, why)
	}
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
			if sub == "img_emb" {
				if err := sameNPY(p, descr, dim); err != nil {
					return foreign(p, err.Error())
				}
			}
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
	open := func(path string) (*outFile, error) {
		o, err := createOut(path)
		if err == nil {
			g = append(g, o)
		}
		return o, err
	}
	img, err := open(filepath.Join(dir, "img_emb", "img_emb_"+name+".npy"))
	if err != nil {
		return 0, nil, err
	}
	meta, err := open(filepath.Join(dir, "metadata", "metadata_"+name+".parquet"))
	if err != nil {
		g.abort()
		return 0, nil, err
	}
	var txt *outFile
	if text {
		if txt, err = open(filepath.Join(dir, "text_emb", "text_emb_"+name+".npy")); err != nil {
			g.abort()
			return 0, nil, err
		}
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
	var names []string
	for _, o := range g {
		names = append(names, o.final)
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
// path + ".paths". Neither file may exist. A file whose path holds a line
// break cannot be a line of the paths file: it is left out of both, and
// listed in Result.Skipped. A line break is any that Python's
// str.splitlines splits at (lineBreaks), since readers of the paths file
// are mostly Python. The temporary files a killed FaissFlat into path left
// beside it are removed and listed in Result.Leftovers. ctx is checked
// every 4096 rows; when it is done, or the export fails, neither file is
// left.
func FaissFlat(ctx context.Context, s *store.Snapshot, path string, opts Options) (*Result, error) {
	all, err := collect(s, opts.Under)
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
	left, err := faissLeftovers(path)
	if err != nil {
		return nil, err
	}
	if err := removeLeftovers(left); err != nil {
		return nil, err
	}
	var g group
	ix, err := createOut(path)
	if err != nil {
		return nil, err
	}
	g = append(g, ix)
	pf, err := createOut(path + ".paths")
	if err != nil {
		g.abort()
		return nil, err
	}
	g = append(g, pf)
	if err := writeFaissHeader(ix, len(rows), dim); err != nil {
		g.abort()
		return nil, err
	}
	vec := make([]float32, dim)
	buf := make([]byte, 0, 4*dim)
	for i, r := range rows {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				g.abort()
				return nil, err
			}
		}
		if !s.VectorInto(r.file.Vec, vec) {
			g.abort()
			return nil, fmt.Errorf("the vector of %s is missing from the index (run clipidx status --check)", r.path)
		}
		ix.Write(encodeRow(buf[:0], vec, 4))
		pf.WriteString(r.path)
		pf.WriteByte('\n')
		if opts.Progress != nil && (i+1)%65536 == 0 {
			opts.Progress(i + 1)
		}
	}
	n, err := g.commit(opts.NoSync)
	if err != nil {
		return nil, err
	}
	return &Result{Rows: len(rows), Dim: dim, Partitions: 1, Bytes: n, Files: []string{path, path + ".paths"}, Skipped: skipped, Leftovers: left}, nil
}
