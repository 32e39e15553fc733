// Package hubtest runs an in-process imitation of the Hugging Face hub for
// tests of package hub and of `clipidx model pull`: resolve URLs, LFS files
// redirected to a second server (the "CDN", on another port) with
// X-Linked-Size and X-Linked-Etag, Range requests, a token check, and faults
// injected on demand (a connection cut mid-file, a stall, a corrupt body, a
// server that ignores Range).
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of the imitated repository.
type File struct {
	Data []byte
	// LFS files are answered by the hub with a 302 to the CDN carrying
	// X-Linked-Size and X-Linked-Etag (the SHA-256); other files are served
	// by the hub itself with their git blob sha1 as ETag, as the real hub
	// does.
	LFS bool
}

// Request is one request as a server saw it.
type Request struct {
	Server        string // "hub" or "cdn"
	Method, Path  string
	Range         string
	Authorization string
}

// Server is the imitation. Configure its exported fields before the first
// request; use the methods to inject faults at any time.
type Server struct {
	Hub, CDN *httptest.Server
	Repo     string
	Revision string // served revision; "main" by New
	Commit   string // X-Repo-Commit
	Files    map[string]File
	// Token, when set, makes the hub answer 401 to requests without
	// "Authorization: Bearer <Token>".
	Token string
	// Prefix is a path under which the hub is served, as behind a mirror
	// (HF_ENDPOINT=https://mirror.example/hf); Endpoint includes it.
	Prefix string
	// Renamed maps an old repository id to Repo: the hub answers with a
	// relative 307 redirect, as after a repository rename.
	Renamed map[string]string

	t           testing.TB // told about the fake's own failures
	mu          sync.Mutex
	cuts        map[string][]int64
	stalls      map[string][]int64
	corrupt     map[string]bool
	ignoreRange bool
	log         []Request
}

// New starts the hub and the CDN; both stop when the test ends.
func New(t testing.TB, repo string, files map[string]File) *Server {
	t.Helper()
	s := &Server{
		t:    t,
		Repo: repo, Revision: "main", Commit: strings.Repeat("c0ffee", 6) + "abcd", Files: files,
		cuts: map[string][]int64{}, stalls: map[string][]int64{}, corrupt: map[string]bool{},
	}
	s.CDN = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	s.Hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	t.Cleanup(func() {
		s.Hub.CloseClientConnections()
		s.CDN.CloseClientConnections()
		s.Hub.Close()
		s.CDN.Close()
	})
	return s
}

// Endpoint is the URL to pass as the hub endpoint.
func (s *Server) Endpoint() string { return s.Hub.URL + s.Prefix }

// CutNext makes the next GETs of file drop the connection after sending
// after[i] bytes of the body (one GET per value).
func (s *Server) CutNext(file string, after ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts[file] = append(s.cuts[file], after...)
}

// StallNext makes the next GETs of file send after[i] bytes and then hang
// until the client gives up.
func (s *Server) StallNext(file string, after ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls[file] = append(s.stalls[file], after...)
}

// Corrupt makes every GET of file send its bytes with one byte flipped,
// while the hub keeps advertising the true size and SHA-256.
func (s *Server) Corrupt(file string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt[file] = on
}

// IgnoreRange makes both servers answer 200 with the whole body to Range
// requests.
func (s *Server) IgnoreRange(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreRange = on
}

// Requests returns the requests seen so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ClearRequests forgets the requests seen so far.
func (s *Server) ClearRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

func (s *Server) record(server string, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Server: server, Method: r.Method, Path: r.URL.Path,
		Range: r.Header.Get("Range"), Authorization: r.Header.Get("Authorization")})
}

// SHA256 is the hex SHA-256 of b (the ETag of an LFS file).
func SHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// GitSHA1 is the git blob id of b (the ETag of a non-LFS file).
func GitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Random returns n deterministic pseudo-random bytes.
func Random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hubError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("X-Error-Code", errCode)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, code)
}

