// Package web is the server behind `clipidx serve`: a local web page over
// the index (search box, thumbnails, viewer, similar images, image upload)
// and the JSON API the page uses. It opens the index read-only for each
// request, as `clipidx search` does, so a build can run beside it; it never
// serves a path, only opaque ids of indexed files, and it checks a token,
// the Host header, the Origin of POSTs and the Sec-Fetch-Site of every
// request as the README's "clipidx serve" section describes. No request
// holds the index open while the model works: it reads what it needs,
// closes the index, runs the model, then opens the index again to rank.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clipidx/clipidx/preprocess"
	"github.com/clipidx/clipidx/search"
	"github.com/clipidx/clipidx/store"
)

//go:embed static
var static embed.FS

// Model is what the server needs of the model face (clipnpu.Model with
// the index identity made from its Description, as cmd/clipidx gives it):
// the search package's Encoder for text queries, and the image
// preprocessing and tower for uploaded images.
type Model interface {
	search.Encoder
	Processor(exif bool) (*preprocess.Processor, error)
	EncodeImages(pixels []float32, n int) ([]float32, error)
}

// Options configures New. DB and Addr are required.
type Options struct {
	// DB is the index file, opened read-only for each request.
	DB string
	// Addr is the address served (host:port, as the listener reports it);
	// without a token the Host header must name it.
	Addr string
	// Token, when set, is required on every request (cookie, Bearer header
	// or ?token= on the page). New refuses a non-loopback Addr without one.
	// Without it, requests another site makes a browser send are refused
	// (Sec-Fetch-Site).
	Token string
	// OpenModel opens the model on first need; it is called again after a
	// failure (the error is shown on the page) and its model kept after a
	// success. It is also called once more when the model fails an index
	// of an identity it was not opened again for (the index rebuilt for
	// another model, or the model's folder changed, since it was opened):
	// the new model replaces the old, which is closed, when it is an
	// io.Closer, once no model run uses it (unless OpenModel returned it
	// again). nil: only stored-vector queries work.
	OpenModel func() (Model, error)
	// ThumbDir caches thumbnails on disk ("" = made on every request).
	ThumbDir string
	// ThumbCacheBytes caps ThumbDir; the oldest thumbnails go first.
	// 0 = 512 MiB.
	ThumbCacheBytes int64
	// ModelRuns bounds the concurrent model runs (0 = 1); MaxQueue bounds
	// the requests waiting for one (0 = 16), beyond which a request gets
	// 503 with Retry-After.
	ModelRuns, MaxQueue int
	// Threads scanning the index per search (0 = all cores).
	Threads int
	// OpenTimeout bounds the wait for the index's lock (0 = 5 s).
	OpenTimeout time.Duration
	// FrameStill, when set, returns a video's picture at t seconds as an
	// encoded image (PNG or JPEG), for the thumbnails and the viewer of
	// video frames; without it they answer 404 (the video still plays).
	FrameStill func(ctx context.Context, video string, t float64) ([]byte, error)
	// Meta gives the records' metadata in a read session, for the
	// qualifiers of a query (search.Options.Meta); nil = none.
	Meta func(*store.Snapshot) search.Metadata
	// Damaged is told the paths of a stored vector a search left out
	// because it is not a unit vector (search.Options.Damaged); it may be
	// called from many requests at once. nil = not told.
	Damaged func(paths []string)
}

// MaxUpload is the largest image body POST /api/search/image accepts.
const MaxUpload = 32 << 20

// tokenCookie names the cookie that carries the token from the page's URL
// to later requests. Cookies ignore the port, so the name carries it: two
// servers on one host keep their own.
func tokenCookie(port string) string { return "clipidx_token_" + port }

// Query limits: a query is one model run that holds the only model slot,
// so its size is bounded.
const (
	MaxTerms      = 32   // terms of one query
	MaxQueryBytes = 1000 // bytes of the typed line
	MaxK          = 1000 // results of one answer
)

// ErrNeedToken is returned by New for an address beyond loopback without a
// token.
var ErrNeedToken = errors.New("serving beyond loopback needs a token")

