package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// SchemaVersion is the layout version written to and required from the meta
// bucket. It changes whenever the layout described in the package doc does.
const SchemaVersion = 1

// ChunkSlots is the number of vectors held by one chunk value.
const ChunkSlots = 256

// Bucket and key names.
var (
	bMeta   = []byte("meta")
	bFiles  = []byte("files")
	bRefs   = []byte("refs")
	bHashes = []byte("hashes")
	bVecs   = []byte("vecs")
	bChunks = []byte("chunks")
	bFree   = []byte("free")
	bGC     = []byte("gc")

	allBuckets = [][]byte{bMeta, bFiles, bRefs, bHashes, bVecs, bChunks, bFree, bGC}

	kSchema    = []byte("schema")
	kIdentity  = []byte("identity")
	kNext      = []byte("next")
	kImages    = []byte("images")
	kFailed    = []byte("failed")
	kVectors   = []byte("vectors") // absent in indexes written before it: see flush
	kLastBuild = []byte("last_build")
)

var (
	// ErrNoIndex is returned when the index file does not exist yet.
	ErrNoIndex = errors.New("no index yet: run clipidx build")
	// ErrSchema is returned when the file was written with another schema
	// version (or is not a clipidx index).
	ErrSchema = errors.New("index schema version mismatch")
	// ErrNewerSchema is the ErrSchema of an index a newer clipidx wrote:
	// this one must not touch it (upgrade, or start over with --reindex,
	// which keeps the file beside it as .newer-TIME).
	ErrNewerSchema = fmt.Errorf("%w: written by a newer clipidx", ErrSchema)
	// ErrNotIndex is the ErrSchema of a file that is no clipidx index:
	// another program's bbolt file, or no bbolt file at all (a --db that
	// names the wrong file). No command writes to it or moves it,
	// --reindex included.
	ErrNotIndex error = notIndexError{}
	// ErrModelMismatch is returned when the index was built with another model,
	// dimension, preprocessing version or EXIF setting than the one in use.
	ErrModelMismatch = errors.New("index was built with a different model or settings")
	// ErrBuildRunning is returned when another build holds the build lock.
	ErrBuildRunning = errors.New("another build is running on this index")
	// ErrNoVector is returned by Commit when a Put without a vector names a
	// content hash the index does not hold.
	ErrNoVector = errors.New("no stored vector for this content")
	// ErrBadVector is returned when a vector has the wrong length, is not
	// finite or has zero norm.
	ErrBadVector = errors.New("invalid vector")
	// ErrCorrupt is returned when the index file or a record in it is
	// damaged.
	ErrCorrupt = errors.New("index damaged: run `clipidx build --reindex DIR...` to start over (the damaged file is kept beside it as .corrupt-TIME)")
)

type notIndexError struct{}

func (notIndexError) Error() string {
	return "not a clipidx index"
}

func (notIndexError) Is(target error) bool { return target == ErrSchema }

// Identity names the model and pipeline the vectors come from. Vectors of
// two identities are mixed only when Compatible says so.
type Identity struct {
	Model       string `json:"model"`
	WeightsHash string `json:"weights_hash,omitempty"`
	// Arch is what of the model's config changes the vectors besides its
	// weights (activations, layer-norm epsilons, head counts, where the
	// text tower pools): compared only when both sides know it, so an
	// index written before it was recorded, or by a bundle, still opens;
	// such an index takes it at its next build.
	Arch string `json:"arch,omitempty"`
	// Weights is how the build that created the index held the weights:
	// "" as stored, or the type float32 weights were rounded to at load
	// ("f16", clipidx --weights f16). A record, never compared (see
	// Compatible); LastBuild says what the latest build used.
	Weights    string `json:"weights,omitempty"`
	Dim        int    `json:"dim"`
	Preprocess string `json:"preprocess"`
	EXIF       bool   `json:"exif"`
}

