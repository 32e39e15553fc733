package store

import "encoding/binary"

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
