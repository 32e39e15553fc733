//go:build (linux || darwin) && (amd64 || arm64)

package gemm

import (
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// blasLibraries are tried in order; the first that has cblas_sgemm wins.
var blasLibraries = []string{
	"libopenblas.so.0", "libopenblas.so", "libblas.so.3",
	"libopenblas.dylib", "libopenblas.0.dylib",
}

var blasOnce struct {
	sync.Once
	lib *BLAS
	err error
}

// LoadBLAS opens the system's OpenBLAS (or another CBLAS libblas) once per
// process. It returns an error wrapping ErrNoBLAS when none is installed.
func LoadBLAS() (*BLAS, error) {
	blasOnce.Do(func() {
		var tried []string
		for _, name := range blasLibraries {
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
			b := &BLAS{path: name}
			purego.RegisterFunc(&b.sgemm, sym)
			if t, err := purego.Dlsym(h, "openblas_set_num_threads"); err == nil && t != 0 {
				purego.RegisterFunc(&b.setThreads, t)
			}
			blasOnce.lib = b
			return
		}
		blasOnce.err = errNoBLAS("tried " + strings.Join(tried, ", "))
	})
	return blasOnce.lib, blasOnce.err
}
