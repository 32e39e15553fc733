package hub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// sidecarDir holds, beside the downloaded files, one small JSON record per
// file: "<file>.json" once the file is verified, "<file>.part.json" while
// its .part is being filled (so that a .part is resumed only against the
// same remote ETag).
const sidecarDir = ".hub"

type sidecar struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	Commit   string `json:"commit,omitempty"`
	File     string `json:"file"`
	ETag     string `json:"etag,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Size     int64  `json:"size"`
	// ModTime is the file's modification time (Unix ns) when it was
	// verified: a file rewritten since then is hashed again.
	ModTime int64 `json:"mtime,omitempty"`
}

func sidecarPath(dir, file string, part bool) string {
	name := filepath.Join(dir, sidecarDir, filepath.FromSlash(file))
	if part {
		return name + ".part.json"
	}
	return name + ".json"
}

// readSidecar returns nil when the record is missing or unreadable: it is
// only an optimisation, the download is then verified or redone.
func readSidecar(p string) *sidecar {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var s sidecar
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// writeSidecar writes the record through a temporary name and a rename, so
// a crash never leaves a truncated record.
func writeSidecar(p string, s sidecar) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
