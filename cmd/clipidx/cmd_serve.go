package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/userdir"
	"github.com/clipidx/clipidx/internal/web"
	"github.com/clipidx/clipidx/store"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var addr, token, tokenFile, ffmpegDir string
	var open, watchOn bool
	var wf watchFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Search the collection in a browser, with thumbnails",
		Long: `Serve a local web page over the index: type a query (the syntax of
clipidx search), see the photos, open one, find similar images, or drop an
image onto the page to search by it. The index is opened read-only for each
request, so a build can run at the same time; new images show without a
restart. The model's text tower loads on the first text query.

The page listens on loopback unless --addr names another address; then a
token is required: from --token-file FILE or $CLIPIDX_TOKEN (both stay out
of ps), --token, or a random one printed with the URL. Without the token,
requests that another web site makes the browser send (Sec-Fetch-Site
cross-site or same-site) are refused. A query takes at most 32 terms and
1,000 bytes, and k at most 1,000 results. Thumbnails are cached under
$XDG_CACHE_HOME/clipidx/thumbs.

--watch also keeps the index current, as clipidx watch does over every
folder indexed so far (its --rescan, --settle, --idle-unload and --no-events
apply): the page shows a running build ("indexing 37 of 500 new photos")
and runs the query shown again when new results land.`,
		Example: `  clipidx serve --open
  clipidx serve --addr 0.0.0.0:8080     # prints a URL with a token
  clipidx serve --addr 0.0.0.0:8080 --token-file ~/.config/clipidx/token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return usageError("--addr takes host:port such as 127.0.0.1:8080, not %q", addr)
			}
			if _, err := os.Stat(g.db); err != nil {
				return fmt.Errorf("index %s: %w (run `clipidx build FOLDER` first, or pass --db)", g.db, err)
			}
			if token, err = serveToken(token, tokenFile, os.Getenv); err != nil {
				return err
			}
			if token == "" && !web.Loopback(host) {
				if token, err = web.NewToken(); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another with --addr)", addr, err)
			}
			defer ln.Close()
			served := ln.Addr().String()
			thumbDir := ""
			if d, err := userdir.Cache(); err == nil {
				thumbDir = filepath.Join(d, "clipidx", "thumbs")
			}
			if modelOnCPU() {
				// Before any request: the choice sets the search scan's
				// kernel, which queries read while they scan.
				chooseKernels()
			}
			var m *clipnpu.Model
			defer func() {
				if m != nil {
					m.Close()
				}
			}()
			still := frameStill(ffmpegDir)
			if still == nil {
				noteNoFFmpeg(cmd.ErrOrStderr(), g.db)
			}
			srv, err := web.New(web.Options{
				DB:         g.db,
				Addr:       served,
				Token:      token,
				ThumbDir:   thumbDir,
				Threads:    g.threads,
				FrameStill: still,
				Meta:       metaSource,
				Damaged:    tellDamaged(cmd.ErrOrStderr()),
				OpenModel: func() (web.Model, error) {
					var err error
					m, err = openFace(clipnpu.TextTower, true)
					if err != nil {
						return nil, err
					}
					return indexFace{m}, nil
				},
			})
			if err != nil {
				return err
			}
			switch err := srv.ThumbCacheErr(); {
			case errors.Is(err, web.ErrThumbsReadOnly):
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %v (to keep them, make it writable or set XDG_CACHE_HOME to a writable folder)\n", err)
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "note: thumbnails are not kept, so each is made again on every request: %v (to keep them, set XDG_CACHE_HOME to a writable folder)\n", err)
			}
			u := url.URL{Scheme: "http", Host: served, Path: "/"}
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				// Listening on every address: name this machine.
				if name, err := os.Hostname(); err == nil {
					_, port, _ := net.SplitHostPort(served)
					u.Host = net.JoinHostPort(name, port)
				}
			}
			if token != "" {
				u.RawQuery = url.Values{"token": {token}}.Encode()
			}
			if web.Loopback(host) {
				fmt.Fprintf(cmd.OutOrStdout(), "serving %s on %s\n", g.db, u.String())
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "serving %s on %s (reachable from the network: keep the token secret)\n", g.db, u.String())
			}
			if open {
				openBrowser(cmd, u.String())
			}
			hs := web.HTTPServer(srv)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			wf.video.ffmpeg = ffmpegDir // the watcher reads videos with serve's ffmpeg
			stopWatch, err := serveWatch(ctx, watchOn, wf, cmd)
			if err != nil {
				return err
			}
			defer stopWatch()
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
				// A download still running after 5 s (a video playing in a
				// browser) is cut: that is the stop asked for, not a failure.
				hs.Close()
			} else if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&ffmpegDir, "ffmpeg", envOr("CLIPIDX_FFMPEG", ""), "folder holding ffmpeg, for the pictures of video frames and for decoding HEICs (default: found on PATH) [env CLIPIDX_FFMPEG]")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port); beyond loopback a token is required")
	f.BoolVar(&open, "open", false, "open the page in the default browser")
	f.StringVar(&token, "token", "", "token the page and API require (shown to every user by ps: prefer --token-file or $CLIPIDX_TOKEN; default: none on loopback, a random one otherwise)")
	f.StringVar(&tokenFile, "token-file", "", "read the token from FILE (surrounding whitespace dropped)")
	f.BoolVar(&watchOn, "watch", false, "also keep the index current (see clipidx watch)")
	wf.exif = true // the watcher builds as the index was built: see clipidx watch --exif
	wf.register(c)
	return c
}

// serveToken is the token serve requires: --token, else the one in
// --token-file (trimmed of whitespace; an empty file is refused), else
// $CLIPIDX_TOKEN; "" when none is given.
func serveToken(flag, file string, getenv func(string) string) (string, error) {
	switch {
	case flag != "" && file != "":
		return "", usageError("give the token once: --token or --token-file, not both")
	case flag != "":
		return flag, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", usageError("--token-file %s is empty: write the token in it", file)
		}
		return t, nil
	}
	return strings.TrimSpace(getenv("CLIPIDX_TOKEN")), nil
}

// openBrowser starts the system's browser on u; a failure only prints.
// The opener is waited for in the background (xdg-open exits once it has
// handed u over, or with a non-zero status when it found no browser),
// which says so and leaves no zombie. The channel is closed once it has
// exited and any note is written.
func openBrowser(cmd *cobra.Command, u string) <-chan struct{} {
	name, args := "xdg-open", []string{u}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", u}
	}
	done := make(chan struct{})
	note := func(err error) {
		fmt.Fprintf(cmd.ErrOrStderr(), "clipidx: could not open a browser (%v): open %s yourself\n", err, u)
	}
	c := exec.Command(name, args...)
	if err := c.Start(); err != nil {
		note(err)
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := c.Wait(); err != nil {
			note(fmt.Errorf("%s: %w", name, err))
		}
	}()
	return done
}

// noteNoFFmpeg says, when the index at db holds video frames, that serve
// shows them without pictures for want of ffmpeg.
func noteNoFFmpeg(w io.Writer, db string) {
	r, err := store.OpenReader(db, store.ReaderOptions{})
	if err != nil {
		return // web.New says what is wrong with the index
	}
	defer r.Close()
	var videos, frames int
	if r.View(func(s *store.Snapshot) error { videos, frames = s.VideoCounts(); return nil }) != nil || frames == 0 {
		return
	}
	fmt.Fprintf(w, "note: ffmpeg was not found: the %d %s of %d %s %s without pictures (the videos play); install ffmpeg or give --ffmpeg DIR\n",
		frames, plural(frames, "frame", "frames"), videos, plural(videos, "video", "videos"), plural(frames, "shows", "show"))
}
