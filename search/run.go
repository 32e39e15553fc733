package search

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"

	"github.com/clipidx/clipidx/store"
)

// Encoder embeds the terms of a query for one index; the model face
// (clipnpu.Model) implements it.
type Encoder interface {
	// Prepare is called once, before any term is embedded, with the
	// identity of the index searched and the kinds of term that still need
	// the model (text, image). It loads what those need and returns an
	// error when the encoder's vectors cannot be compared with the index's
	// (another model, or for images another preprocessing).
	Prepare(have store.Identity, text, image bool) error
	TextEncoder
	ImageEncoder
}

// ErrNoEncoder is returned by Query when a term needs the model and no
// Encoder was given.
var ErrNoEncoder = errors.New("query needs the model but none was given")

// Query runs a parsed query against the snapshot in one pass: an image term
// whose content is already in the index takes its stored vector (no model
// run), the encoder is prepared and checked against the index only for what
// remains, the terms are combined (Embed) and the index ranked (Search),
// all inside the read session the snapshot belongs to. The encoder is asked
// for (model, called at most once) only when a term needs it; model may be
// nil when every term is a stored image.
func Query(s *store.Snapshot, terms []Term, model func() (Encoder, error), opts Options) ([]Result, error) {
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	have := s.Identity()
	stored := map[string][]float32{}
	for _, t := range terms {
		if t.Image == "" {
			continue
		}
		data, err := os.ReadFile(t.Image)
		if err != nil {
			return nil, err
		}
		if _, v := s.VectorByHash(sha256.Sum256(data)); v != nil {
			stored[t.Image] = v
		}
	}
	needText, needImage := false, false
	for _, t := range terms {
		needText = needText || t.Image == ""
		needImage = needImage || (t.Image != "" && stored[t.Image] == nil)
	}
	qe := &queryEncoder{stored: stored}
	if needText || needImage {
		if model == nil {
			return nil, ErrNoEncoder
		}
		enc, err := model()
		if err != nil {
			return nil, err
		}
		if err := enc.Prepare(have, needText, needImage); err != nil {
			return nil, err
		}
		qe.enc = enc
	}
	q, err := Embed(terms, have.Dim, qe, qe)
	if err != nil {
		return nil, err
	}
	return Search(s, q, opts)
}

// queryEncoder answers image terms from the index's stored vectors first.
type queryEncoder struct {
	stored map[string][]float32
	enc    Encoder
}

func (e *queryEncoder) EncodeTexts(texts []string) ([]float32, error) {
	if e.enc == nil {
		return nil, ErrNoEncoder
	}
	return e.enc.EncodeTexts(texts)
}

func (e *queryEncoder) EncodeImageFile(path string) ([]float32, error) {
	if v := e.stored[path]; v != nil {
		return v, nil
	}
	if e.enc == nil {
		return nil, fmt.Errorf("image %s: %w", path, ErrNoEncoder)
	}
	return e.enc.EncodeImageFile(path)
}
