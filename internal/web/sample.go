package web

import (
	"archive/tar"
	"io"
	"os"
	"path"
	"strings"
)

// A webdataset sample (SHARD.tar#KEY) is served from its shard, never
// extracted: the members of one sample are consecutive and share their
// key, the member's name up to the first dot of its base name, as the
// index reads them (index.readShard).

// sampleMembers reads the headers of the tar shard f from its start and
// returns the members of the sample key whose size is size, where the
// indexed image member can be. Only headers are read: the tar reader
// seeks over every member's data, and the data of those returned starts
// where the file stands once its header is read. The search stops at the
// end of the key's run of members (a later run of the same key is a
// duplicate the index refused).
func sampleMembers(f *os.File, key string, size int64) ([]source, error) {
	tr := tar.NewReader(f) // f itself, not a buffer: its offset is the data's
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
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return out, err
		}
		out = append(out, source{name: hdr.Name, sec: io.NewSectionReader(f, off, size)})
	}
}

// memberKey is the sample key of a member's name: its folder and its base
// name up to the first dot, as index.splitMember reads it.
func memberKey(name string) string {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	dir, base := path.Split(clean)
	k, _, _ := strings.Cut(base, ".")
	return dir + k
}
