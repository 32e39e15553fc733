// Package bundle reads taconite NPU bundles: the directories IRON's exporters
// write and taconite's Rust runtimes replay (Brishen/taconite,
// taconite-bundle). A bundle is
//
//	manifest.txt   one record a line, `<tag> <field>...`; a field k=v is also
//	               looked up by key; blank lines and # lines are skipped
//	tensors.txt    `<name> <dtype> <d0,d1,..> <offset> <bytes>`, one a line
//	tensors.bin    the blob those lines point into (little-endian f32, bf16,
//	               u8, i32), memory-mapped read-only where the system allows
//	kernels/       xclbins and instruction streams (*.insts.bin)
//
// Open checks everything it can without running a kernel: the format
// version, every record's syntax, the tensor index (alignment, bounds, dtype
// sizes against shapes), and that no path the manifest names leaves the
// bundle. Errors say which file and line is wrong.
//
// This package is a leaf: it knows the CLIP records (tok_test, refset,
// ref_image, ref_label, gemm, op) but no model math.
package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Version is the manifest format version this reader understands (CLIP
// bundles write `version 1`).
const Version = 1

// File names inside a bundle.
const (
	ManifestFile = "manifest.txt"
	IndexFile    = "tensors.txt"
	BlobFile     = "tensors.bin"
)

// ErrNotBundle is returned when a directory has no manifest.txt.
var ErrNotBundle = errors.New("bundle: not a taconite bundle (no manifest.txt)")

// ErrBadBundle is returned when a bundle file is malformed or inconsistent;
// the error (an *Error) names the file and line.
var ErrBadBundle = errors.New("bundle: malformed bundle")

// Error describes a malformed bundle file. It matches ErrBadBundle with
// errors.Is.
type Error struct {
	File string // path of the file at fault
	Line int    // 1-based line, 0 when the fault is not on one line
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Is makes errors.Is(err, ErrBadBundle) true.
func (e *Error) Is(target error) bool { return target == ErrBadBundle }

// Bundle is an open bundle. Its tensor data stays mapped until Close; slices
// returned by Tensor.Bytes and Tensor.U8 are read-only views into it.
type Bundle struct {
	Dir     string // the directory as given to Open
	Version int

	m       *manifest
	tensors map[string]entry
	names   []string // tensor names in tensors.txt order
	blob    []byte
	release func() error

	tokTests []TokTest
	refSets  []RefSet
	gemms    []GEMM
	ops      []Op
}

// HasManifest reports whether dir holds bundle records (a manifest.txt).
// The test fixtures carry such records beside Hugging Face weights; see
// IsBundle for whether a folder runs as a bundle.
func HasManifest(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil && st.Mode().IsRegular()
}

// IsBundle reports whether dir is a model that runs as a taconite bundle:
// its three bundle files and no model.safetensors (a folder with both is a
// Hugging Face folder carrying reference records).
func IsBundle(dir string) bool {
	for _, f := range []string{ManifestFile, IndexFile, BlobFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	return errors.Is(err, os.ErrNotExist)
}

// Open reads and validates the bundle in dir.
func Open(dir string) (*Bundle, error) {
	mpath := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(mpath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("open %s: %w", dir, ErrNotBundle)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", mpath, err)
	}
	m, err := parseManifest(mpath, data)
	if err != nil {
		return nil, err
	}
	if !m.versionSet {
		return nil, &Error{File: mpath, Msg: fmt.Sprintf("no version record; this reader needs version %d", Version)}
	}
	if m.version != Version {
		return nil, &Error{File: mpath, Msg: fmt.Sprintf("version %d, this reader reads version %d; re-export the bundle", m.version, Version)}
	}
	b := &Bundle{Dir: dir, Version: m.version, m: m}
	if err := b.parseModelRecords(mpath); err != nil {
		return nil, err
	}
	if err := b.openTensors(); err != nil {
		return nil, err
	}
	if err := b.checkTensorRefs(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close unmaps the tensor data. Tensors taken from the bundle must not be
// used afterwards.
func (b *Bundle) Close() error {
	if b == nil || b.release == nil {
		return nil
	}
	err := b.release()
	b.release, b.blob = nil, nil
	return err
}

// Records returns the model records (every record but version, param and
// xclbin) in file order.
func (b *Bundle) Records() []Record { return b.m.records }

// Tagged returns the model records with the given tag, in file order.
func (b *Bundle) Tagged(tag string) []Record {
	var out []Record
	for _, r := range b.m.records {
		if r.Tag == tag {
			out = append(out, r)
		}
	}
	return out
}

// Param returns a param's value (the rest of its line) and whether it is set.
func (b *Bundle) Param(name string) (string, bool) {
	v, ok := b.m.params[name]
	return v, ok
}

// ParamNames returns the names of every param, in no particular order.
func (b *Bundle) ParamNames() []string {
	out := make([]string, 0, len(b.m.params))
	for k := range b.m.params {
		out = append(out, k)
	}
	return out
}

func (b *Bundle) paramErr(name, msg string) error {
	mpath := filepath.Join(b.Dir, ManifestFile)
	if line, ok := b.m.paramLine[name]; ok {
		return &Error{File: mpath, Line: line, Msg: fmt.Sprintf("param %s: %s", name, msg)}
	}
	return &Error{File: mpath, Msg: fmt.Sprintf("param %s: %s", name, msg)}
}

// ParamInt returns an integer param; a missing or malformed one is an error.
func (b *Bundle) ParamInt(name string) (int, error) {
	v, ok := b.m.params[name]
	if !ok {
		return 0, b.paramErr(name, "missing")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, b.paramErr(name, fmt.Sprintf("%q is not an integer", v))
	}
	return n, nil
}

// ParamFloat returns a float param; a missing or malformed one is an error.
func (b *Bundle) ParamFloat(name string) (float64, error) {
	v, ok := b.m.params[name]
	if !ok {
		return 0, b.paramErr(name, "missing")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, b.paramErr(name, fmt.Sprintf("%q is not a number", v))
	}
	return f, nil
}

// ParamFloats returns a comma-separated float list param (empty items are
// skipped, so "" is an empty list).
func (b *Bundle) ParamFloats(name string) ([]float64, error) {
	v, ok := b.m.params[name]
	if !ok {
		return nil, b.paramErr(name, "missing")
	}
	var out []float64
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, b.paramErr(name, fmt.Sprintf("list item %q is not a number", s))
		}
		out = append(out, f)
	}
	return out, nil
}

// Xclbins returns the hardware contexts in file order.
func (b *Bundle) Xclbins() []Xclbin { return b.m.xclbins }

// Xclbin returns the xclbin record with the given key.
func (b *Bundle) Xclbin(key string) (Xclbin, bool) {
	for _, x := range b.m.xclbins {
		if x.Key == key {
			return x, true
		}
	}
	return Xclbin{}, false
}

// Path resolves a bundle-relative path (as a record names it) to a path on
// disk, after checking that it stays inside the bundle once symbolic links
// are followed. The file must exist.
func (b *Bundle) Path(rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", fmt.Errorf("bundle path %q: %w", rel, err)
	}
	root, err := filepath.EvalSymlinks(b.Dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", b.Dir, err)
	}
	p := filepath.Join(b.Dir, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	r, err := filepath.Rel(root, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", fmt.Errorf("%s: %w", p, errEscape)
	}
	return p, nil
}

var errEscape = errors.New("path leaves the bundle through a symbolic link")

// checkRel checks a record's path lexically: relative, and no ".." that
// climbs out of the bundle.
func checkRel(rel string) error {
	if rel == "" {
		return errors.New("empty path")
	}
	if strings.ContainsRune(rel, 0) {
		return errors.New("path holds a NUL byte")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.VolumeName(rel) != "" {
		return errors.New("absolute path; bundle paths are relative to the bundle")
	}
	c := filepath.Clean(filepath.FromSlash(rel))
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return errors.New("path leaves the bundle (..)")
	}
	if c == "." {
		return errors.New("path names the bundle itself")
	}
	return nil
}
