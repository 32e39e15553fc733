package preprocess

import (
	"context"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// The HEIC and AVIF decoders are compiled from WebAssembly to machine code
// at their first use in a process: about 0.55 s for libheif and 0.3 s for
// libavif (AMD EPYC Zen 5). With a code cache, wazero keeps that code in a
// folder and later processes load it instead (about 0.05 s), which is what
// a one-shot command on a HEIC pays.

var codeCache struct {
	mu  sync.Mutex
	dir string
	err error
}

// SetCodeCache keeps the decoders' compiled code in dir (created when
// missing) from now on; "" keeps none, the default. Call it before the
// first HEIC or AVIF decode: a decoder already compiled in this process
// keeps the code it has. A folder that cannot be used, or a damaged entry
// in it, never fails a decode: the code is compiled as without a cache,
// and CodeCache reports the problem.
func SetCodeCache(dir string) {
	codeCache.mu.Lock()
	defer codeCache.mu.Unlock()
	codeCache.dir, codeCache.err = dir, nil
}

// CodeCache reports the code cache's folder ("" when none is set), the
// bytes its files take, and the last problem met using it in this process.
func CodeCache() (dir string, size int64, err error) {
	codeCache.mu.Lock()
	dir, err = codeCache.dir, codeCache.err
	codeCache.mu.Unlock()
	if dir == "" {
		return "", 0, err
	}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, werr error) error {
		if werr == nil && d.Type().IsRegular() {
			if fi, ierr := d.Info(); ierr == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return dir, size, err
}

func codeCacheDir() string {
	codeCache.mu.Lock()
	defer codeCache.mu.Unlock()
	return codeCache.dir
}

func noteCodeCacheErr(err error) {
	codeCache.mu.Lock()
	defer codeCache.mu.Unlock()
	codeCache.err = err
}

// codeKey names a module's subfolder of the code cache: a checksum of its
// embedded (compressed) WebAssembly.
func codeKey(gz []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(gz)) }

// compileWASM makes a runtime for one embedded decoder and compiles it,
// through the code cache in dir when there is one. Each module's entries
// go in a subfolder named by its codeKey, so that a damaged entry (wazero
// then fails the compile: a checksum mismatch, a truncated file) can be
// removed with its folder and the code compiled and kept again; if that
// fails too, the code is compiled without a cache. Subfolders of decoders
// this build does not embed (left by another version) are removed.
func compileWASM(ctx context.Context, code []byte, key string, stoppable bool, dir string) (wazero.Runtime, wazero.CompiledModule, error) {
	if dir != "" {
		pruneCodeCache(dir)
		sub := filepath.Join(dir, key)
		for range 2 {
			rt, cm, err := compileWASMWith(ctx, code, stoppable, sub)
			if err == nil {
				return rt, cm, nil
			}
			noteCodeCacheErr(fmt.Errorf("decoder code cache %s: %w", sub, err))
			if os.RemoveAll(sub) != nil {
				break
			}
		}
	}
	return compileWASMWith(ctx, code, stoppable, "")
}

func compileWASMWith(ctx context.Context, code []byte, stoppable bool, cacheDir string) (wazero.Runtime, wazero.CompiledModule, error) {
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(wasmMemoryPages).WithCloseOnContextDone(stoppable)
	if cacheDir != "" {
		cc, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, nil, err
		}
		rc = rc.WithCompilationCache(cc)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("embedded decoder: %w", err)
	}
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, err
	}
	return rt, cm, nil
}

// pruneCodeCache removes the subfolders of dir named like a codeKey but
// not the key of a decoder this build embeds. Anything else is left alone.
func pruneCodeCache(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	keep := map[string]bool{codeKey(heifWASMgz): true, codeKey(avifWASMgz): true}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || len(n) != 8 || keep[n] || strings.Trim(n, "0123456789abcdef") != "" {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, n))
	}
}
