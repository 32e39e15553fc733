package index

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/clipidx/clipidx/store"
)

// TextEncoder embeds captions (Options.Captions): [len(texts), D].
type TextEncoder interface {
	EncodeTexts(texts []string) ([]float32, error)
}

// shardEnd is the last job of a shard: how many samples it had and why
// it stopped early (nil when read to the end).
type shardEnd struct {
	count int
	err   error
}

// shardState is a shard to stream: its stat, and how far the recording
// of its samples has come.
type shardState struct {
	found
	recorded int // samples recorded so far
	expected int // samples in the shard, -1 until its end is known
	failed   bool
	// retry is set when a sample failed for a reason not its own: the
	// shard's stat is not recorded, so the next build reads it again.
	retry bool
}

// tarState is the part of the builder that handles webdataset shards.
type tarState struct {
	tars    []*shardState
	byPath  map[string]*shardState
	old     map[string]*store.File // records of the samples of the shards to stream, read-only during run
	seen    map[string]bool        // sample paths read in this build
	kept    []string               // shards read with an error: all their records stay
	textQ   []textItem             // captions waiting for the text encoder
	captErr error
}

type textItem struct {
	path   string
	sample store.Sample
}

// selectShare keeps this machine's share (Options.Shard of Options.Shards)
// of the walked files, by a stable hash of their path relative to their
// root, and of the tar shards, by their position in sorted order (as
// clip-retrieval assigns item i to partition i mod N).
func selectShare(wk *walker, roots []string, shard, shards int) {
	if shards <= 1 {
		return
	}
	kept := wk.files[:0]
	for _, f := range wk.files {
		if pathShare(f.path, roots, shards) == shard {
			kept = append(kept, f)
		} else {
			wk.unsee(f.path) // another machine's: not this index's
		}
	}
	wk.files = kept
	for r := range wk.old.all() {
		if r.flags&recSame != 0 && pathShare(wk.old.path(r), roots, shards) != shard {
			wk.unseeRecord(r)
		}
	}
	var tars []found
	for i, t := range wk.tars {
		if i%shards == shard {
			tars = append(tars, t)
		}
	}
	wk.tars = tars
}

// pathShare is the share (of shards) of a file under roots: a stable hash
// of its path from its root's name down.
func pathShare(path string, roots []string, shards int) int {
	rel := path
	for _, r := range roots {
		if store.Under(path, r) {
			if x, err := filepath.Rel(r, path); err == nil {
				rel = filepath.Join(filepath.Base(r), x)
			}
			break
		}
	}
	return fileShard(rel, shards)
}

// ErrOtherShares is returned by a split build (Options.Shards > 1) of an
// index that holds records outside its share under the roots it builds:
// the build would remove them as gone.
var ErrOtherShares = errors.New("the index holds records of other shares")

