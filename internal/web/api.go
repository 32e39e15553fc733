package web

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

// Result is one file of an answer of the API.
type Result struct {
	ID    string  `json:"id"`
	Path  string  `json:"path"`
	Score float32 `json:"score"`
	Thumb string  `json:"thumb"` // URL of the thumbnail
	Image string  `json:"image"` // URL of the original
	// Offline is the folder, kept while its disk is away, that holds the
	// result ("" when its disk was there at the last build): its
	// thumbnail and image are not served until the disk is back.
	Offline string `json:"offline,omitempty"`
	// Video is, for a video's frame, the URL of the video (Range requests
	// served) and Time the frame's time in seconds.
	Video string   `json:"video,omitempty"`
	Time  *float64 `json:"time,omitempty"`
	// Live is, for a Live Photo's still, the URL of its movie (the
	// seconds around the photo, which the index leaves out); for a Motion
	// Photo (Motion set), the URL of the video inside it.
	Live   string `json:"live,omitempty"`
	Motion bool   `json:"motion,omitempty"`
	// MotionUnread: the index has not looked whether this photo carries a
	// video (a record an older clipidx wrote, until a build looks at its
	// folder): the page asks /live/ID.
	MotionUnread bool `json:"motion_unread,omitempty"`
	// PathBytes is the path's bytes (base64 in JSON) when they are not
	// UTF-8, which Path can only show with U+FFFD in their place.
	PathBytes []byte `json:"path_bytes,omitempty"`
	// *PhotoMeta is the date, place and camera (photometa.go), nil when
	// the index holds none.
	*PhotoMeta
}

// Answer is the body of /api/search, /api/similar and /api/search/image.
type Answer struct {
	Query   string   `json:"query"`
	TookMS  float64  `json:"took_ms"`
	Results []Result `json:"results"`
	// Listing is set when the query had qualifiers and no term: the
	// results are listed by date and their scores are 0.
	Listing bool `json:"listing,omitempty"`
}

// Status is the body of /api/status: the fields of `clipidx status --json`
// and what the server knows of the model.
type Status struct {
	Images     int              `json:"images"`
	Failed     int              `json:"failed"`
	LiveVideos int              `json:"live_videos"` // Live Photo movies left out (not in Failed)
	Model      string           `json:"model"`
	Dim        int              `json:"dim"`
	Weights    string           `json:"weights"`
	DBBytes    int64            `json:"db_bytes"`
	Device     string           `json:"device"`
	LastBuild  *store.LastBuild `json:"last_build"`
	// ModelLoaded is whether the server's model is open; ModelError the
	// last failure to open it ("" = none).
	ModelLoaded bool   `json:"model_loaded"`
	ModelError  string `json:"model_error,omitempty"`
	// Build is a build running now, from any process (a watcher's batch),
	// with its progress, as clipidx status --json shows it.
	Build store.BuildState `json:"build"`
}

type apiError struct {
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// goneReason is the errGone err wraps, without what else it holds (a
// path, which an answer never names).
func goneReason(err error) error {
	for _, e := range []error{errRemoved, errChanged, errOutside, errAway, errDenied, errNoFFmpeg} {
		if errors.Is(err, e) {
			return e
		}
	}
	return errGone
}

// fail answers err with the status code it deserves.
func fail(w http.ResponseWriter, err error) {
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		httpError(w, http.StatusBadRequest, bad.msg)
	case errors.Is(err, errGone):
		httpError(w, http.StatusNotFound, goneReason(err).Error())
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "2")
		httpError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client has gone: this answer is for the log only.
		httpError(w, http.StatusServiceUnavailable, "search cancelled: "+err.Error())
	case errors.Is(err, search.ErrIndexChanged), errors.Is(err, store.ErrModelMismatch):
		// The index is for another model than the server's: a conflict
		// between the two, not a failure of the server.
		httpError(w, http.StatusConflict, err.Error())
	case errors.Is(err, store.ErrFault):
		// The index was rewritten in place under the read: the next
		// read sees the new file.
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, store.ErrNoIndex):
		// No index yet (removed, or the first build still running): the
		// server is up, the index is not there yet.
		w.Header().Set("Retry-After", "10")
		httpError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, search.ErrEmptyQuery), errors.Is(err, search.ErrBadWeight), errors.Is(err, search.ErrQualifier), errors.Is(err, preprocess.ErrUnknownFormat),
		errors.Is(err, preprocess.ErrUnsupported), errors.Is(err, preprocess.ErrCorrupt):
		httpError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, preprocess.ErrTooLarge):
		httpError(w, http.StatusRequestEntityTooLarge, err.Error())
	default:
		httpError(w, http.StatusInternalServerError, err.Error())
	}
}

type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }

