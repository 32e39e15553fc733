// Package hub downloads the files of a Hugging Face repository into a local
// folder, the way `clipidx model pull` needs it for a 3.9 GB checkpoint:
//
//   - each file comes from {Endpoint}/{repo}/resolve/{revision}/{file};
//     large (LFS) files redirect to a CDN on another host, and the bearer
//     token is never sent to that other host;
//   - a file is written to "<file>.part" and renamed only after its size and,
//     for LFS files, the SHA-256 the hub advertises have been verified, so an
//     interrupted or corrupt download never leaves a file that looks complete;
//   - an interrupted download (dropped connection, stalled transfer, Ctrl-C
//     through the context) resumes from the .part with a Range request;
//   - a verified file is remembered in a small sidecar (.hub/<file>.json) and
//     skipped next time while the hub still advertises the same ETag.
//
// The package imports no other clipidx package, never prints and never reads
// the environment: the caller passes the endpoint and token in Options.
package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the Hugging Face hub used when Options.Endpoint is empty.
const DefaultEndpoint = "https://huggingface.co"

// CLIPFiles are the files of a Hugging Face CLIP checkpoint that clipidx
// reads: the model config, the weights, the BPE tokenizer and the image
// preprocessing config. The weights come last so that the small files are in
// place quickly.
var CLIPFiles = []string{
	"config.json",
	"preprocessor_config.json",
	"tokenizer_config.json",
	"special_tokens_map.json",
	"vocab.json",
	"merges.txt",
	"model.safetensors",
}

var (
	// ErrUnauthorized is returned when the hub answers 401 or 403: the
	// repository is gated or private and needs a token with access (or, as
	// the hub does for anonymous requests, the repository does not exist).
	ErrUnauthorized = errors.New("not authorized")
	// ErrNotFound is returned when the hub answers 404: the repository,
	// revision or file does not exist.
	ErrNotFound = errors.New("not found")
	// ErrChecksum is returned when a downloaded file's size or SHA-256
	// differs from what the hub advertised. The partial file is deleted, so
	// the next attempt starts from scratch.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrBusy is returned when another process is downloading the same file
	// into the same folder.
	ErrBusy = errors.New("another download of this file is running")
	// ErrNoSpace is returned when the target folder's file system has less
	// free space than the rest of the file needs.
	ErrNoSpace = errors.New("not enough free disk space")
	// ErrBadName is returned when a repository id or file name is malformed
	// (empty, absolute, or escaping the target folder with "..").
	ErrBadName = errors.New("bad name")
)

// Options configure a download. The zero value downloads from
// DefaultEndpoint, revision "main", anonymously.
type Options struct {
	Endpoint string // hub base URL, may include a path prefix; "" = DefaultEndpoint
	Revision string // branch, tag or commit; "" = "main"
	Token    string // sent as "Authorization: Bearer" to the endpoint's host only

	// Client performs the requests; nil uses a client with connect and
	// response-header timeouts but no overall timeout (files are large).
	Client *http.Client
	// Attempts bounds the consecutive failed attempts (dropped connection,
	// stall, 5xx, 429) per file that made no progress; 0 = 6. Progress
	// resets the count, so a long download survives many short outages.
	Attempts int
	// Backoff is the wait before the first retry, doubled each time up to
	// 30 s; 0 = 1 s.
	Backoff time.Duration
	// StallTimeout aborts and retries a transfer that received no byte for
	// this long; 0 = 60 s.
	StallTimeout time.Duration
	// Verify re-hashes files that their sidecar already records as
	// verified (same ETag, size and modification time) instead of trusting
	// the record: LFS files against their SHA-256, other files against
	// their git blob SHA-1 (the ETag the hub gives them). A file that no
	// longer matches is downloaded again. A file whose ETag is neither is
	// trusted.
	Verify bool
	// UserAgent is sent with every request; "" = "clipidx-hub".
	UserAgent string
	// OnRetry, when set, is called before waiting wait to retry the file
	// after the retryable error err (for a log line; the download goes on).
	OnRetry func(file string, err error, wait time.Duration)
	// Progress, when set, is called from the downloading goroutine as bytes
	// arrive (at most once per buffer of 64 KiB) and at each stage change.
	Progress func(Progress)
}

