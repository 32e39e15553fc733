package store

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
)

// LiveVideos counts the records of Live Photo movies left out (see
// File.LiveVideo). They are among the records Stats counts as Failed;
// only when there are any is the files bucket read, and only the records
// without a vector are decoded.
func (s *Snapshot) LiveVideos(st Stats) (int, error) {
	if st.Failed == 0 {
		return 0, nil
	}
	n := 0
	c := s.tx.Bucket(bFiles).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < recFixed || binary.BigEndian.Uint64(v[recFixed-8:recFixed]) != 0 {
			continue
		}
		f, err := decodeFile(v)
		if err != nil {
			return n, err
		}
		if _, ok := f.LiveVideo(); ok {
			n++
		}
	}
	return n, nil
}

// LiveMovie returns the path of the movie recorded as the Live Photo movie
// of the still at path (a record in its folder whose name is the still's
// but for the extension, in the still's case, lower or upper case, that
// names the still: File.LiveVideo), "" when there is none.
func (s *Snapshot) LiveMovie(still string) (string, error) {
	dir, name := filepath.Split(still)
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if stem == "" {
		return "", nil
	}
	seen := map[string]bool{}
	for _, st := range []string{stem, strings.ToLower(stem), strings.ToUpper(stem)} {
		if seen[st] {
			continue
		}
		seen[st] = true
		c := s.tx.Bucket(bFiles).Cursor()
		p := []byte(dir + st + ".")
		for k, v := c.Seek(p); k != nil && len(k) >= len(p) && string(k[:len(p)]) == string(p); k, v = c.Next() {
			if strings.ContainsAny(string(k[len(p):]), "./"+string(filepath.Separator)) ||
				len(v) < recFixed || binary.BigEndian.Uint64(v[recFixed-8:recFixed]) != 0 {
				continue // not dir/stem.ext, or a record with a vector
			}
			f, err := decodeFile(v)
			if err != nil {
				return "", fmt.Errorf("record of %s: %w", k, err)
			}
			if n, ok := f.LiveVideo(); ok && n == name {
				return string(k), nil
			}
		}
	}
	return "", nil
}
