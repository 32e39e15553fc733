package store

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCheckFindsCorruption damages a sound index in one way at a time and
// expects Check to name the problem.
func TestCheckFindsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"file points at a missing vector", func(tx *bolt.Tx) error {
			return tx.Bucket(bFiles).Put([]byte("/p/x"), encodeFile(File{Hash: hashOf("?"), Vec: 99}))
		}, "vector 99 missing"},
		{"ref removed", func(tx *bolt.Tx) error {
			return tx.Bucket(bRefs).Delete(refKey(1, "/p/a"))
		}, "ref to vector 1 missing"},
		{"dangling ref", func(tx *bolt.Tx) error {
			return tx.Bucket(bRefs).Put(refKey(1, "/p/gone"), nil)
		}, "no such file"},
		{"hash entry removed", func(tx *bolt.Tx) error {
			h := hashOf("A")
			return tx.Bucket(bHashes).Delete(h[:])
		}, "hashes entry missing"},
		{"counter off", func(tx *bolt.Tx) error {
			return tx.Bucket(bMeta).Put(kImages, u64(7))
		}, "images counter 7"},
		{"slot cleared under a live vector", func(tx *bolt.Tx) error {
			v := append([]byte(nil), tx.Bucket(bChunks).Get(chunkKey(0))...)
			v[0] &^= 1
			return tx.Bucket(bChunks).Put(chunkKey(0), v)
		}, "chunk slot not live"},
		{"vector not unit", func(tx *bolt.Tx) error {
			v := append([]byte(nil), tx.Bucket(bChunks).Get(chunkKey(0))...)
			v[ChunkSlots/8+1] ^= 0x40 // an exponent bit of component 0
			return tx.Bucket(bChunks).Put(chunkKey(0), v)
		}, "norm²"},
		{"orphan vector", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bRefs).Delete(refKey(2, "/p/b")); err != nil {
				return err
			}
			return tx.Bucket(bFiles).Delete([]byte("/p/b"))
		}, "orphan"},
		{"queued while used", func(tx *bolt.Tx) error {
			return tx.Bucket(bGC).Put(u64(1), nil)
		}, "queued for GC but used"},
		{"vectors counter off", func(tx *bolt.Tx) error {
			return tx.Bucket(bMeta).Put(kVectors, u64(7))
		}, "vectors counter 7"},
		{"failed file without reason", func(tx *bolt.Tx) error {
			return tx.Bucket(bFiles).Put([]byte("/p/f"), encodeFile(File{}))
		}, "no failure reason"},
		{"indexed file with a failure kind", func(tx *bolt.Tx) error {
			f, err := decodeFile(tx.Bucket(bFiles).Get([]byte("/p/a")))
			if err != nil {
				return err
			}
			f.Kind = FailFormat
			return tx.Bucket(bFiles).Put([]byte("/p/a"), encodeFile(f))
		}, "has vector 1 and failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			w := openW(t, path)
			var b Batch
			b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
			b.Put("/p/b", File{Hash: hashOf("B")}, vec(2, 8))
			if err := w.Commit(&b); err != nil {
				t.Fatal(err)
			}
			if err := Check(path); err != nil {
				t.Fatalf("sound index: %v", err)
			}
			if err := w.update(tc.damage); err != nil {
				t.Fatal(err)
			}
			err := Check(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want a problem mentioning %q", err, tc.want)
			}
		})
	}
}

// TestCheckInsideTheWritingTransaction: refs hold nil values, which Get
// cannot tell from a missing key before the transaction commits; Check run
// in the transaction that wrote them must still find them.
func TestCheckInsideTheWritingTransaction(t *testing.T) {
	w := openW(t, filepath.Join(t.TempDir(), "x.db"))
	err := w.update(func(tx *bolt.Tx) error {
		t := newWtx(tx, testID.Dim)
		var b Batch
		b.Put("/p/a", File{Hash: hashOf("A")}, vec(1, 8))
		b.Put("/p/b", File{Hash: hashOf("B")}, vec(2, 8))
		b.Delete("/p/b") // its vector is freed by collect: a free entry
		for _, o := range b.ops {
			if err := t.apply(o); err != nil {
				return err
			}
		}
		if _, err := t.collect(0); err != nil {
			return err
		}
		if err := t.flush(); err != nil {
			return err
		}
		return (&Snapshot{tx: tx, id: testID}).Check(false)
	})
	if err != nil {
		t.Errorf("Check in the writing transaction: %v", err)
	}
}