// checkShare refuses a split build when old (the records under roots)
// holds records that selectShare would not give this share: a file whose
// path hashes to another share (on disk or not), or a sample of a tar
// shard that this walk found at another share's position. A sample of a
// tar shard that the walk did not find (gone, or unreachable) has no
// position: it is left to the build's rules for those. It runs before
// selectShare, on every tar shard walked.
func checkShare(db string, old *oldRecords, wk *walker, roots []string, shard, shards int) error {
	if shards <= 1 {
		return nil
	}
	tarShare := make(map[string]int, len(wk.tars))
	for i, t := range wk.tars {
		tarShare[t.path] = i % shards
	}
	n := 0
	for r := range old.all() {
		p := old.path(r)
		if v, _, isFrame := store.SplitFrame(p); isFrame {
			p = v // a video's frames go with their video
		}
		s, ok := sampleShare(p, tarShare)
		if !ok {
			s = pathShare(p, roots, shards)
		}
		if s >= 0 && s != shard {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: %d records under the folders and shards given lie outside share %d/%d "+
		"(other machines' files, or a build without --shard), and a build of share %d would remove them as gone. "+
		"Build each share into its own index (clipidx --db part-I.db build --shard I/%d ...) and join them with `clipidx merge`, "+
		"build this index without --shard, or drop those records with `clipidx forget`",
		db, ErrOtherShares, n, shard, shards, shard, shards)
}

// sampleShare is the share of a tar shard's record (the shard's own or a
// sample's, SHARD.tar#KEY) from its shard's position in tarShare; -1 when
// its shard was not walked. ok is false for a record of no tar shard.
func sampleShare(p string, tarShare map[string]int) (share int, ok bool) {
	if s, found := tarShare[p]; found {
		return s, true
	}
	for i := range len(p) {
		if p[i] != SampleSep[0] || !IsShardName(p[:i]) {
			continue
		}
		if s, found := tarShare[p[:i]]; found {
			return s, true
		}
		return -1, true
	}
	return 0, false
}

// planShards decides which tar shards to read: a shard whose size, mtime
// and ctime equal those recorded when it was last read completely is
// skipped (its records count as unchanged), unless it holds a failed
// sample to retry (see retryRule); the others are streamed. The ctime
// tells two shards of one size and mtime (tar pads to 10 KiB; sync tools
// keep mtimes) swapped or copied over each other. A shard recorded
// without one (by an older clipidx) takes its ctime without being read.
func (b *builder) planShards(wk *walker) error {
	t := &b.tar
	t.byPath, t.old, t.seen = map[string]*shardState{}, map[string]*store.File{}, map[string]bool{}
	if len(wk.tars) == 0 {
		return nil
	}
	unchanged := map[string]int{} // shard path → times walked
	stamps := map[string]store.ShardStat{}
	err := b.w.View(func(s *store.Snapshot) error {
		for _, f := range wk.tars {
			st, ok := s.Shard(f.path)
			if ok && shardUnchanged(st, f) {
				unchanged[f.path]++
				if st.CtimeNs == 0 && f.ctimeNs != 0 {
					st.CtimeNs = f.ctimeNs
					stamps[f.path] = st
				}
				continue
			}
			ss := &shardState{found: f, expected: -1}
			t.tars = append(t.tars, ss)
			t.byPath[f.path] = ss
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(unchanged) > 0 {
		b.retryShards(wk, unchanged)
		if err := b.stampShards(stamps, unchanged); err != nil {
			return err
		}
		b.keepUnchangedSamples(unchanged)
	}
	return b.readSampleRecords()
}

// keepUnchangedSamples counts the records of an unchanged shard's samples
// (SHARD.tar#KEY) as unchanged, and marks them kept (recShardKept): one
// pass over the old records, trying each separator in a path as the end
// of a shard's path (a folder or a key may hold the separator too).
func (b *builder) keepUnchangedSamples(unchanged map[string]int) {
	for r := range b.old.all() {
		if !strings.Contains(b.old.dirs[r.dir].path, SampleSep) && !strings.Contains(r.name, SampleSep) {
			continue
		}
		p := b.old.path(r)
		for j := range len(p) {
			if p[j] != SampleSep[0] {
				continue
			}
			if n := unchanged[p[:j]]; n > 0 {
				r.flags |= recShardKept
				b.sum.Unchanged += n
			}
		}
	}
}

// readSampleRecords reads the whole records of the samples of the shards
// to stream (those under the build's scope), which classify compares by
// content hash: a shard's samples are many, and those of a shard found
// unchanged are only counted.
func (b *builder) readSampleRecords() error {
	t := &b.tar
	if len(t.tars) == 0 {
		return nil
	}
	return b.w.View(func(s *store.Snapshot) error {
		for _, ss := range t.tars {
			err := s.FilesPrefix(ss.path+SampleSep, func(p string, f store.File) error {
				if b.old.find(p) != nil {
					c := f
					t.old[p] = &c
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// shardUnchanged reports whether a shard whose stat rec was recorded when
// it was last read completely is unchanged (store.ShardStat.Same).
func shardUnchanged(rec store.ShardStat, f found) bool {
	return rec.Same(store.ShardStat{Size: f.size, MtimeNs: f.mtimeNs, CtimeNs: f.ctimeNs})
}

// stampShards records the ctime of the shards, among those still
// unchanged, whose record has none, in a commit of its own (a stopped
// build leaves them to the next one).
func (b *builder) stampShards(stamps map[string]store.ShardStat, unchanged map[string]int) error {
	var batch store.Batch
	for p, st := range stamps {
		if unchanged[p] > 0 {
			batch.PutShard(p, st)
		}
	}
	if batch.Len() == 0 || b.ctx.Err() != nil {
		return nil
	}
	if err := b.w.Commit(&batch); err != nil {
		return fmt.Errorf("commit to %s: %w", b.w.Path(), err)
	}
	return nil
}

// retryShards moves from unchanged to the shards to stream every shard
// holding a failed sample that this build retries (in walk order): its
// other samples are only read and hashed again.
func (b *builder) retryShards(wk *walker, unchanged map[string]int) {
	rule := b.retry()
	again := map[string]bool{}
	for p, f := range b.old.full { // a failure is kept whole
		if !f.Failed() || !rule.retries(*f) {
			continue
		}
		for i := range len(p) {
			if p[i] == SampleSep[0] && unchanged[p[:i]] > 0 {
				again[p[:i]] = true
			}
		}
	}
	for _, f := range wk.tars {
		if again[f.path] && b.tar.byPath[f.path] == nil {
			delete(unchanged, f.path)
			ss := &shardState{found: f, expected: -1}
			b.tar.tars = append(b.tar.tars, ss)
			b.tar.byPath[f.path] = ss
		}
	}
}

// feedShards streams the shards to be read into jobc, one job a sample
// and a last one with the shard's end, each after taking a token (see run).
func (b *builder) feedShards(ctx context.Context, seq int, tokens chan struct{}, jobc chan<- job) {
	send := func(j job) error {
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case jobc <- j:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, ss := range b.tar.tars {
		n := 0
		err := readShard(ctx, ss.path, b.opts.MaxFileBytes, func(s tarSample) error {
			p := samplePath(ss.path, s.key)
			dated := s.mtimeNs
			if dated == 0 { // a member without a time: the shard's, as a file's
				dated = ss.mtimeNs
			}
			j := job{seq: seq, found: found{path: p, size: int64(len(s.image)), mtimeNs: ss.mtimeNs}, old: b.tar.old[p],
				tar: &tarJob{shard: ss.path, data: s.image, mtimeNs: dated, err: s.err}}
			if s.caption != nil || s.json != nil {
				smp := store.Sample{JSON: s.json}
				if s.caption != nil {
					smp.Caption = *s.caption
				}
				j.tar.sample = &smp
			}
			seq++
			n++
			return send(j)
		})
		if ctx.Err() != nil {
			return
		}
		if send(job{seq: seq, found: ss.found, tar: &tarJob{shard: ss.path, end: &shardEnd{count: n, err: err}}}) != nil {
			return
		}
		seq++
	}
}

// tarJob is what a job from a shard carries beyond a file's job.
type tarJob struct {
	shard string
	data  []byte // the image member (nil with err)
	// mtimeNs is the image member's modification time, which dates the
	// sample when its image carries no date (the shard's own time, which
	// the record keeps, changes whenever the shard is written again); the
	// shard's time when the member has none (tarSample.mtimeNs 0), so
	// that such a sample is not dated 1970-01-01.
	mtimeNs int64
	sample  *store.Sample // caption and JSON, or nil
	err     error         // the sample cannot be indexed
	end     *shardEnd     // set on the shard's last job instead of a sample
}

// recordTar handles a shard's job in record: a shard's end, or the
// bookkeeping of a sample. It returns true when r is no sample (nothing
// else to record).
func (b *builder) recordTar(r result) bool {
	ss := b.tar.byPath[r.tar.shard]
	if r.tar.end != nil {
		ss.expected = r.tar.end.count
		if err := r.tar.end.err; err != nil {
			// The samples read before the damage are recorded; those
			// after it, and what the index held of them, stay.
			ss.failed = true
			b.tar.kept = append(b.tar.kept, ss.path)
			b.tar.seen[ss.path] = true
			if f, ok := b.failure(ss.path, store.File{Size: ss.size, MtimeNs: ss.mtimeNs}, err); ok {
				b.batch.Put(ss.path, f, nil)
				b.pending++
			}
		}
		b.shardDone(ss)
		return true
	}
	b.tar.seen[r.path] = true
	b.total++
	return false
}

// recordSample stores the sample metadata of a recorded sample (after its
// file record in the batch), queueing its caption for the text encoder.
func (b *builder) recordSample(r result) {
	ss := b.tar.byPath[r.tar.shard]
	ss.recorded++
	if r.err != nil && transient(r.err) {
		ss.retry = true
	}
	if r.err == nil && r.tar.sample != nil {
		smp := *r.tar.sample
		if b.opts.Captions && smp.Caption != "" && b.opts.TextEncoder != nil {
			b.tar.textQ = append(b.tar.textQ, textItem{r.path, smp})
		} else {
			b.batch.PutSample(r.path, smp)
		}
	}
	b.shardDone(ss)
}

// shardDone records the shard's stat once every sample of a shard read
// to its end is in the batch: the next build skips it while unchanged.
func (b *builder) shardDone(ss *shardState) {
	if ss.expected >= 0 && ss.recorded == ss.expected && !ss.failed && !ss.retry {
		b.batch.PutShard(ss.path, store.ShardStat{Size: ss.size, MtimeNs: ss.mtimeNs, CtimeNs: ss.ctimeNs})
		ss.expected = -2 // recorded once
	}
}

// flushTexts embeds the queued captions and adds their samples to the
// batch; called before each commit. A failure of the text encoder stops
// the build as a failed image encoder does.
func (b *builder) flushTexts() error {
	q := b.tar.textQ
	if len(q) == 0 {
		return nil
	}
	dim := b.opts.Identity.Dim
	for lo := 0; lo < len(q); lo += b.opts.BatchSize {
		part := q[lo:min(lo+b.opts.BatchSize, len(q))]
		texts := make([]string, len(part))
		for i, it := range part {
			texts[i] = it.sample.Caption
		}
		out, err := b.opts.TextEncoder.EncodeTexts(texts)
		if err == nil && len(out) != len(part)*dim {
			err = fmt.Errorf("text encoder returned %d values for %d captions of dimension %d", len(out), len(part), dim)
		}
		if err != nil {
			return fmt.Errorf("%w: captions: %w", ErrEncoder, err)
		}
		for i, it := range part {
			smp := it.sample
			if v := out[i*dim : (i+1)*dim]; usable(v, dim) {
				smp.Text = append([]float32(nil), v...)
			}
			b.batch.PutSample(it.path, smp)
		}
	}
	b.tar.textQ = q[:0]
	return nil
}

// keepRecord reports whether finish must keep an old record that the walk
// did not see: a sample read in this build or of a shard found unchanged,
// or one of a shard that could not be read to its end.
func (b *builder) keepRecord(p string) bool {
	if b.tar.seen[p] {
		return true
	}
	if r := b.old.find(p); r != nil && r.flags&recShardKept != 0 {
		return true
	}
	for _, s := range b.tar.kept {
		if strings.HasPrefix(p, s+SampleSep) {
			return true
		}
	}
	return false
}

// errNoTextEncoder is returned when Options.Captions is set without a
// TextEncoder.
var errNoTextEncoder = errors.New("index: Options.Captions needs Options.TextEncoder")