func badf(format string, a ...any) error { return &badRequest{fmt.Sprintf(format, a...)} }

// options reads k, under, threshold and sort from the URL, and checks a
// query line (q) against the limits wherever it comes.
func (s *Server) options(r *http.Request) (search.Options, error) {
	opts := search.Options{K: 50, Threads: s.o.Threads, Meta: s.o.Meta, Damaged: s.o.Damaged}
	// URL.Query drops what it cannot decode: q=%zz would be an empty query.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return opts, badf("malformed query string: %v", err)
	}
	order, err := search.ParseOrder(q.Get("sort"))
	if err != nil {
		return opts, badf("%v", err)
	}
	opts.Order = order
	if err := checkQuery(q.Get("q")); err != nil {
		return opts, err
	}
	if v := q.Get("k"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > MaxK {
			return opts, badf("k takes a number of results from 1 to %d, not %q", MaxK, v)
		}
		opts.K = k
	}
	for _, v := range q["under"] { // each one, as search --under
		if v == "" {
			continue
		}
		if !filepath.IsAbs(v) {
			return opts, badf("under takes an absolute folder, not %q", v)
		}
		opts.Under = append(opts.Under, filepath.Clean(v))
	}
	if v := q.Get("threshold"); v != "" {
		t, err := strconv.ParseFloat(v, 32)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			return opts, badf("threshold takes a cosine such as 0.25, not %q", v)
		}
		f := float32(t)
		opts.Threshold = &f
	}
	return opts, nil
}

func (s *Server) answer(w http.ResponseWriter, query string, start time.Time, rk ranked) {
	a := Answer{Query: query, Results: make([]Result, 0, len(rk.res)), Listing: rk.listing}
	paths := make([]string, len(rk.res))
	for i, x := range rk.res {
		paths[i] = x.Path
	}
	ids := s.keep(paths)
	for i, x := range rk.res {
		id := ids[i]
		o, _ := store.OfflineFor(rk.offline, x.Path)
		res := Result{ID: id, Path: x.Path, Score: x.Score, Thumb: "/thumb/" + id, Image: "/image/" + id, Offline: o.Dir}
		if !utf8.ValidString(x.Path) {
			res.PathBytes = []byte(x.Path)
		}
		if _, t, ok := store.SplitFrame(x.Path); ok {
			res.Video, res.Time = "/video/"+id, &t
		}
		a.Results = append(a.Results, res)
	}
	if err := s.addPhotoMeta(a.Results); err != nil {
		fail(w, err)
		return
	}
	if err := s.addLive(a.Results); err != nil {
		fail(w, err)
		return
	}
	a.TookMS = float64(time.Since(start).Microseconds()) / 1000
	writeJSON(w, http.StatusOK, a)
}

// SplitQuery turns a line typed in the page's search box into the
// arguments of `clipidx search`: a word starting with + or - (a sign, a
// weight such as +2:, or a negation) starts a new term, and the plain
// words after it belong to that term; words before any such word form one
// text; "double quotes" keep a phrase together as text, words in it that
// start with + or - or look like qualifiers (year:2019) included.
func SplitQuery(line string) []string {
	args, _ := splitQuery(line)
	return args
}

