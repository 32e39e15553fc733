// Package damage damages index files as a bad disk would, for the tests
// of what clipidx does then.
package damage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// Vector flips bits in the index file db where the stored vector of
// file lies, as a bad disk sector would: its largest component becomes
// about 1000 times larger, of the same sign, so that the vector scores far
// above 1 against any query near the file's content. The vector's upper
// halves must occur once in the file.
func Vector(t testing.TB, db, file string) {
	t.Helper()
	var hi []byte
	var big int
	var neg bool
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.View(func(s *store.Snapshot) error {
		f, ok, err := s.File(file)
		if err != nil || !ok {
			return fmt.Errorf("no record of %s (%v)", file, err)
		}
		v := s.Vector(f.Vec)
		for i := range v {
			if math.Abs(float64(v[i])) > math.Abs(float64(v[big])) {
				big = i
			}
		}
		neg = v[big] < 0
		h, _, ok := s.VectorHalves(f.Vec)
		if !ok {
			return fmt.Errorf("no vector for %s", file)
		}
		hi = bytes.Clone(h)
		return nil
	})
	if err := errors.Join(err, r.Close()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, hi)
	if at < 0 || bytes.Contains(data[at+1:], hi) {
		t.Fatalf("the vector of %s is not once in %s", file, db)
	}
	// bfloat16 0x4480 is 1024; the low halves keep their bits.
	binary.LittleEndian.PutUint16(data[at+2*big:], 0x4480)
	if neg {
		data[at+2*big+1] |= 0x80
	}
	if err := os.WriteFile(db, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
