// Package lifecycle holds no code: its test lives a photo library's life.
// A seeded, randomised sequence of operations (photos and videos added,
// imported twice, changed, copied, renamed and deleted; a folder moved;
// builds of a root, of a folder under it, of a hidden folder indexed as a
// root of its own, or of every indexed folder together (as `clipidx
// build` without a folder); a disk that goes away and
// comes back; a link whose target goes; decoders that learn a format;
// ffmpeg uninstalled and installed again; a build killed with SIGKILL or
// stopped; merge; forget; compact) is applied to a temporary tree and its index,
// with one `serve` open all the while and searched while each build runs,
// and after every step the index and the server are compared with what
// should be. TestLifecycleWatch lives the file changes, and the watched
// root's disk going away and coming back, under a watcher
// (internal/watch) instead of explicit builds. See lifecycle_test.go and
// watch_test.go.
package lifecycle
