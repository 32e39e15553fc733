package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrossSiteRefused: without a token, a request another site made the
// browser send is refused (403, naming Sec-Fetch-Site), whatever the path;
// the page's own requests and typed addresses are served. With a token,
// a cross-site request is served only when it carries it.
func TestCrossSiteRefused(t *testing.T) {
	e := newEnv(t, nil)
	for _, site := range []string{"cross-site", "same-site"} {
		for _, path := range []string{"/", "/api/status", "/api/search?q=cat", "/thumb/AAAAAAAAAAAAAAAA"} {
			code, body, _ := e.get(t, path, "Sec-Fetch-Site", site)
			if code != http.StatusForbidden || !contains(body, "Sec-Fetch-Site: "+site) {
				t.Errorf("%s with Sec-Fetch-Site %s: %d %s, want 403 naming it", path, site, code, body)
			}
		}
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/search/image", bytes.NewReader(newJPEG(t)))
		req.Header.Set("Sec-Fetch-Site", site)
		if code, body, _ := do(t, req); code != http.StatusForbidden {
			t.Errorf("upload with Sec-Fetch-Site %s: %d %s, want 403", site, code, body)
		}
	}
	for _, site := range []string{"same-origin", "none", ""} {
		if code, body, _ := e.get(t, "/api/search?q=cat", "Sec-Fetch-Site", site); code != 200 {
			t.Errorf("search with Sec-Fetch-Site %q and no token on loopback: %d %s, want 200", site, code, body)
		}
	}

	e = newEnv(t, func(o *Options) { o.Token = "s3cret" })
	cookie := "clipidx_token_" + e.port() + "=s3cret"
	for _, tc := range []struct {
		hdr  []string
		want int
	}{
		{[]string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{[]string{"Sec-Fetch-Site", "cross-site", "Cookie", "clipidx_token_1=s3cret"}, http.StatusForbidden}, // another port's cookie
		{[]string{"Sec-Fetch-Site", "cross-site", "Authorization", "Bearer wrong"}, http.StatusForbidden},
		{[]string{"Sec-Fetch-Site", "cross-site", "Authorization", "Bearer s3cret"}, 200},
		{[]string{"Sec-Fetch-Site", "cross-site", "Cookie", cookie}, 200},
		{[]string{"Sec-Fetch-Site", "same-origin", "Cookie", cookie}, 200},
	} {
		if code, body, _ := e.get(t, "/api/status", tc.hdr...); code != tc.want {
			t.Errorf("token server, %q: %d %s, want %d", tc.hdr, code, body, tc.want)
		}
	}
	if code, _, _ := e.get(t, "/?token=s3cret", "Sec-Fetch-Site", "cross-site"); code != 200 {
		t.Errorf("a link with the token from another site: %d, want 200", code)
	}
}

// TestQueryLimits: a query takes at most MaxTerms terms and MaxQueryBytes
// bytes, k at most MaxK, on every endpoint that reads them; the refusal is
// a 400 naming the limit.
func TestQueryLimits(t *testing.T) {
	e := newEnv(t, nil)
	terms := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = "+t"
		}
		return url.QueryEscape(strings.Join(w, " "))
	}
	long := url.QueryEscape(strings.Repeat("a", MaxQueryBytes+1))
	for _, tc := range []struct {
		query, want string
	}{
		{"q=" + terms(MaxTerms+1), "at most 32 terms"},
		{"q=" + long, "at most 1000 bytes"},
		{"q=cat&k=1001", "from 1 to 1000"},
	} {
		for _, path := range []string{"/api/search?", "/api/similar?id=" + e.idOf2(t) + "&"} {
			code, body, _ := e.get(t, path+tc.query)
			if code != http.StatusBadRequest || !contains(body, tc.want) {
				t.Errorf("%s%.60s: %d %s, want 400 with %q", path, tc.query, code, body, tc.want)
			}
		}
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/search/image?"+tc.query, bytes.NewReader(newJPEG(t)))
		if code, body, _ := do(t, req); code != http.StatusBadRequest || !contains(body, tc.want) {
			t.Errorf("upload ?%.60s: %d %s, want 400 with %q", tc.query, code, body, tc.want)
		}
	}
	// At the limits the query runs.
	for _, q := range []string{"q=" + terms(MaxTerms) + "&k=1000", "q=" + url.QueryEscape(strings.Repeat("a", MaxQueryBytes))} {
		if code, body, _ := e.get(t, "/api/search?"+q); code != 200 {
			t.Errorf("/api/search?%.60s: %d %s, want 200", q, code, body)
		}
	}
}

// TestHostWithoutPortOnPort80: a browser leaves port 80 out of Host, so a
// server on port 80 takes the bare name; on another port it does not.
func TestHostWithoutPortOnPort80(t *testing.T) {
	for _, tc := range []struct {
		addr, host string
		want       int
	}{
		{"127.0.0.1:80", "localhost", http.StatusNoContent},
		{"127.0.0.1:80", "127.0.0.1", http.StatusNoContent},
		{"127.0.0.1:80", "localhost:80", http.StatusNoContent},
		{"[::1]:80", "[::1]", http.StatusNoContent},
		{"127.0.0.1:80", "evil.example", http.StatusForbidden},
		{"127.0.0.1:8080", "localhost", http.StatusForbidden},
		{"127.0.0.1:8080", "localhost:8080", http.StatusNoContent},
	} {
		srv, err := New(Options{DB: filepath.Join(t.TempDir(), "none.db"), Addr: tc.addr})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/favicon.ico", nil)
		req.Host = tc.host
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("serving on %s, Host %q: %d %s, want %d", tc.addr, tc.host, w.Code, w.Body, tc.want)
		}
	}
}

// TestCookiePerPort: two servers on one host set cookies of their own
// names, and each takes its own when the browser sends both.
func TestCookiePerPort(t *testing.T) {
	a := newEnv(t, func(o *Options) { o.Token = "tokenA" })
	b := &env{dir: a.dir, db: a.db}
	b.start(t, func(o *Options) { o.Token = "tokenB" })
	both := "clipidx_token_" + a.port() + "=tokenA; clipidx_token_" + b.port() + "=tokenB"
	for _, e := range []*env{a, b} {
		_, _, h := e.get(t, "/?token="+e.srv.o.Token)
		if c := h.Get("Set-Cookie"); !strings.HasPrefix(c, "clipidx_token_"+e.port()+"="+e.srv.o.Token+";") {
			t.Errorf("server on %s sets cookie %q", e.port(), c)
		}
		if code, body, _ := e.get(t, "/api/status", "Cookie", both); code != 200 {
			t.Errorf("server on %s with both cookies: %d %s", e.port(), code, body)
		}
	}
}

// TestTokenMustSurviveACookie: New refuses a token a cookie would alter.
func TestTokenMustSurviveACookie(t *testing.T) {
	for _, tok := range []string{"two words", "semi;colon", "quo\"te", "new\nline", "é"} {
		if _, err := New(Options{DB: "x", Addr: "127.0.0.1:8080", Token: tok}); err == nil {
			t.Errorf("token %q accepted", tok)
		}
	}
	if _, err := New(Options{DB: "x", Addr: "127.0.0.1:8080", Token: "Abc-123_x.~+/="}); err != nil {
		t.Errorf("a plain token: %v", err)
	}
}