// splitQuery is SplitQuery, and the phrase whose quote is not closed
// ("" when none): a shell would refuse the line, and the page's chips
// could not agree with it.
func splitQuery(line string) (args []string, open string) {
	cur := ""
	flush := func() {
		if strings.TrimSpace(cur) != "" {
			args = append(args, strings.TrimSpace(cur))
		}
		cur = ""
	}
	rs := []rune(line)
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		j := i
		if rs[i] == '"' {
			j = i + 1
			for j < len(rs) && rs[j] != '"' {
				j++
			}
			raw := string(rs[i+1 : min(j, len(rs))])
			if j >= len(rs) {
				open = `"` + raw
			}
			// A phrase in quotes is text, a key:value word in it too.
			word := search.EscapeQualifiers(raw)
			if cur == "" && (strings.HasPrefix(raw, "+") || strings.HasPrefix(raw, "-") || strings.HasPrefix(raw, "@") || strings.HasPrefix(raw, `\`)) {
				word = `\` + word
			}
			cur = strings.TrimSpace(cur + " " + word)
			i = j + 1
			continue
		}
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			if rs[j] == '"' && j > i && rs[j-1] == ':' {
				// A qualifier's quoted value (camera:"pentax k-1") is one word.
				k := j + 1
				for k < len(rs) && rs[k] != '"' {
					k++
				}
				j = min(k, len(rs)-1)
			}
			j++
		}
		word := string(rs[i:j])
		if len(word) > 1 && (word[0] == '+' || word[0] == '-') {
			flush()
			cur = word
		} else {
			cur = strings.TrimSpace(cur + " " + word)
		}
		i = j
	}
	flush()
	return args, open
}

// checkQuery refuses a query line over MaxQueryBytes or MaxTerms (each
// term is a prompt in the model run that holds the only model slot), and
// one with a phrase whose quote is not closed.
func checkQuery(line string) error {
	if len(line) > MaxQueryBytes {
		return badf("the query is %d bytes long: at most %d bytes are taken", len(line), MaxQueryBytes)
	}
	args, open := splitQuery(line)
	if open != "" {
		return badf("the quote in %s is not closed: close it (a phrase in quotes is text)", strconv.Quote(open))
	}
	if n := len(args); n > MaxTerms {
		return badf("the query has %d terms: at most %d terms are taken", n, MaxTerms)
	}
	return nil
}

// parseWebQuery parses a typed line, terms and qualifiers; image terms
// (@file) are refused: they would read files of the server.
func parseWebQuery(line string) (search.Request, error) {
	args := SplitQuery(line)
	if len(args) == 0 {
		return search.Request{}, badf("nothing to search for: type some words")
	}
	req, err := search.ParseRequest(args)
	if err != nil {
		return req, badf("%v", err)
	}
	if search.HasImage(req.Terms) {
		return req, badf("@file terms are not taken from the web: drop or paste an image, or use \"similar images\"")
	}
	return req, nil
}

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	line := r.URL.Query().Get("q")
	opts, err := s.options(r)
	if err != nil {
		fail(w, err)
		return
	}
	req, err := parseWebQuery(line)
	if err != nil {
		fail(w, err)
		return
	}
	opts.Filter = req.Filter
	if len(req.Terms) == 0 {
		if opts.Order == search.ByScore && r.URL.Query().Get("sort") != "" {
			fail(w, badf("sort=score needs words to score by: the qualifiers %q list by date", req.Filter.String()))
			return
		}
		rk, err := s.list(opts)
		if err != nil {
			fail(w, err)
			return
		}
		s.answer(w, line, start, rk)
		return
	}
	// Read, close the index, run the model, then read again to rank: a
	// build's commit never waits for the model.
	p, err := search.NewPlan(req.Terms)
	if err == nil {
		err = s.view(p.Read)
	}
	var v []float32
	if err == nil {
		err = s.withModel(r.Context(), func(ctx context.Context) error {
			// A query typed on the page holds texts only (no @file).
			m, release, err := s.readyModel(ctx, p.Identity, true, false)
			if err != nil {
				return err
			}
			defer release()
			v, err = p.Vector(ctx, func() (search.Encoder, error) { return m, nil })
			return err
		})
	}
	var rk ranked
	if err == nil {
		rk, err = s.rank(p.Identity, v, opts)
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.answer(w, line, start, rk)
}

// ranked is an answer as read from the index: the results and the
// folders kept offline, to mark the results they hold; listing when the
// results are listed by date (qualifiers and no term).
type ranked struct {
	res     []search.Result
	offline []store.Offline
	listing bool
}

// list lists the records opts.Filter keeps, by date, in a read session.
func (s *Server) list(opts search.Options) (ranked, error) {
	rk := ranked{listing: true}
	err := s.view(func(snap *store.Snapshot) error {
		var err error
		if rk.res, err = search.List(snap, opts); err != nil {
			return err
		}
		rk.offline, err = snap.Offline()
		return err
	})
	return rk, err
}

// rank ranks the index for q, made for an index of identity have, in a
// read session of its own.
func (s *Server) rank(have store.Identity, q []float32, opts search.Options) (ranked, error) {
	var rk ranked
	err := s.view(func(snap *store.Snapshot) error {
		var err error
		if rk.res, err = search.Rank(snap, have, q, opts); err != nil {
			return err
		}
		rk.offline, err = snap.Offline()
		return err
	})
	return rk, err
}

// imageFilter reads the qualifiers of a search by image (/api/similar,
// /api/search/image): q holds qualifiers only, as the page's chips write
// them; the image is the query.
func imageFilter(r *http.Request, opts *search.Options) error {
	line := r.URL.Query().Get("q")
	if strings.TrimSpace(line) == "" {
		return nil
	}
	req, err := parseWebQuery(line)
	if err != nil {
		return err
	}
	if len(req.Terms) > 0 {
		return badf("a search by image takes qualifiers (year:, place:, camera:...) in q, not words: %q", line)
	}
	opts.Filter = req.Filter
	return nil
}

// imageQuery names a search by image in an answer, with its qualifiers.
func imageQuery(what string, opts search.Options) string {
	if q := opts.Filter.String(); q != "" {
		return what + " " + q
	}
	return what
}

func (s *Server) apiSimilar(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.URL.Query().Get("id")
	opts, err := s.options(r)
	if err == nil {
		err = imageFilter(r, &opts)
	}
	if err != nil {
		fail(w, err)
		return
	}
	// Only the stored vector is needed: similar images of a file that is
	// away (an unplugged disk) or changed since still work.
	var rk ranked
	err = s.viewID(func(snap *store.Snapshot) error {
		_, rec, err := s.indexed(snap, id)
		if err != nil {
			return err
		}
		v := snap.Vector(rec.Vec)
		if v == nil {
			return errGone
		}
		if !store.IsUnit(v) {
			if opts.Damaged != nil {
				opts.Damaged(snap.Paths(rec.Vec))
			}
			return errDamaged
		}
		if rk.res, err = search.Search(snap, v, opts); err != nil {
			return err
		}
		rk.offline, err = snap.Offline()
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	s.answer(w, imageQuery("similar:"+id, opts), start, rk)
}

// apiSearchImage searches by the image in the request body, held in memory
// only: an image already in the index takes its stored vector.
func (s *Server) apiSearchImage(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	opts, err := s.options(r)
	if err == nil {
		err = imageFilter(r, &opts)
	}
	if err != nil {
		fail(w, err)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxUpload))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the image is over the %d MB limit", MaxUpload>>20))
			return
		}
		httpError(w, http.StatusBadRequest, "read upload: "+err.Error())
		return
	}
	if len(data) == 0 {
		httpError(w, http.StatusBadRequest, "empty upload: send the image as the request body")
		return
	}
	// An image already in the index takes its stored vector; else the
	// model embeds it with the index closed.
	var have store.Identity
	var v []float32
	err = s.view(func(snap *store.Snapshot) error {
		have = snap.Identity()
		_, v = snap.VectorByHash(sha256.Sum256(data))
		if v != nil && !store.IsUnit(v) {
			v = nil // damaged on disk: the model embeds the upload
		}
		return nil
	})
	if err == nil && v == nil {
		err = s.withModel(r.Context(), func(ctx context.Context) error {
			v, err = s.embedUpload(ctx, have, data)
			return err
		})
	}
	var rk ranked
	if err == nil {
		rk, err = s.rank(have, v, opts)
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.answer(w, imageQuery("image upload", opts), start, rk)
}

// embedUpload embeds an uploaded image for an index of identity have. ctx
// is checked between the stages; the decode and the image pass, once
// started, run to their end (neither takes a context).
func (s *Server) embedUpload(ctx context.Context, have store.Identity, data []byte) ([]float32, error) {
	m, release, err := s.readyModel(ctx, have, false, true)
	if err != nil {
		return nil, err
	}
	defer release()
	p, err := m.Processor(have.EXIF)
	if err != nil {
		return nil, err
	}
	px, err := p.Bytes(data, "upload")
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.EncodeImages(px, 1)
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	var st Status
	err := s.view(func(snap *store.Snapshot) error {
		id := snap.Identity()
		stats, err := snap.Stats()
		if err != nil {
			return err
		}
		live, err := s.live.count(snap, stats)
		if err != nil {
			return err
		}
		st = Status{Images: stats.Images, Failed: stats.Failed - live, LiveVideos: live, Model: id.Model, Dim: id.Dim, Weights: id.Weights,
			DBBytes: stats.Bytes, LastBuild: stats.LastBuild}
		if st.Weights == "" {
			st.Weights = "stored"
		}
		if stats.LastBuild != nil {
			st.Device = stats.LastBuild.Device
		}
		prog, err := snap.Progress()
		st.Build = store.StateOf(s.o.DB, prog)
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	s.mmu.Lock()
	st.ModelLoaded, st.ModelError = s.model != nil, s.modelErr
	s.mmu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// liveCount keeps the number of Live Photo movies of the index state last
// counted for /api/status: store.Snapshot.LiveVideos reads every record
// of an index with failures (seconds at a million records), and the page
// asks for the status every few seconds. One count per state of the index
// (Snapshot.Generation), made by one request while others wait for it.
type liveCount struct {
	mu    sync.Mutex
	gen   string // the Generation counted ("" = none yet)
	n     int
	scans int // counts made
}

// count returns the number of Live Photo movies snap holds, whose Stats
// are st: none without failures (no count needed), else the count of
// snap's state, made once.
func (c *liveCount) count(snap *store.Snapshot, st store.Stats) (int, error) {
	if st.Failed == 0 {
		return 0, nil
	}
	gen := snap.Generation()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		return c.n, nil
	}
	c.scans++
	n, err := snap.LiveVideos(st)
	if err != nil {
		return 0, err
	}
	c.gen, c.n = gen, n
	return n, nil
}
