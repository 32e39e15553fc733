package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/clipidx/clipidx/internal/flock"
)

// downloader fetches one file; it holds the options with defaults filled in.
type downloader struct {
	repo, file, dir string
	opts            Options
	url             string
	origin          *url.URL     // the endpoint: the only host that sees the token
	client          *http.Client // follows redirects, drops the token off-origin
	noRedirect      *http.Client // returns redirects to the caller (HEAD)
}

// freeSpace reports the space available in a folder (tests replace it).
var freeSpace = diskFree

// stallTimer is the part of *time.Timer that stall detection uses.
type stallTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// startStallTimer arms the stall timer of one transfer: f runs once no byte
// has arrived for d. Tests replace it to declare a stall on an event rather
// than after wall-clock time, which a busy machine stretches.
var startStallTimer = func(d time.Duration, f func()) stallTimer { return time.AfterFunc(d, f) }

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
	IdleConnTimeout:       90 * time.Second,
	ForceAttemptHTTP2:     true,
}}

func newDownloader(repo, file, dir string, opts Options) *downloader {
	if opts.Endpoint == "" {
		opts.Endpoint = DefaultEndpoint
	}
	if opts.Revision == "" {
		opts.Revision = "main"
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 6
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 60 * time.Second
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "clipidx-hub"
	}
	d := &downloader{repo: repo, file: file, dir: dir, opts: opts}
	d.url = FileURL(opts.Endpoint, repo, opts.Revision, file)
	d.origin, _ = url.Parse(d.url)
	if d.origin == nil {
		d.origin = &url.URL{}
	}
	base := opts.Client
	if base == nil {
		base = defaultClient
	}
	c := *base
	prev := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		// net/http already drops Authorization when the host name changes,
		// but it ignores the port; the token is for the endpoint alone.
		if !sameHost(req.URL, d.origin) {
			req.Header.Del("Authorization")
		}
		if prev != nil {
			return prev(req, via)
		}
		return nil
	}
	d.client = &c
	nr := *base
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	d.noRedirect = &nr
	return d
}

// name is how errors refer to the file: "owner/repo@rev: file".
func (d *downloader) name() string {
	return fmt.Sprintf("%s@%s: %s", d.repo, d.opts.Revision, d.file)
}

// setHeaders adds the token (only for the endpoint's host), the user agent,
// and asks for the bytes as stored: a transparently gunzipped body would not
// match the advertised size, nor could it be resumed by byte offset.
func (d *downloader) setHeaders(req *http.Request) {
	req.Header.Set("User-Agent", d.opts.UserAgent)
	req.Header.Set("Accept-Encoding", "identity")
	if d.opts.Token != "" && sameHost(req.URL, d.origin) {
		req.Header.Set("Authorization", "Bearer "+d.opts.Token)
	}
}

func (d *downloader) progress(stage Stage, done, total int64) {
	if d.opts.Progress != nil {
		d.opts.Progress(Progress{File: d.file, Stage: stage, Done: done, Total: total})
	}
}

func (d *downloader) run(ctx context.Context) (Result, error) {
	res := Result{File: d.file, Path: target(d.dir, d.file)}
	var m meta
	err := d.retry(ctx, func() (bool, error) {
		res.Attempts++
		var err error
		m, err = d.head(ctx)
		return false, err
	})
	if err != nil {
		return res, err
	}
	res.ETag, res.Commit = m.etag, m.commit
	if err := os.MkdirAll(filepath.Dir(res.Path), 0o755); err != nil {
		return res, fmt.Errorf("%s: %w", d.name(), err)
	}
	lockPath := sidecarPath(d.dir, d.file, false) + ".lock"
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return res, fmt.Errorf("%s: %w", d.name(), err)
	}
	// An interrupted pull never leaves a stale lock (the kernel drops it);
	// where there is no flock two pulls into one folder are not told
	// apart, and a damaged LFS file still fails its SHA-256 check.
	lock, err := flock.TryLock(lockPath)
	if errors.Is(err, flock.ErrHeld) {
		err = ErrBusy
	}
	if err != nil {
		return res, fmt.Errorf("%s: lock %s: %w", d.name(), lockPath, err)
	}
	defer lock.Unlock()
	ok, err := d.present(ctx, m, &res)
	if err != nil || ok {
		return res, err
	}
	return res, d.fetch(ctx, &m, &res)
}

