// Package store owns the on-disk index: a bbolt file holding L2-normalised
// vectors, file records and the model identity. It is the only package that
// imports go.etcd.io/bbolt.
//
// # Layout (schema version 1)
//
//	meta    "schema" u32, "identity" JSON, "next" u64 (next fresh vector id),
//	        "images"/"failed"/"vectors" u64 counters, "last_build" JSON
//	files   absolute path → record: size, mtime (ns), SHA-256 of the bytes,
//	        vector id (0 = none) and the failure reason of a failed file;
//	        record version 2 adds the failure's kind and the formats the
//	        decoder read then (see File); version 1 records stay readable
//	refs    vector id (u64 BE) ‖ path → nothing: which files use a vector
//	hashes  SHA-256 → vector id: content already embedded (reuse, no model)
//	vecs    vector id → SHA-256: the content a vector was computed from
//	chunks  chunk number (u32 BE) → ChunkSlots vectors laid out contiguously
//	free    vector id → nothing: slots freed by garbage collection, reused first
//	gc      vector id → when it was queued (u64 Unix seconds; empty in an
//	        index written before): vectors that lost their last file (slot
//	        no longer live, values kept for reuse); GC frees them
//
// Optional buckets, created by the first write that needs them (an index
// without them is a valid schema-1 index; readers treat them as empty):
//
//	samples    path → Sample of a webdataset sample (sample.go)
//	shards     tar shard path → stat when last read whole (sample.go)
//	photometa  path → Meta: capture time, GPS, camera, pixel size and place
//	           names of an indexed file (meta.go: version byte, flags,
//	           varints, float64 GPS only when present, length-prefixed
//	           texts; flags say whether a Motion Photo was looked for and
//	           found, and whether the file is a Live Photo's still, which
//	           the store keeps from the movie records: see syncLiveMeta,
//	           whose "livestamp" key in the meta bucket is the transaction
//	           that last kept it); the meta bucket's "places" key names the
//	           place table the names came from, its "videometa" key (u64)
//	           the version of the code that read the video frames' metadata
//	ctimes     path → u64: the file's status change time (ns) when its
//	           record was written (ctime.go)
//	metaread   path → u64: the version of the code that read the metadata
//	           of a record dated by its file's time (meta.go)
//	videoread  video path → u64: the version of the code that read its
//	           frames' metadata, while newer than the "videometa" key's
//	           (meta.go); dropped when that key is raised
//	metacol    per chunk, what a filter reads of each vector's files: flags,
//	           capture time, place and camera ids, position (metacol.go);
//	           derived from refs and photometa, kept by every transaction of
//	           a Writer and stamped with it, so that a reader trusts it only
//	           when no other writer has changed the index since
//
// A chunk value is [live bitmap ChunkSlots/8 bytes][hi: ChunkSlots·D u16]
// [lo: ChunkSlots·D u16]. Each float32 component is split into its upper 16
// bits rounded half up (a bfloat16, "hi") and its lower 16 bits ("lo"), so
// the chunk holds every vector exactly (4 bytes a component, as float32) but
// a search scans only the hi half sequentially and re-ranks the few top
// candidates exactly from hi+lo. See Join and the search package.
//
// # Concurrency
//
// bbolt holds an exclusive file lock while a database is open read-write,
// and readers would block for as long as it stays open. A Writer therefore
// opens the file read-write only for the duration of one Commit and closes it
// again; Readers open read-only (a shared lock) with a timeout, so a search
// or status waits at most for one commit, never for a whole build. A separate
// lock file (path + ".lock") keeps two builds from running at once.
//
// # Crash safety
//
// Every Commit is one bbolt transaction (fsynced), so after a crash the file
// holds exactly the batches committed before it. A vector whose last file
// went away is not freed at once but listed in the gc bucket, and freed by
// Writer.GC at the end of a build of every indexed folder (or by
// Writer.GCQueuedBefore once KeepUnused has passed): until then a file seen
// later with that content, in the same build or a later one, can still
// reuse it. Check verifies every invariant.
//
// # Damaged files
//
// bbolt trusts the file it maps: a file cut short faults (SIGBUS) on the
// first read past its end, and a free list of garbage sends writes to
// garbage offsets. Before bbolt opens a file, validateFile reads its meta
// pages, checks the file covers the high-water mark and that the free list
// names pages below it, each once; guard turns bbolt's panics and memory
// faults on the calling goroutine into ErrCorrupt (ErrFault for a fault:
// the file cut or rewritten in place under a reader), and Guard does the
// same for a goroutine a reader starts itself (search's scan workers);
// Check walks the page
// structure from the file with pread before the records. A Writer with
// Reindex moves a file failing any of these aside (path.corrupt-TIME).
package store
