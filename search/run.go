package search

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"

	"github.com/clipidx/clipidx/store"
)

// Encoder embeds the terms of a query for one index; the model face
// (clipnpu.Model) with an identity made from its description implements it.
type Encoder interface {
	// Prepare is called once, before any term is embedded, with the kinds
	// of term that still need the model (text, image) and the index's EXIF
	// setting, which later image files are embedded with. It loads what
	// those need; ctx ends the wait where the model allows.
	Prepare(ctx context.Context, text, image, exif bool) error
	// Identity is what an index would record of the encoder's vectors,
	// with EXIF orientation applied when exif is set.
	Identity(exif bool) store.Identity
	TextEncoder
	ImageEncoder
}

// ErrNoEncoder is returned by Query when a term needs the model and no
// Encoder was given.
var ErrNoEncoder = errors.New("query needs the model but none was given")

// ErrIndexChanged is returned by Rank when the index was rebuilt for
// another model between the reads of one query.
var ErrIndexChanged = errors.New("the index was rebuilt for another model during the search: search again")

// TextPass is how many query texts one text-tower call embeds: a
// cancelled query stops between passes.
const TextPass = 8

// View runs fn in a read session of the index that ends when fn returns,
// releasing the index's lock (store.Reader's View between OpenReader and
// Close).
type View func(fn func(*store.Snapshot) error) error

// Query runs a parsed query in three steps so that no lock on the index is
// held while the model works: a read (the index's identity, and the stored
// vectors of image terms whose content it holds), the model run (Vector,
// only for what remains), and a second read that ranks (Rank). The
// encoder is asked for (model, called at most once) only when a term needs
// it; model may be nil when every term is a stored image. ctx cancels the
// model work between its stages.
//
// With no terms and a filter (opts.Filter), Query lists the records the
// filter keeps by date (List), with no model.
func Query(ctx context.Context, view View, terms []Term, model func() (Encoder, error), opts Options) ([]Result, error) {
	if len(terms) == 0 && opts.Filter.Qualified() {
		var res []Result
		err := view(func(s *store.Snapshot) error {
			var err error
			res, err = List(s, opts)
			return err
		})
		return res, err
	}
	p, err := NewPlan(terms)
	if err != nil {
		return nil, err
	}
	if err := view(p.Read); err != nil {
		return nil, err
	}
	q, err := p.Vector(ctx, model)
	if err != nil {
		return nil, err
	}
	var res []Result
	err = view(func(s *store.Snapshot) error {
		res, err = Rank(s, p.Identity, q, opts)
		return err
	})
	return res, err
}

// Plan is a query between its steps: its terms, the content hash of its
// image files, and what the index holds of them (Read).
type Plan struct {
	terms  []Term
	hashes map[string]store.Hash // image term → content hash
	// Identity is the identity of the index read (zero before Read).
	Identity store.Identity
	stored   map[string][]float32 // image term → its vector in the index
}

// NewPlan reads and hashes the query's image files, before any index is
// open.
func NewPlan(terms []Term) (*Plan, error) {
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	p := &Plan{terms: terms, hashes: map[string]store.Hash{}, stored: map[string][]float32{}}
	for _, t := range terms {
		if t.Image == "" {
			continue
		}
		if fi, err := os.Stat(t.Image); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			// A named pipe would block the read, a device never end it.
			return nil, fmt.Errorf("%s: not a regular file (%v); not read", t.Image, fi.Mode().Type())
		}
		data, err := os.ReadFile(t.Image)
		if err != nil {
			return nil, err
		}
		p.hashes[t.Image] = sha256.Sum256(data)
	}
	return p, nil
}

// Read takes what the query needs from a read session: the index's
// identity and the stored vector of every image term whose content the
// index holds (copies, usable after the session).
func (p *Plan) Read(s *store.Snapshot) error {
	p.Identity = s.Identity()
	for path, h := range p.hashes {
		// A stored vector damaged on disk is not taken: the model
		// embeds the file instead.
		if _, v := s.VectorByHash(h); v != nil && store.IsUnit(v) {
			p.stored[path] = v
		}
	}
	return nil
}

// needs reports which towers the terms not found in the index need.
func (p *Plan) needs() (text, image bool) {
	for _, t := range p.terms {
		text = text || t.Image == ""
		image = image || (t.Image != "" && p.stored[t.Image] == nil)
	}
	return text, image
}

// Vector turns the terms into the query vector (Embed) with no index
// open: stored vectors first, the model (prepared and checked against the
// index's identity by Ready) for the rest. ctx is checked before the model
// opens, after it loads, between text passes and before each image file;
// a pass that has started runs to its end.
func (p *Plan) Vector(ctx context.Context, model func() (Encoder, error)) ([]float32, error) {
	qe := &queryEncoder{ctx: ctx, stored: p.stored}
	if text, image := p.needs(); text || image {
		if model == nil {
			return nil, ErrNoEncoder
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		enc, err := model()
		if err != nil {
			return nil, err
		}
		if err := Ready(ctx, enc, p.Identity, text, image); err != nil {
			return nil, err
		}
		qe.enc = enc
	}
	return Embed(p.terms, p.Identity.Dim, qe, qe)
}

// Ready prepares enc for a query on an index of identity have (the towers
// text and image need) and returns an error wrapping
// store.ErrModelMismatch when enc's vectors cannot be compared with the
// index's: another model, or for images another preprocessing.
func Ready(ctx context.Context, enc Encoder, have store.Identity, text, image bool) error {
	if err := enc.Prepare(ctx, text, image, have.EXIF); err != nil {
		return err
	}
	return have.Compatible(enc.Identity(have.EXIF), !image)
}

// Rank is Search on a snapshot of the index whose identity a query vector
// was made for (have); an index rebuilt for another model since is
// ErrIndexChanged.
func Rank(s *store.Snapshot, have store.Identity, q []float32, opts Options) ([]Result, error) {
	if s.Identity() != have {
		return nil, ErrIndexChanged
	}
	return Search(s, q, opts)
}

// queryEncoder answers image terms from the index's stored vectors first,
// and embeds texts in passes, checking ctx between them.
type queryEncoder struct {
	ctx    context.Context
	stored map[string][]float32
	enc    Encoder
}

func (e *queryEncoder) EncodeTexts(texts []string) ([]float32, error) {
	if e.enc == nil {
		return nil, ErrNoEncoder
	}
	var out []float32
	for lo := 0; lo < len(texts); lo += TextPass {
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
		v, err := e.enc.EncodeTexts(texts[lo:min(lo+TextPass, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

func (e *queryEncoder) EncodeImageFile(path string) ([]float32, error) {
	if v := e.stored[path]; v != nil {
		return v, nil
	}
	if e.enc == nil {
		return nil, fmt.Errorf("image %s: %w", path, ErrNoEncoder)
	}
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	return e.enc.EncodeImageFile(path)
}
