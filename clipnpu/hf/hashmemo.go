package hf

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A start identifies the model folder and then loads it, and each maps
// the file anew: without a memo both sample the weights for their hash,
// page faults all over a multi-gigabyte file (about 80 ms each for
// ViT-H/14 on a warm page cache). The memo keeps the hash of each file this
// process hashed, by path, size, modification time and inode, so the
// second asks only a stat.
type hashKey struct {
	path  string
	size  int64
	mtime time.Time
	ino   uint64
}

var (
	hashMemoMu sync.Mutex
	hashMemo   = map[hashKey]string{}
	// hashRuns counts weightsHash's runs (for tests).
	hashRuns atomic.Int64
)

// memoWeightsHash is weightsHash(h, data) for the file at path, computed
// once per version of the file in this process.
func memoWeightsHash(path string, h *stHeader, data []byte) string {
	fi, err := os.Stat(path)
	if err != nil {
		return weightsHash(h, data)
	}
	k := hashKey{path: path, size: fi.Size(), mtime: fi.ModTime(), ino: fileIno(fi)}
	hashMemoMu.Lock()
	defer hashMemoMu.Unlock()
	if s, ok := hashMemo[k]; ok {
		return s
	}
	s := weightsHash(h, data)
	hashMemo[k] = s
	return s
}
