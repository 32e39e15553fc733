package web

import (
	"archive/tar"
	"errors"
	"io"
	"path"
	"strings"
)

// A webdataset sample (SHARD.tar#KEY) is served from its shard, never
// extracted: the members of one sample are consecutive and share their
// key, the member's name up to the first dot of its base name, as the
// index reads them (index.readShard).

// sampleMembers reads the headers of the tar shard f from its start and
// returns the members of the sample key whose size is size, where the
// indexed image member can be. Mostly headers are read: the tar reader
// seeks over the members' data. The search stops at the end of the key's
// run of members (a later run of the same key is a duplicate the index
// refused).
func sampleMembers(f io.ReaderAt, key string, size int64) ([]source, error) {
	r := &seekBuffer{f: f, buf: make([]byte, 8<<10)}
	tr := tar.NewReader(r)
	var out []source
	inRun := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if hdr.Typeflag == tar.TypeDir || hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if memberKey(hdr.Name) != key {
			if inRun {
				return out, nil
			}
			continue
		}
		inRun = true
		if (hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA) || hdr.Size != size {
			continue
		}
		out = append(out, source{name: hdr.Name, sec: io.NewSectionReader(f, r.off, size)})
	}
}

// seekBuffer reads f from off through a small buffer, and seeks by moving
// off: the tar reader reads a header, and the small members after it, in
// one system call, and skips a large member's data without reading it.
// Once a header is read, off is where its member's data starts.
type seekBuffer struct {
	f     io.ReaderAt
	buf   []byte
	start int64 // the file offset of buf[0]
	n     int   // bytes of buf read from the file
	off   int64 // the reader's position in the file
}

func (b *seekBuffer) Read(p []byte) (int, error) {
	if b.off < b.start || b.off >= b.start+int64(b.n) {
		n, err := b.f.ReadAt(b.buf, b.off)
		b.start, b.n = b.off, n
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return 0, err
		}
	}
	k := copy(p, b.buf[b.off-b.start:b.n])
	b.off += int64(k)
	return k, nil
}

// Seek moves the position; the tar reader seeks only from the current one.
func (b *seekBuffer) Seek(offset int64, whence int) (int64, error) {
	if whence != io.SeekCurrent || b.off+offset < 0 {
		return b.off, errors.New("seekBuffer: only forward seeks from the current position")
	}
	b.off += offset
	return b.off, nil
}

// memberKey is the sample key of a member's name: its folder and its base
// name up to the first dot, as index.splitMember reads it.
func memberKey(name string) string {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	dir, base := path.Split(clean)
	k, _, _ := strings.Cut(base, ".")
	return dir + k
}
