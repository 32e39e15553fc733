package index

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clipidx/clipidx/store"
)

// Webdataset shards. A tar shard root is read as a stream (never
// extracted): the members of one sample are consecutive and share their
// name up to the first dot of the base name (the key), as img2dataset
// writes them: 000010005.jpg, 000010005.txt (caption), 000010005.json.
// Each sample is indexed as SHARD.tar#KEY.

var (
	// ErrNotShard is reported for a tar root that is not a readable tar
	// archive (its samples read before the damage are kept).
	ErrNotShard = errors.New("not a readable tar shard")
	// ErrSample is recorded for a sample that cannot be indexed as it is
	// laid out: no image member, two images, a duplicate key, a member
	// name escaping the shard.
	ErrSample = errors.New("bad webdataset sample")
	// ErrShardSpec is returned for a --shard I/N with N < 1 or I outside
	// [0, N).
	ErrShardSpec = errors.New("invalid shard selection")
)

// SampleSep separates a shard's path from a sample's key in the path the
// index records (SHARD.tar#KEY).
const SampleSep = store.SampleSep

// maxMetaBytes bounds a caption or JSON member (read into memory).
const maxMetaBytes = 16 << 20

// IsShardName reports whether a root names a tar shard (store.IsShardName:
// the store tells a sample's path from a video frame's by the same rule).
func IsShardName(name string) bool { return store.IsShardName(name) }

// ParseShard parses "I/N" (--shard): this machine's share, I in [0, N).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%w: %q: want I/N, e.g. 0/4 for the first of 4 machines", ErrShardSpec, s)
	}
	return i, n, checkShard(i, n)
}

func checkShard(i, n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%w: %d/%d: the count N must be at least 1", ErrShardSpec, i, n)
	case i < 0 || i >= n:
		return fmt.Errorf("%w: %d/%d: the index I must be in [0, %d) (numbered from 0, as SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are)", ErrShardSpec, i, n, n)
	}
	return nil
}

// fileShard is the share (of n) a file belongs to: a stable hash of its
// path relative to its root, so that the same dataset mounted elsewhere
// splits the same way.
func fileShard(rel string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(filepath.ToSlash(rel)))
	return int(h.Sum64() % uint64(n))
}