// Server serves the page and the API. Its methods are safe for concurrent
// use.
type Server struct {
	o      Options
	hosts  map[string]bool // accepted Host headers when there is no token
	cookie string          // the token cookie's name
	ids    *idMap
	th     *thumbs
	live   liveCount     // Live Photo movies, for /api/status
	gate   chan struct{} // one slot per concurrent model run
	wait   chan struct{} // one slot per queued request

	open     sync.Mutex // held while the model opens
	mmu      sync.Mutex // guards the fields below
	model    *heldModel
	modelErr string
	// reopenedFor is the identity of the index the model was last opened
	// again for (reopen): a model that fails an index of that identity is
	// not opened again for it.
	reopenedFor store.Identity
}

// heldModel is a model the server opened and the number of model runs
// using it: a model replaced by another (reopen) is closed once its last
// run has ended.
type heldModel struct {
	m       Model
	runs    int
	dropped bool
}

// New checks o and returns a Server.
func New(o Options) (*Server, error) {
	if o.DB == "" {
		return nil, errors.New("web: Options.DB is required")
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("web: address %q: %w", o.Addr, err)
	}
	if !Loopback(host) && o.Token == "" {
		return nil, fmt.Errorf("%w: %s is not a loopback address", ErrNeedToken, o.Addr)
	}
	if !cookieSafe(o.Token) {
		return nil, errors.New("the token may hold only printable ASCII characters without spaces, quotes, commas, semicolons or backslashes")
	}
	if o.ModelRuns <= 0 {
		o.ModelRuns = 1
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 16
	}
	if o.ThumbCacheBytes <= 0 {
		o.ThumbCacheBytes = 512 << 20
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = 5 * time.Second
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s := &Server{
		o:      o,
		hosts:  map[string]bool{o.Addr: true},
		cookie: tokenCookie(port),
		ids:    &idMap{key: key},
		gate:   make(chan struct{}, o.ModelRuns),
		wait:   make(chan struct{}, o.MaxQueue),
	}
	names := []string{host}
	if Loopback(host) {
		names = append(names, "localhost", "127.0.0.1", "[::1]")
	}
	for _, h := range names {
		if h == "" {
			continue
		}
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
			h = "[" + h + "]" // an IPv6 address as a Host header writes it
		}
		s.hosts[h+":"+port] = true
		if port == "80" {
			// A browser leaves the default port out of Host.
			s.hosts[h] = true
		}
	}
	if o.ThumbDir != "" {
		// A cache that cannot be opened costs speed only; ThumbCacheErr
		// tells the caller why.
		s.th = thumbsOrNone(o.ThumbDir, o.ThumbCacheBytes)
	}
	return s, nil
}

// cookieSafe reports whether t travels unchanged in a cookie and a Bearer
// header (net/http drops what a cookie value cannot hold).
func cookieSafe(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// Loopback reports whether host (a name or an IP without port) stays on
// this machine.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// NewToken returns a random token for a server reachable from the network.
func NewToken() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HTTPServer returns an http.Server for h with the timeouts a page over a
// local index needs: a slow client cannot hold a connection for long.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // an upload of MaxUpload on a slow link
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// ServeHTTP checks every request (token, Host, Origin, path) and routes it.
// It routes by hand rather than with http.ServeMux, which answers unclean
// paths ("/a/../b", "//x") with a redirect.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	if !s.authorized(w, r) {
		return
	}
	if r.Method == http.MethodPost {
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
			httpError(w, http.StatusForbidden, "cross-origin request refused")
			return
		}
	}
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "..") || strings.Contains(p, "//") || strings.ContainsAny(p, "\\\x00") {
		httpError(w, http.StatusBadRequest, "bad path")
		return
	}
	if p == "/favicon.ico" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	serve, allow := s.route(p)
	switch {
	case serve == nil:
		httpError(w, http.StatusNotFound, "not found")
	case !slices.Contains(strings.Split(allow, ", "), r.Method):
		// The endpoint exists: say which methods it takes (RFC 9110 15.5.6).
		w.Header().Set("Allow", allow)
		httpError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s", p, allow, r.Method))
	default:
		serve(w, r)
	}
}

