//go:build (linux || darwin) && (amd64 || arm64)

package openblas

import (
	"fmt"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// libraries are tried in order; the first that has cblas_sgemm wins.
var libraries = []string{
	"libopenblas.so.0", "libopenblas.so", "libblas.so.3",
	"libopenblas.dylib", "libopenblas.0.dylib",
}

var once struct {
	sync.Once
	lib *Lib
	err error
}

// Load opens the library once per process. It returns an error wrapping
// ErrNotFound, naming the files it tried, when none is installed.
func Load() (*Lib, error) {
	once.Do(func() {
		var tried []string
		for _, name := range libraries {
			h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
			if err != nil {
				tried = append(tried, name)
				continue
			}
			sym, err := purego.Dlsym(h, "cblas_sgemm")
			if err != nil || sym == 0 {
				tried = append(tried, name+" (no cblas_sgemm)")
				continue
			}
			l := &Lib{path: name}
			purego.RegisterFunc(&l.sgemm, sym)
			if t, err := purego.Dlsym(h, "openblas_set_num_threads"); err == nil && t != 0 {
				purego.RegisterFunc(&l.setThreads, t)
			}
			once.lib = l
			return
		}
		once.err = fmt.Errorf("tried %s: %w", strings.Join(tried, ", "), ErrNotFound)
	})
	return once.lib, once.err
}