// Compatible returns nil when vectors computed under want may be stored in
// (or searched against) an index built under have. Text queries pass
// textOnly, which ignores the image preprocessing fields. The model is the
// same when both weights hashes are known and equal, whatever the folder
// names (the same checkpoint as an HF folder and as a bundle); when either
// hash is unknown, the names must match. How the weights are held or the
// arithmetic runs (--weights, --precision) is not the model: vectors of
// one setting agree with another's far inside the gap between any two
// images, so Weights is recorded but never compared.
func (have Identity) Compatible(want Identity, textOnly bool) error {
	var diff []string
	model := false // the model itself differs (not only a setting)
	switch {
	case have.WeightsHash != "" && want.WeightsHash != "":
		if have.WeightsHash != want.WeightsHash {
			diff = append(diff, fmt.Sprintf("model %q with weights %.12s, not %q with %.12s", have.Model, have.WeightsHash, want.Model, want.WeightsHash))
			model = true
		}
	case have.Model != want.Model:
		diff = append(diff, fmt.Sprintf("model %q, not %q", have.Model, want.Model))
		model = true
	}
	if have.Arch != "" && want.Arch != "" && have.Arch != want.Arch {
		diff = append(diff, fmt.Sprintf("model configuration %q, not %q", have.Arch, want.Arch))
		model = true
	}
	if have.Dim != want.Dim {
		diff = append(diff, fmt.Sprintf("dimension %d, not %d", have.Dim, want.Dim))
		model = true
	}
	exif := false
	if !textOnly {
		if have.Preprocess != want.Preprocess {
			diff = append(diff, fmt.Sprintf("preprocessing %q, not %q", have.Preprocess, want.Preprocess))
		}
		if have.EXIF != want.EXIF {
			diff = append(diff, fmt.Sprintf("EXIF orientation %v, not %v", have.EXIF, want.EXIF))
			exif = true
		}
	}
	if len(diff) == 0 {
		return nil
	}
	hint := "rebuild it with `clipidx build --reindex DIR...`"
	switch {
	case model:
		hint += " or pass the matching --model"
	case exif && len(diff) == 1:
		hint = fmt.Sprintf("pass --exif=%v to match it, or rebuild it with `clipidx build --reindex --exif=%v DIR...`", have.EXIF, want.EXIF)
	}
	return fmt.Errorf("%w: the index has %s; %s", ErrModelMismatch, joinComma(diff), hint)
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// Hash is the SHA-256 of a file's bytes.
type Hash [32]byte

// VecID names a stored vector; 0 means none. Vector id n lives in slot
// (n-1) % ChunkSlots of chunk (n-1) / ChunkSlots.
type VecID uint64

// File is what the index knows about one file.
type File struct {
	Size    int64
	MtimeNs int64
	Hash    Hash   // zero when the file could not be read
	Vec     VecID  // 0 for a failed file
	Err     string // failure reason; "" for an indexed file
	// Kind says why a failed file failed (one of the Fail constants; a
	// later clipidx may add kinds). "" for an indexed file and for a
	// failure recorded before kinds were (record version 1): why is then
	// unknown.
	Kind string
	// Reach lists, sorted and comma-separated, the image formats the
	// decoder read when the file failed ("avif,bmp,gif,..."), so that a
	// build that reads more can tell which failures it may now read. ""
	// when not recorded (see Kind).
	Reach string
	// CtimeNs is the file's status change time when the record was
	// written, 0 when not known (a system without one, a webdataset
	// sample, a record an older clipidx wrote). It is kept beside the
	// record (ctime.go), not in it.
	CtimeNs int64
}

// The kinds of failure a record can carry (File.Kind).
const (
	FailFormat   = "format"    // not an image, or a format the decoder did not read
	FailCorrupt  = "corrupt"   // a recognised image that did not decode
	FailTooLarge = "too-large" // over the byte or pixel limit
	FailEmpty    = "empty"     // zero bytes
	FailOther    = "other"     // anything else that is the file's own
)

// KindLiveVideo is the kind of a record that is no failure: the movie of
// a Live Photo, left out because its still is indexed. Its Err reads
// LiveVideoNote followed by the still's file name (in the same folder);
// its Hash is no content hash but a stamp of the still's stat when the two
// were matched (the index package's, to tell when to match them again).
// It has no vector, as a failure has, so that a clipidx from before it
// takes it for a failure of a kind it does not know and leaves it be.
const (
	KindLiveVideo = "live-photo"
	LiveVideoNote = "the movie of a Live Photo whose still is indexed: "
)

// LiveVideo reports whether the record is a Live Photo's movie left out
// (KindLiveVideo), and names its still.
func (f File) LiveVideo() (still string, ok bool) {
	if f.Vec != 0 || f.Kind != KindLiveVideo {
		return "", false
	}
	return strings.CutPrefix(f.Err, LiveVideoNote)
}

// Failed reports whether the file is recorded without a vector: a
// failure, or a Live Photo's movie left out (see LiveVideo).
func (f File) Failed() bool { return f.Vec == 0 }

// Record versions: 2 adds the failure's kind and reach to version 1. A
// record with neither (every indexed file) is still written as version 1,
// which every clipidx reads.
const (
	recV1 = 1
	recV2 = 2
)

// recFixed is the length of the fields every version starts with:
// version, size, mtime, hash, vector id.
const recFixed = 1 + 8 + 8 + 32 + 8

func encodeFile(f File) []byte {
	b := make([]byte, 0, recFixed+3*binary.MaxVarintLen64+len(f.Err)+len(f.Kind)+len(f.Reach))
	v := byte(recV1)
	if f.Kind != "" || f.Reach != "" {
		v = recV2
	}
	b = append(b, v)
	b = binary.BigEndian.AppendUint64(b, uint64(f.Size))
	b = binary.BigEndian.AppendUint64(b, uint64(f.MtimeNs))
	b = append(b, f.Hash[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(f.Vec))
	b = appendString(b, f.Err)
	if v == recV2 {
		b = appendString(b, f.Kind)
		b = appendString(b, f.Reach)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeFile reads a record of either version; a version 1 record has no
// Kind or Reach.
func decodeFile(b []byte) (File, error) {
	var f File
	if len(b) < recFixed+1 || (b[0] != recV1 && b[0] != recV2) {
		return f, ErrCorrupt
	}
	f.Size = int64(binary.BigEndian.Uint64(b[1:]))
	f.MtimeNs = int64(binary.BigEndian.Uint64(b[9:]))
	copy(f.Hash[:], b[17:49])
	f.Vec = VecID(binary.BigEndian.Uint64(b[49:]))
	rest := b[recFixed:]
	fields := []*string{&f.Err}
	if b[0] == recV2 {
		fields = append(fields, &f.Kind, &f.Reach)
	}
	for _, s := range fields {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return File{}, ErrCorrupt
		}
		*s, rest = string(rest[k:k+int(n)]), rest[k+int(n):]
	}
	if len(rest) != 0 {
		return File{}, ErrCorrupt
	}
	return f, nil
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func refKey(id VecID, path string) []byte {
	return append(u64(uint64(id)), path...)
}

func chunkKey(c uint32) []byte { return binary.BigEndian.AppendUint32(nil, c) }

// chunkSize is the byte length of one chunk value for dimension dim.
func chunkSize(dim int) int { return ChunkSlots/8 + 2*ChunkSlots*dim*2 }

// Split divides a float32 into its upper 16 bits rounded half up (a
// bfloat16 approximation within 2⁻⁸ relative) and its lower 16 bits, such
// that Join(Split(x)) == x bit for bit for every finite x.
func Split(x float32) (hi, lo uint16) {
	b := math.Float32bits(x)
	hi = uint16(b >> 16)
	lo = uint16(b)
	if lo >= 0x8000 {
		hi++ // one more unit in magnitude, for either sign
	}
	return hi, lo
}

// Join reverses Split.
func Join(hi, lo uint16) float32 {
	t := hi - lo>>15
	return math.Float32frombits(uint32(t)<<16 | uint32(lo))
}

// LastBuild records the end of a build in the meta bucket.
type LastBuild struct {
	Time  string   `json:"time"` // RFC 3339, UTC
	Roots []string `json:"roots,omitempty"`
	// Within lists the paths a partial build was limited to (a watcher
	// builds what changed); empty for a build of the whole roots.
	Within   []string        `json:"within,omitempty"`
	Complete bool            `json:"complete"`
	Summary  json.RawMessage `json:"summary,omitempty"`
	// Device ran the model ("cpu", "npu", ...; "" when no build recorded
	// it), DeviceNote says more (e.g. firmware).
	Device     string `json:"device,omitempty"`
	DeviceNote string `json:"device_note,omitempty"`
	// Weights and Precision say how the last build held the weights ("f16"
	// when rounded at load, "" as stored) and ran its products ("f32",
	// "bf16"; "" when not recorded or not the CPU).
	Weights   string `json:"weights,omitempty"`
	Precision string `json:"precision,omitempty"`
}