// route is the handler of the path p and the methods it takes, as an
// Allow header lists them; nil when p is no endpoint.
func (s *Server) route(p string) (h http.HandlerFunc, allow string) {
	const get, post = "GET, HEAD", "POST"
	page := func(name, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.page(w, r, name, ctype) }
	}
	byID := func(prefix string, serve func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { serve(w, r, strings.TrimPrefix(p, prefix)) }
	}
	switch {
	case p == "/":
		return page("static/index.html", "text/html; charset=utf-8"), get
	case p == "/app.js":
		return page("static/app.js", "text/javascript; charset=utf-8"), get
	case p == "/app.css":
		return page("static/app.css", "text/css; charset=utf-8"), get
	case p == "/api/search":
		return s.apiSearch, get
	case p == "/api/similar":
		return s.apiSimilar, get
	case p == "/api/search/image":
		return s.apiSearchImage, post
	case p == "/api/status":
		return s.apiStatus, get
	case strings.HasPrefix(p, "/thumb/"):
		return byID("/thumb/", s.thumb), get
	case strings.HasPrefix(p, "/image/"):
		return byID("/image/", s.image), get
	case strings.HasPrefix(p, "/video/"):
		return byID("/video/", s.video), get // video.go
	case strings.HasPrefix(p, "/live/"):
		return byID("/live/", s.liveVideo), get // video.go
	}
	return nil, ""
}

// authorized checks the token when there is one, else the Host header
// (a page on another site that resolves its name to 127.0.0.1 sends its
// own name: DNS rebinding). Whatever the token, a request that a page of
// another site made the browser send (Sec-Fetch-Site cross-site, or
// same-site: http://localhost:3000 is the same site as this server) is
// refused unless it carries the token; browsers that send no
// Sec-Fetch-Site are left to the Host and Origin checks. On failure it
// answers and returns false.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	valid := s.o.Token != "" && subtle.ConstantTimeCompare([]byte(s.givenToken(r)), []byte(s.o.Token)) == 1
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && !valid {
		httpError(w, http.StatusForbidden, "request from another site refused (Sec-Fetch-Site: "+site+"): open the page from its own address")
		return false
	}
	if s.o.Token == "" {
		if !s.hosts[r.Host] {
			httpError(w, http.StatusForbidden, "unexpected Host header "+r.Host)
			return false
		}
		return true
	}
	if !valid {
		w.Header().Set("WWW-Authenticate", `Bearer realm="clipidx"`)
		httpError(w, http.StatusUnauthorized, "token required: open the URL that `clipidx serve` printed")
		return false
	}
	if r.URL.Path == "/" {
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return true
}