// ExpandBraces expands the brace patterns of a root: numeric ranges
// {00000..00099} (zero-padded to the width of the bounds as written, as
// img2dataset names shards) and lists {a,b,c}, nested and several per
// pattern. A root without braces is returned as is.
func ExpandBraces(pattern string) ([]string, error) {
	open := strings.IndexByte(pattern, '{')
	if open < 0 {
		if strings.IndexByte(pattern, '}') >= 0 {
			return nil, fmt.Errorf("brace pattern %q: '}' without '{'", pattern)
		}
		return []string{pattern}, nil
	}
	depth, close := 0, -1
	for i := open; i < len(pattern) && close < 0; i++ {
		switch pattern[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				close = i
			}
		}
	}
	if close < 0 {
		return nil, fmt.Errorf("brace pattern %q: '{' without '}'", pattern)
	}
	alts, err := braceAlternatives(pattern[open+1 : close])
	if err != nil {
		return nil, fmt.Errorf("brace pattern %q: %w", pattern, err)
	}
	var out []string
	for _, a := range alts {
		more, err := ExpandBraces(pattern[:open] + a + pattern[close+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
		if len(out) > 1_000_000 {
			return nil, fmt.Errorf("brace pattern %q: more than a million names", pattern)
		}
	}
	return out, nil
}

// braceAlternatives splits the inside of one brace pair: a range a..b or
// a comma list (whose items may hold braces of their own).
func braceAlternatives(in string) ([]string, error) {
	if lo, hi, ok := strings.Cut(in, ".."); ok && !strings.ContainsAny(in, "{},") {
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < 0 {
			return nil, fmt.Errorf("range {%s}: want {FIRST..LAST} with non-negative integers", in)
		}
		if b < a {
			return nil, fmt.Errorf("range {%s}: LAST is below FIRST", in)
		}
		if b-a >= 1_000_000 {
			return nil, fmt.Errorf("range {%s}: more than a million names", in)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' || len(hi) > 1 && hi[0] == '0' {
			width = max(len(lo), len(hi))
		}
		out := make([]string, 0, b-a+1)
		for i := a; i <= b; i++ {
			out = append(out, fmt.Sprintf("%0*d", width, i))
		}
		return out, nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(in); i++ {
		switch {
		case i == len(in) || in[i] == ',' && depth == 0:
			out = append(out, in[start:i])
			start = i + 1
		case in[i] == '{':
			depth++
		case in[i] == '}':
			depth--
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("{%s}: want a range {A..B} or a list {a,b}", in)
	}
	return out, nil
}

// expandRoots expands brace patterns in roots; a root that exists as
// written is taken literally even if it holds braces.
func expandRoots(roots []string) ([]string, error) {
	var out []string
	for _, r := range roots {
		if _, err := os.Lstat(r); err == nil || !strings.ContainsAny(r, "{}") {
			out = append(out, r)
			continue
		}
		more, err := ExpandBraces(r)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// tarSample is one sample read from a shard.
type tarSample struct {
	key     string
	image   []byte // the image member's bytes (nil with err)
	caption *string
	json    []byte
	// mtimeNs is the image member's own modification time (the tar
	// header's), which dates a sample whose image carries no date; 0 when
	// the header gives none: 0, as many writers of reproducible archives
	// put, or a time before it.
	mtimeNs int64
	err     error // the sample cannot be indexed (recorded as its failure)
}

// memberKind classifies a member by its extension (what follows the
// key's dot, lower case).
func memberKind(ext string) string {
	switch {
	case ext == "txt":
		return "caption"
	case ext == "json":
		return "json"
	}
	if _, ok := imageExts["."+ext]; ok {
		return "image"
	}
	return ""
}

// splitMember returns a member's key and extension, or an error when its
// name is absolute or escapes the shard.
func splitMember(name string) (key, ext string, err error) {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return name, "", fmt.Errorf("%w: member name %q escapes the shard", ErrSample, name)
	}
	dir, base := path.Split(clean)
	k, e, _ := strings.Cut(base, ".")
	if k == "" {
		return clean, "", fmt.Errorf("%w: member %q has no key before its first dot", ErrSample, name)
	}
	return dir + k, strings.ToLower(e), nil
}

// readShard streams the tar at path and calls emit for each sample, in
// order. A member over maxBytes, a sample without an image, with two
// images, or whose key came before (not consecutive, or twice) is emitted
// with err set. It returns an error wrapping ErrNotShard when the archive
// itself cannot be read (emit has seen the samples before the damage),
// the context's error when cancelled, or emit's error.
func readShard(ctx context.Context, shard string, maxBytes int64, emit func(tarSample) error) error {
	f, err := os.Open(shard)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReaderSize(f, 1<<20))
	seen := map[string]bool{}
	var cur *tarSample
	var images []string
	var members []string
	flush := func() error {
		if cur == nil {
			return nil
		}
		s := cur
		cur = nil
		switch {
		case s.err != nil:
		case seen[s.key]:
			s.err = fmt.Errorf("%w: duplicate key %q (its members are not consecutive, or the key appears twice)", ErrSample, s.key)
		case len(images) == 0:
			s.err = fmt.Errorf("%w: no image member (members: %s)", ErrSample, strings.Join(members, ", "))
		case len(images) > 1:
			s.err = fmt.Errorf("%w: %d image members (%s)", ErrSample, len(images), strings.Join(images, ", "))
		}
		seen[s.key] = true
		if s.err != nil {
			s.image = nil
		}
		return emit(*s)
	}
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			switch {
			case n == 0:
				return fmt.Errorf("%s: %w: no members", shard, ErrNotShard)
			case !endsWithTrailer(f):
				// archive/tar reports a file cut at a block boundary as
				// its end: the two zero blocks that end every archive
				// tell a complete shard.
				return fmt.Errorf("%s: %w: truncated (no end-of-archive blocks)", shard, ErrNotShard)
			}
			return flush()
		}
		if err != nil {
			// The samples before stay emitted; the one being read is not
			// complete and is left out with the shard's failure.
			return fmt.Errorf("%s: %w: %v", shard, ErrNotShard, err)
		}
		if hdr.Typeflag == tar.TypeDir || hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		key, ext, kerr := splitMember(hdr.Name)
		if cur == nil || key != cur.key {
			if err := flush(); err != nil {
				return err
			}
			cur = &tarSample{key: key}
			images, members = nil, nil
		}
		members = append(members, hdr.Name)
		if kerr != nil {
			cur.err = kerr
			continue
		}
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
			if memberKind(ext) != "" && cur.err == nil {
				cur.err = fmt.Errorf("%w: member %q is not a regular file (type %q)", ErrSample, hdr.Name, hdr.Typeflag)
			}
			continue
		}
		kind := memberKind(ext)
		limit := maxBytes
		if kind != "image" {
			limit = maxMetaBytes
		}
		if kind == "" {
			continue // other members (.cls, .seg.png, ...) are not ours
		}
		if kind == "image" {
			images = append(images, hdr.Name)
		}
		if hdr.Size > limit {
			if cur.err == nil {
				cur.err = fmt.Errorf("%w: member %s: %d MiB, the limit is %d MiB", ErrTooLarge, hdr.Name, hdr.Size>>20, limit>>20)
			}
			continue // tar.Reader skips the rest of the member
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return fmt.Errorf("%s: %w: member %s: %v", shard, ErrNotShard, hdr.Name, err)
		}
		switch kind {
		case "image":
			if len(images) == 1 {
				cur.image = data
				if hdr.ModTime.After(time.Unix(0, 0)) {
					cur.mtimeNs = hdr.ModTime.UnixNano()
				}
			}
		case "caption":
			c := strings.TrimRight(string(data), "\r\n")
			cur.caption = &c
		case "json":
			cur.json = data
		}
	}
}

// samplePath is the path the index records for a sample.
func samplePath(shard, key string) string { return shard + SampleSep + key }

// sortedShards returns the tar roots among roots, sorted.
func sortedShards(roots []string) []string {
	var out []string
	for _, r := range roots {
		if IsShardName(r) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// endsWithTrailer reports whether the file ends with the two zero blocks
// (1024 bytes) that end a tar archive.
func endsWithTrailer(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Size() < 1024 {
		return false
	}
	b := make([]byte, 1024)
	if _, err := f.ReadAt(b, fi.Size()-1024); err != nil {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