// serveHub answers {Prefix}/{repo}/resolve/{revision}/{file}.
func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.record("hub", r)
	p, ok := strings.CutPrefix(r.URL.EscapedPath(), s.Prefix+"/")
	parts := strings.SplitN(p, "/", 5)
	if !ok || len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo := parts[0] + "/" + parts[1]
	rev, err1 := url.PathUnescape(parts[3])
	file, err2 := url.PathUnescape(parts[4])
	if err1 != nil || err2 != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+s.Repo+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		return
	}
	if to, ok := s.Renamed[repo]; ok {
		http.Redirect(w, r, s.Prefix+"/"+to+"/resolve/"+parts[3]+"/"+parts[4], http.StatusTemporaryRedirect)
		return
	}
	if repo != s.Repo {
		// The real hub answers 401, not 404, to anonymous requests for a
		// repository it does not show.
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String()+".")
		return
	}
	if rev != s.Revision && rev != s.Commit {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	f, ok := s.Files[file]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", file+" does not exist on \""+rev+"\"")
		return
	}
	w.Header().Set("X-Repo-Commit", s.Commit)
	if f.LFS {
		sum := SHA256(f.Data)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("ETag", `W/"`+sum+`"`)
		http.Redirect(w, r, s.CDN.URL+"/blobs/"+sum+"?X-Amz-Signature=fake&file="+url.QueryEscape(file), http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+GitSHA1(f.Data)+`"`)
	s.serveBody(w, r, file, f.Data)
}

// serveCDN answers /blobs/{sha256}; its ETag is not the content's SHA-256,
// as with S3-style storage.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	s.record("cdn", r)
	sum, ok := strings.CutPrefix(r.URL.Path, "/blobs/")
	for name, f := range s.Files {
		if ok && f.LFS && SHA256(f.Data) == sum {
			w.Header().Set("ETag", `"cdn-`+sum[:8]+`"`)
			s.serveBody(w, r, name, f.Data)
			return
		}
	}
	http.NotFound(w, r)
}

// serveBody serves data with Range support and the injected faults.
func (s *Server) serveBody(w http.ResponseWriter, r *http.Request, name string, data []byte) {
	s.mu.Lock()
	if s.corrupt[name] && len(data) > 0 {
		data = bytes.Clone(data)
		data[len(data)/2] ^= 0x40
	}
	if s.ignoreRange {
		r.Header.Del("Range")
	}
	cut, stall := int64(-1), int64(-1)
	if r.Method == http.MethodGet {
		if c := s.cuts[name]; len(c) > 0 {
			cut, s.cuts[name] = c[0], c[1:]
		} else if c := s.stalls[name]; len(c) > 0 {
			stall, s.stalls[name] = c[0], c[1:]
		}
	}
	s.mu.Unlock()
	if cut < 0 && stall < 0 {
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
		return
	}
	// A fault: announce the whole (remaining) body, send part of it.
	var from int64
	if v, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes="); ok && strings.HasSuffix(v, "-") {
		var err error
		if from, err = strconv.ParseInt(strings.TrimSuffix(v, "-"), 10, 64); err != nil {
			s.t.Errorf("hubtest: %s: bad Range %q: %v", name, r.Header.Get("Range"), err)
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		from = min(max(from, 0), int64(len(data)))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(data)-1, len(data)))
	}
	rest := data[from:]
	w.Header().Set("Content-Length", strconv.Itoa(len(rest)))
	if from > 0 {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	n := max(cut, stall)
	// The client reads on: a failed write is the fake's fault, not a fault
	// it was asked to inject.
	rc := http.NewResponseController(w)
	if _, err := w.Write(rest[:min(n, int64(len(rest)))]); err != nil {
		s.t.Errorf("hubtest: %s: write the first %d bytes: %v", name, n, err)
		return
	}
	if err := rc.Flush(); err != nil {
		s.t.Errorf("hubtest: %s: flush: %v", name, err)
		return
	}
	if stall >= 0 {
		<-r.Context().Done() // hang until the client gives up
		return
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		s.t.Errorf("hubtest: %s: hijack to cut the connection: %v", name, err)
		return
	}
	if err := conn.Close(); err != nil {
		s.t.Errorf("hubtest: %s: cut the connection: %v", name, err)
	}
}