// givenToken is the token a request carries: a Bearer header, else the
// cookie; on the page, ?token= wins.
func (s *Server) givenToken(r *http.Request) string {
	given := ""
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		given = strings.TrimPrefix(a, "Bearer ")
	} else if c, err := r.Cookie(s.cookie); err == nil {
		given = c.Value
	}
	if r.URL.Path == "/" {
		if t := r.URL.Query().Get("token"); t != "" {
			given = t
		}
	}
	return given
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, name, ctype string) {
	b, err := static.ReadFile(name)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// acquire returns the model, opening it on first need, counted as used
// by one more run until release. A status request never waits for a model
// that is loading.
func (s *Server) acquire() (*heldModel, error) {
	s.open.Lock()
	defer s.open.Unlock()
	s.mmu.Lock()
	if h := s.model; h != nil {
		h.runs++
		s.mmu.Unlock()
		return h, nil
	}
	s.mmu.Unlock()
	if s.o.OpenModel == nil {
		return nil, search.ErrNoEncoder
	}
	m, err := s.o.OpenModel()
	s.mmu.Lock()
	defer s.mmu.Unlock()
	if err != nil {
		s.modelErr = err.Error()
		return nil, err
	}
	h := &heldModel{m: m, runs: 1}
	s.model, s.modelErr = h, ""
	return h, nil
}

// release ends a run's use of h, closing h's model when it was replaced
// and this was its last run.
func (s *Server) release(h *heldModel) {
	s.mmu.Lock()
	h.runs--
	last := h.dropped && h.runs == 0
	s.mmu.Unlock()
	if last {
		closeModel(h.m)
	}
}

// closeModel closes m when it holds anything to close.
func closeModel(m Model) {
	if c, ok := m.(io.Closer); ok {
		c.Close()
	}
}

// sameModel reports whether a and b are the one model (OpenModel may
// return the model it returned before); models of a type that cannot be
// compared are taken as different.
func sameModel(a, b Model) (same bool) {
	defer func() { recover() }()
	return a == b
}

// reopen opens the model again in place of h, which failed an index of
// identity have, and returns it counted as used by one more run (the
// caller still releases h). A model another request opened again
// meanwhile is taken as it is.
func (s *Server) reopen(h *heldModel, have store.Identity) (*heldModel, error) {
	s.open.Lock()
	defer s.open.Unlock()
	s.mmu.Lock()
	s.reopenedFor = have
	if cur := s.model; cur != nil && cur != h {
		cur.runs++
		s.mmu.Unlock()
		return cur, nil
	}
	s.mmu.Unlock()
	m, err := s.o.OpenModel()
	s.mmu.Lock()
	defer s.mmu.Unlock()
	if err == nil && sameModel(m, h.m) {
		h.runs++
		s.model = h
		return h, nil
	}
	if s.model == h {
		// h's runs include the caller's: release closes it.
		h.dropped, s.model = true, nil
	}
	if err != nil {
		s.modelErr = err.Error()
		return nil, err
	}
	n := &heldModel{m: m, runs: 1}
	s.model, s.modelErr = n, ""
	return n, nil
}

// readyModel returns the model prepared for a query on an index of
// identity have (search.Ready: the towers text and image need), and the
// release to call once the query is done with it. A model that fails the
// index (it was rebuilt for another model since the model was opened, or
// the model's folder changed since) is opened again, once for an index of
// that identity, and tried again; one that still differs is
// store.ErrModelMismatch (409), which says that the server's own model is
// used.
func (s *Server) readyModel(ctx context.Context, have store.Identity, text, image bool) (Model, func(), error) {
	h, err := s.acquire()
	if err != nil {
		return nil, nil, err
	}
	err = ready(ctx, h.m, have, text, image)
	s.mmu.Lock()
	again := err != nil && ctx.Err() == nil && s.reopenedFor != have
	s.mmu.Unlock()
	if again {
		old := h
		h, err = s.reopen(old, have)
		s.release(old)
		if err != nil {
			return nil, nil, err
		}
		err = ready(ctx, h.m, have, text, image)
	}
	if err != nil {
		s.release(h)
		if errors.Is(err, store.ErrModelMismatch) {
			err = fmt.Errorf("%w (this server searches with the model its --model names, opened again for this index: that model still differs; start `clipidx serve` again with the --model the index was built with)", err)
			s.mmu.Lock()
			s.modelErr = err.Error()
			s.mmu.Unlock()
		}
		return nil, nil, err
	}
	s.mmu.Lock()
	if s.model == h {
		s.modelErr = ""
	}
	s.mmu.Unlock()
	return h.m, func() { s.release(h) }, nil
}

// ready is search.Ready after a check of the model's name and dimension
// against the index's, which loads nothing: a model of another index is
// told without loading a tower.
func ready(ctx context.Context, m Model, have store.Identity, text, image bool) error {
	if err := have.Compatible(m.Identity(have.EXIF), true); err != nil {
		return err
	}
	return search.Ready(ctx, m, have, text, image)
}

// errBusy is returned by enter when the queue for the model is full.
var errBusy = errors.New("busy: too many searches waiting for the model")

// enter takes a model-run slot, waiting in a bounded queue; leave gives it
// back.
func (s *Server) enter(ctx context.Context) error {
	select {
	case s.gate <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.wait <- struct{}{}:
	default:
		return errBusy
	}
	defer func() { <-s.wait }()
	select {
	case s.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) leave() { <-s.gate }

// view opens the index read-only for one request and closes it after, so
// a build never waits for the server between requests.
func (s *Server) view(fn func(*store.Snapshot) error) error {
	rd, err := store.OpenReader(s.o.DB, store.ReaderOptions{Timeout: s.o.OpenTimeout})
	if err != nil {
		return err
	}
	defer rd.Close()
	return rd.View(fn)
}

// withModel runs fn holding a model-run slot, taken after a wait in the
// bounded queue. ctx (the request's) ends the wait; fn checks it between
// its stages, so a client that has gone stops its model work there.
func (s *Server) withModel(ctx context.Context, fn func(context.Context) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn(ctx)
}