// present reports whether the target already holds this version of the
// file: its sidecar names the advertised ETag and size (with Verify, and
// for a file with a checksum to verify, only once it is hashed again), or
// (no sidecar) its content matches the advertised checksum: the SHA-256
// of an LFS file, the git blob SHA-1 of another.
func (d *downloader) present(ctx context.Context, m meta, res *Result) (bool, error) {
	fi, err := os.Stat(res.Path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", d.name(), err)
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%s: %s is not a regular file", d.name(), res.Path)
	}
	sizeOK := m.size < 0 || m.size == fi.Size()
	sc := readSidecar(sidecarPath(d.dir, d.file, false))
	recorded := sc != nil && m.etag != "" && sc.ETag == m.etag && sc.Size == fi.Size() && sc.ModTime == fi.ModTime().UnixNano() && sizeOK
	h, want := sha256.New(), m.sha256
	if want == "" {
		if want = gitSHA1FromETag(m.etag); want != "" {
			h = sha1.New()
			fmt.Fprintf(h, "blob %d\x00", fi.Size())
		}
	}
	if recorded && !(d.opts.Verify && want != "") {
		res.Size, res.SHA256, res.Skipped = fi.Size(), sc.SHA256, true
		d.progress(StageSkipped, fi.Size(), fi.Size())
		return true, nil
	}
	if want == "" || !sizeOK {
		return false, nil
	}
	f, err := os.Open(res.Path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", d.name(), err)
	}
	defer f.Close()
	if _, err := d.hashPrefix(ctx, h, f, fi.Size()); err != nil {
		return false, fmt.Errorf("%s: read %s: %w", d.name(), res.Path, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != want {
		return false, nil
	}
	res.Size, res.SHA256, res.Skipped = fi.Size(), m.sha256, true
	if err := writeSidecar(sidecarPath(d.dir, d.file, false), d.record(m, m.sha256, fi)); err != nil {
		return false, fmt.Errorf("%s: %w", d.name(), err)
	}
	d.progress(StageSkipped, fi.Size(), fi.Size())
	return true, nil
}

// record describes the verified file fi (nil for a part being filled).
func (d *downloader) record(m meta, sum string, fi os.FileInfo) sidecar {
	s := sidecar{Repo: d.repo, Revision: d.opts.Revision, Commit: m.commit, File: d.file, ETag: m.etag, SHA256: sum, Size: m.size}
	if fi != nil {
		s.Size, s.ModTime = fi.Size(), fi.ModTime().UnixNano()
	}
	return s
}

// hashPrefix feeds the first n bytes of f to h, reporting StageHashing
// (gigabytes take seconds: ctx can stop it).
func (d *downloader) hashPrefix(ctx context.Context, h hash.Hash, f *os.File, n int64) (int64, error) {
	buf := make([]byte, 1<<20)
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		k, err := f.Read(buf[:min(int64(len(buf)), n-done)])
		h.Write(buf[:k])
		done += int64(k)
		d.progress(StageHashing, done, n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// fetch downloads into "<file>.part", resuming a part left for the same
// ETag, verifies it and renames it over the target.
func (d *downloader) fetch(ctx context.Context, m *meta, res *Result) error {
	part := res.Path + ".part"
	partRec := sidecarPath(d.dir, d.file, true)
	var offset int64
	if fi, err := os.Stat(part); err == nil && fi.Mode().IsRegular() {
		if sc := readSidecar(partRec); sc != nil && m.etag != "" && sc.ETag == m.etag && (m.size < 0 || fi.Size() <= m.size) {
			offset = fi.Size()
		}
	}
	if err := writeSidecar(partRec, d.record(*m, "", nil)); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	defer f.Close() // after a successful rename this is a harmless second Close
	w := &partWriter{ctx: ctx, f: f, h: sha256.New(), d: d, total: m.size}
	if offset > 0 {
		if offset, err = d.hashPrefix(ctx, w.h, f, offset); err != nil {
			return fmt.Errorf("%s: read %s: %w", d.name(), part, err)
		}
	}
	if err := f.Truncate(offset); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	w.n, res.Resumed = offset, offset
	if free, ok := freeSpace(d.dir); ok && m.size >= 0 && m.size-offset > free {
		return fmt.Errorf("%s: needs %d more bytes, %d free in %s: %w", d.name(), m.size-offset, free, d.dir, ErrNoSpace)
	}
	d.progress(StageDownloading, w.n, m.size)

	err = d.retry(ctx, func() (bool, error) {
		if m.size >= 0 && w.n == m.size {
			return false, nil // the part was already complete
		}
		res.Attempts++
		before := w.n
		err := d.transfer(ctx, w, m)
		return w.n > before, err
	})
	res.Fetched = w.fetched
	if err != nil {
		if errors.Is(err, ErrChecksum) {
			d.discard(f, part, partRec)
		}
		return err
	}
	sum := hex.EncodeToString(w.h.Sum(nil))
	if m.size >= 0 && w.n != m.size {
		d.discard(f, part, partRec)
		return fmt.Errorf("%s: got %d bytes, the hub advertised %d; deleted %s, run again to retry: %w", d.name(), w.n, m.size, part, ErrChecksum)
	}
	if m.sha256 != "" && sum != m.sha256 {
		d.discard(f, part, partRec)
		return fmt.Errorf("%s: SHA-256 %s, the hub advertised %s; deleted %s, run again to retry: %w", d.name(), sum, m.sha256, part, ErrChecksum)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: sync %s: %w", d.name(), part, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: close %s: %w", d.name(), part, err)
	}
	if err := os.Rename(part, res.Path); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	res.Size = w.n
	if m.sha256 != "" {
		res.SHA256 = sum
	}
	fi, err := os.Stat(res.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	if err := writeSidecar(sidecarPath(d.dir, d.file, false), d.record(*m, res.SHA256, fi)); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	if err := removeIfExists(partRec); err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	d.progress(StageDone, w.n, w.n)
	return nil
}

func (d *downloader) discard(f *os.File, part, partRec string) {
	f.Close()
	os.Remove(part)
	os.Remove(partRec)
}

// retry runs attempt until it succeeds, fails for good, or fails
// Options.Attempts times in a row without progress, sleeping with
// exponential backoff in between. A cancelled ctx ends it at once.
func (d *downloader) retry(ctx context.Context, attempt func() (progressed bool, err error)) error {
	fails := 0
	for {
		progressed, err := attempt()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", d.name(), ctx.Err())
		}
		if !isRetryable(err) {
			return err
		}
		if progressed {
			fails = 0
		}
		fails++
		if fails >= d.opts.Attempts {
			return fmt.Errorf("%w (gave up after %d attempts without progress)", err, fails)
		}
		wait := min(d.opts.Backoff<<(fails-1), 30*time.Second)
		if d.opts.OnRetry != nil {
			d.opts.OnRetry(d.file, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", d.name(), ctx.Err())
		case <-t.C:
		}
	}
}

// transfer makes one GET from the part's current length and appends the
// body. It returns nil when the body ended cleanly; a short body, a dropped
// or stalled connection and 5xx answers are retryable.
func (d *downloader) transfer(parent context.Context, w *partWriter, m *meta) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", d.name(), err)
	}
	d.setHeaders(req)
	if w.n > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", w.n))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return retryable{fmt.Errorf("%s: %w", d.name(), err)}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		first, _, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || first != w.n {
			if err := w.reset(); err != nil {
				return err
			}
			return retryable{fmt.Errorf("%s: unexpected Content-Range %q for offset %d", d.name(), resp.Header.Get("Content-Range"), first)}
		}
		if err := d.checkTotal(m, total); err != nil {
			return err
		}
	case http.StatusOK:
		if w.n > 0 { // the server ignored the Range: start over
			if err := w.reset(); err != nil {
				return err
			}
		}
		if err := d.checkTotal(m, resp.ContentLength); err != nil {
			return err
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if _, _, total, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && total == w.n {
			if m.size < 0 {
				m.size = total
			}
			return nil // the part already holds every byte
		}
		if err := w.reset(); err != nil {
			return err
		}
		return retryable{fmt.Errorf("%s: %s at offset %d", d.name(), resp.Status, w.n)}
	default:
		return d.statusError(resp)
	}
	w.total = m.size

	var stalled atomic.Bool
	timer := startStallTimer(d.opts.StallTimeout, func() { stalled.Store(true); cancel() })
	defer timer.Stop()
	body := &stallReader{r: resp.Body, timer: timer, timeout: d.opts.StallTimeout}
	_, err = io.CopyBuffer(w, body, make([]byte, 64<<10))
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("%s: %w", d.name(), parent.Err())
	case w.err != nil:
		return fmt.Errorf("%s: write %s.part: %w", d.name(), target(d.dir, d.file), w.err)
	case stalled.Load():
		return retryable{fmt.Errorf("%s: no data for %v at byte %d", d.name(), d.opts.StallTimeout, w.n)}
	case err != nil:
		return retryable{fmt.Errorf("%s: connection lost at byte %d: %w", d.name(), w.n, err)}
	case m.size >= 0 && w.n < m.size:
		return retryable{fmt.Errorf("%s: connection closed at byte %d of %d", d.name(), w.n, m.size)}
	case m.size >= 0 && w.n > m.size:
		return fmt.Errorf("%s: got more than the %d bytes the hub advertised: %w", d.name(), m.size, ErrChecksum)
	}
	return nil
}

