package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// meta is what the hub advertises about one file before it is fetched.
type meta struct {
	etag   string // unquoted ETag (sha256 for LFS files, git blob sha1 otherwise)
	sha256 string // lowercase hex when the hub advertises one, else ""
	size   int64  // -1 when unknown
	commit string // X-Repo-Commit
}

// maxRedirects bounds same-host redirects followed by the HEAD request and
// all redirects followed by GET.
const maxRedirects = 10

// head asks the hub about the file without following the redirect to the
// CDN: the hub's own response carries X-Linked-Size and X-Linked-Etag,
// which the CDN's would not. Same-host redirects (a renamed repository) are
// followed.
func (d *downloader) head(ctx context.Context) (meta, error) {
	u := d.url
	for hop := 0; ; hop++ {
		if hop > maxRedirects {
			return meta{}, fmt.Errorf("%s: stopped after %d redirects", d.name(), maxRedirects)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
		if err != nil {
			return meta{}, fmt.Errorf("%s: %w", d.name(), err)
		}
		d.setHeaders(req)
		resp, err := d.noRedirect.Do(req)
		if err != nil {
			return meta{}, retryable{fmt.Errorf("%s: %w", d.name(), err)}
		}
		resp.Body.Close()
		h := resp.Header
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && h.Get("Location") != "":
			loc, err := resp.Location()
			if err != nil {
				return meta{}, fmt.Errorf("%s: bad redirect: %w", d.name(), err)
			}
			linked := h.Get("X-Linked-Size") != "" || h.Get("X-Linked-Etag") != ""
			if !linked && sameHost(loc, req.URL) {
				u = loc.String()
				continue
			}
			// The redirect to the CDN: what the hub says here is the truth.
			m := metaFrom(h)
			if h.Get("X-Linked-Size") == "" {
				m.size = -1 // a redirect's Content-Length is that of its own body
			}
			return m, nil
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return metaFrom(h), nil
		default:
			return meta{}, d.statusError(resp)
		}
	}
}

// metaFrom reads the hub's headers: X-Linked-* win over the plain ones.
func metaFrom(h http.Header) meta {
	m := meta{size: -1, commit: h.Get("X-Repo-Commit")}
	m.etag = parseETag(h.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = parseETag(h.Get("ETag"))
	}
	m.sha256 = sha256FromETag(m.etag)
	for _, k := range []string{"X-Linked-Size", "Content-Length"} {
		if v := h.Get(k); v != "" {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
				m.size = n
				break
			}
		}
	}
	return m
}

// parseETag strips a weak prefix and the quotes: `W/"abc"` → "abc".
func parseETag(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}

// sha256FromETag returns e in lowercase when it is 64 hex digits (the hub's
// ETag of an LFS file), else "" (a 40-digit git blob sha1 is not a SHA-256
// of the content).
func sha256FromETag(e string) string { return hexOfLen(e, 64) }

// gitSHA1FromETag returns e in lowercase when it is 40 hex digits: the
// hub's ETag of a file kept in git itself, the SHA-1 of "blob <size>\x00"
// and the content. Else "".
func gitSHA1FromETag(e string) string { return hexOfLen(e, 40) }

// hexOfLen returns e in lowercase when it is n hex digits, else "".
func hexOfLen(e string, n int) string {
	if len(e) != n {
		return ""
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return ""
		}
	}
	return strings.ToLower(e)
}

// parseContentRange parses "bytes a-b/total" (total may be "*", giving -1)
// and the unsatisfied form "bytes */total" (a = b = -1).
func parseContentRange(v string) (first, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		n, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, 0, false
		}
		total = n
	}
	if rng == "*" {
		return -1, -1, total, total >= 0
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first || (total >= 0 && last >= total) {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// statusError turns an unexpected HTTP status into an error naming the
// repository and file; 5xx, 408 and 429 are retryable.
func (d *downloader) statusError(resp *http.Response) error {
	msg := resp.Status
	if m := resp.Header.Get("X-Error-Message"); m != "" {
		msg += " (" + m + ")"
	}
	where := ""
	if resp.Request != nil && resp.Request.URL != nil && !sameHost(resp.Request.URL, d.origin) {
		where = " from " + resp.Request.URL.Host
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("%s: %s%s; the repository is gated, private or missing, or the token lacks access: %w", d.name(), msg, where, ErrUnauthorized)
	case code == http.StatusNotFound:
		return fmt.Errorf("%s: %s%s; check the repository, revision and file name: %w", d.name(), msg, where, ErrNotFound)
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		return retryable{fmt.Errorf("%s: %s%s", d.name(), msg, where)}
	default:
		return fmt.Errorf("%s: unexpected %s%s", d.name(), msg, where)
	}
}

// retryable marks an error after which the same request may succeed.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

func isRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r)
}

// sameHost compares scheme-less host:port, case-insensitively.
func sameHost(a, b *url.URL) bool { return strings.EqualFold(a.Host, b.Host) }