// Stage says what a Progress report is about.
type Stage uint8

const (
	// StageHashing: re-reading an existing .part (Done of Total) to resume
	// the SHA-256, or hashing a file found without a sidecar.
	StageHashing Stage = iota + 1
	// StageDownloading: Done bytes of Total are in the .part.
	StageDownloading
	// StageDone: the file is verified and in place.
	StageDone
	// StageSkipped: the file was already present and verified.
	StageSkipped
)

// Progress reports one file's state. Total is -1 when the hub did not say
// how large the file is.
type Progress struct {
	File        string
	Stage       Stage
	Done, Total int64
}

// Result describes one file after Download.
type Result struct {
	File     string `json:"file"`
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256,omitempty"` // verified digest (LFS files)
	ETag     string `json:"etag,omitempty"`   // as advertised, unquoted
	Commit   string `json:"commit,omitempty"` // X-Repo-Commit of the revision
	Skipped  bool   `json:"skipped"`          // already present and verified
	Resumed  int64  `json:"resumed_from,omitempty"`
	Fetched  int64  `json:"fetched"`  // bytes received over the network
	Attempts int    `json:"requests"` // HTTP requests made (HEAD and GETs)
}

// Download fetches files of repo (e.g. "laion/CLIP-ViT-H-14-laion2B-s32B-b79K")
// into dir, one after another, creating dir if needed. It stops at the first
// error and returns the results of the files done so far.
func Download(ctx context.Context, repo string, files []string, dir string, opts Options) ([]Result, error) {
	var out []Result
	for _, f := range files {
		r, err := DownloadFile(ctx, repo, f, dir, opts)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// DownloadFile fetches one file of repo into dir (file may contain "/" for a
// subfolder of the repository). See the package doc for the guarantees.
func DownloadFile(ctx context.Context, repo, file, dir string, opts Options) (Result, error) {
	if err := CheckRepo(repo); err != nil {
		return Result{}, err
	}
	if err := checkFile(file); err != nil {
		return Result{}, err
	}
	d := newDownloader(repo, file, dir, opts)
	return d.run(ctx)
}

// FileURL returns the resolve URL of file in repo at revision, below
// endpoint ("" = DefaultEndpoint, "" revision = "main").
func FileURL(endpoint, repo, revision, file string) string {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if revision == "" {
		revision = "main"
	}
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	// A revision like "refs/pr/1" is one path segment for the hub.
	return strings.TrimRight(endpoint, "/") + "/" + repo + "/resolve/" +
		url.PathEscape(revision) + "/" + strings.Join(segs, "/")
}

// CheckRepo returns ErrBadName, wrapped with repo, unless repo is a
// repository id the hub can serve and a folder can be named after:
// "owner/name" or "name", no part empty, "." or "..", and none holding
// "?", "#", "%", "\\" or a space.
func CheckRepo(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) > 2 || repo == "" {
		return fmt.Errorf("repository %q: %w (want owner/name)", repo, ErrBadName)
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "?#%\\ ") {
			return fmt.Errorf("repository %q: %w (want owner/name)", repo, ErrBadName)
		}
	}
	return nil
}

func checkFile(file string) error {
	if file == "" || strings.HasPrefix(file, "/") || strings.Contains(file, "\\") ||
		path.Clean(file) != file || file == "." || strings.HasPrefix(file, "../") || file == ".." ||
		strings.HasPrefix(file, ".hub/") || strings.HasSuffix(file, ".part") {
		return fmt.Errorf("file %q: %w", file, ErrBadName)
	}
	return nil
}

// target returns the local path of file in dir.
func target(dir, file string) string { return filepath.Join(dir, filepath.FromSlash(file)) }

// removeIfExists removes p, ignoring a missing file.
func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