// checkTotal compares the full size a response implies with the advertised
// one (learning it when the hub did not say).
func (d *downloader) checkTotal(m *meta, total int64) error {
	switch {
	case total < 0:
	case m.size < 0:
		m.size = total
	case total != m.size:
		return fmt.Errorf("%s: the server sends %d bytes, the hub advertised %d: %w", d.name(), total, m.size, ErrChecksum)
	}
	return nil
}

// partWriter appends to the .part file, hashing as it goes.
type partWriter struct {
	ctx     context.Context // stops the copy as soon as the caller cancels
	f       *os.File
	h       hash.Hash
	d       *downloader
	n       int64 // bytes in the part
	fetched int64 // bytes received over the network in this call
	total   int64
	err     error // the first write error (the disk, not the network)
}

func (w *partWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	w.fetched += int64(n)
	if err != nil {
		w.err = err
		return n, err
	}
	w.d.progress(StageDownloading, w.n, w.total)
	return n, nil
}

// reset empties the part (a server that ignored Range, or a bad range).
func (w *partWriter) reset() error {
	if err := w.f.Truncate(0); err != nil {
		return fmt.Errorf("%s: %w", w.d.name(), err)
	}
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", w.d.name(), err)
	}
	w.h.Reset()
	w.n = 0
	return nil
}

// stallReader re-arms the stall timer on every read that returns data.
type stallReader struct {
	r       io.Reader
	timer   stallTimer
	timeout time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.timeout)
	}
	return n, err
}
