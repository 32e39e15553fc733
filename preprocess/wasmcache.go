package preprocess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clipidx/clipidx/internal/flock"
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

// codeLockWait is how long a process waits for another's compile into
// the code cache (about half a second, longer on a loaded machine).
var codeLockWait = 2 * time.Minute

// codeKey names a module's subfolder of the code cache: a checksum of its
// embedded (compressed) WebAssembly.
func codeKey(gz []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(gz)) }

// compileWASM makes a runtime for one embedded decoder and compiles it,
// through the code cache in dir when there is one. Each module's entries
// go in a subfolder named by its codeKey, so that a damaged entry (one
// that does not match its seal, or that wazero fails or panics on) can be
// removed with its folder and the code compiled and kept again; if that
// fails too, the code is compiled without a cache. Subfolders of decoders
// this build does not embed (left by another version) are removed.
func compileWASM(ctx context.Context, code []byte, key string, stoppable bool, dir string) (wazero.Runtime, wazero.CompiledModule, error) {
	if dir != "" {
		pruneCodeCache(dir)
		sub := filepath.Join(dir, key)
		// Another process compiling into sub at the same time would see
		// the files wazero keeps before their seal, take them for damage
		// and remove them: one process at a time checks, compiles and
		// seals. A lock that cannot be had (a read-only cache, a process
		// stuck for minutes) only means going on without it.
		if l, err := flock.Lock(sub+".lock", codeLockWait); err == nil {
			defer l.Unlock()
		}
		for range 2 {
			rt, cm, err := compileSealed(ctx, code, stoppable, sub)
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

// compileSealed compiles through the cache in sub only when every file
// kept there matches the seal beside it, and then seals what the compile
// kept. wazero checks a CRC of the machine code alone: damage to the
// function offsets before it passes the load and then panics in
// InstantiateModule, outside any recover here, or, where an offset stays
// in range, sends calls into the middle of a function, which no recover
// can catch. So wazero reads no kept byte that was not checked first.
// A seal that cannot be written is noted, not an error: the code is
// good, and the next process replaces the unsealed entry.
func compileSealed(ctx context.Context, code []byte, stoppable bool, sub string) (wazero.Runtime, wazero.CompiledModule, error) {
	sums, err := checkCodeSeal(sub)
	if err != nil {
		return nil, nil, err
	}
	rt, cm, err := compileWASMWith(ctx, code, stoppable, sub)
	if err != nil {
		return nil, nil, err
	}
	if err := sealCode(sub, sums); err != nil {
		noteCodeCacheErr(fmt.Errorf("decoder code cache %s: %w", sub, err))
	}
	return rt, cm, nil
}

// compileWASMWith compiles code, through wazero's cache in cacheDir when
// it is not "". A panic in wazero while it does (reading a kept entry it
// cannot make sense of) is returned as an error, so that the entry is
// replaced like any other damaged one and the module's sync.Once is not
// left done with nothing compiled.
func compileWASMWith(ctx context.Context, code []byte, stoppable bool, cacheDir string) (rt wazero.Runtime, cm wazero.CompiledModule, err error) {
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(wasmMemoryPages).WithCloseOnContextDone(stoppable)
	if cacheDir != "" {
		cc, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, nil, err
		}
		rc = rc.WithCompilationCache(cc)
	}
	rt = wazero.NewRuntimeWithConfig(ctx, rc)
	defer func() {
		if p := recover(); p != nil {
			rt.Close(ctx)
			rt, cm, err = nil, nil, fmt.Errorf("compile: wazero panicked: %v", p)
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("embedded decoder: %w", err)
	}
	cm, err = rt.CompileModule(ctx, code)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, err
	}
	return rt, cm, nil
}

// codeSealName is the seal of a module's subfolder of the code cache: the
// SHA-256 of each file wazero keeps below it, one "sum path" line each
// (the path relative to the subfolder, with slashes) after a first line
// that names the format, codeSealMagic.
var sealMu sync.Mutex

const (
	codeSealName  = "checksums"
	codeSealMagic = "clipidx decoder code checksums 1"
)

// checkCodeSeal returns the sums of the files kept in sub when each
// matches the seal, and an error naming the first that does not (or the
// seal's absence: an entry an older clipidx kept, or a process stopped
// between keeping and sealing it). An empty or missing sub is no error.
func checkCodeSeal(sub string) (map[string]string, error) {
	files, err := codeFiles(sub)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil || len(files) == 0 {
		return nil, err
	}
	seal, err := readCodeSeal(filepath.Join(sub, codeSealName))
	if err != nil {
		return nil, err
	}
	sums := make(map[string]string, len(files))
	for _, f := range files {
		want, ok := seal[f]
		if !ok {
			return nil, fmt.Errorf("%s is not in the seal %s", f, codeSealName)
		}
		got, err := fileSum(filepath.Join(sub, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%s is damaged: its SHA-256 is not the one sealed", f)
		}
		sums[f] = got
	}
	return sums, nil
}

// sealCode writes the seal of sub again when the compile kept a file that
// checkCodeSeal did not see (whose sums are known), and leaves it alone
// otherwise, so that a read-only cache that is sound keeps working.
func sealCode(sub string, known map[string]string) error {
	// The fast and the stoppable build of a decoder share sub; a seal
	// listing one must not land after, and so replace, one listing both.
	sealMu.Lock()
	defer sealMu.Unlock()
	files, err := codeFiles(sub)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(codeSealMagic + "\n")
	fresh := false
	for _, f := range files {
		sum, ok := known[f]
		if !ok {
			if sum, err = fileSum(filepath.Join(sub, filepath.FromSlash(f))); err != nil {
				return err
			}
			fresh = true
		}
		fmt.Fprintf(&b, "%s %s\n", sum, f)
	}
	if !fresh {
		return nil
	}
	tmp, err := os.CreateTemp(sub, codeSealName+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(b.String())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(sub, codeSealName))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}

// codeFiles lists, sorted, the files below sub that wazero may load: all
// but the seal and the ".tmp" files a write in progress uses (wazero's
// and sealCode's). Anything there but folders and regular files is an
// error, since wazero would follow it unchecked.
func codeFiles(sub string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(sub, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(sub, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == codeSealName || strings.HasSuffix(rel, ".tmp"):
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		default:
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// readCodeSeal reads a seal written by sealCode: path to hex SHA-256.
func readCodeSeal(name string) (map[string]string, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no seal %s beside the kept code", filepath.Base(name))
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != codeSealMagic {
		return nil, fmt.Errorf("%s is damaged: it does not start with %q", name, codeSealMagic)
	}
	seal := map[string]string{}
	for i, line := range lines[1:] {
		sum, path, ok := strings.Cut(line, " ")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 2*sha256.Size || path == "" {
			return nil, fmt.Errorf("%s is damaged at line %d", name, i+2)
		}
		seal[path] = sum
	}
	return seal, nil
}

// fileSum is the hex SHA-256 of a file's bytes.
func fileSum(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pruneCodeCache removes the subfolders of dir named like a codeKey but
// not the key of a decoder this build embeds, and their lock files.
// Anything else is left alone.
func pruneCodeCache(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	keep := map[string]bool{codeKey(heifWASMgz): true, codeKey(avifWASMgz): true}
	for _, e := range entries {
		n := e.Name()
		key, lock := strings.CutSuffix(n, ".lock") // the lock beside a key's folder
		if e.IsDir() == lock || len(key) != 8 || keep[key] || strings.Trim(key, "0123456789abcdef") != "" {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, n))
	}
}
