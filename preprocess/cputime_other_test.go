//go:build !unix

package preprocess

import "time"

func processCPU() time.Duration { return 0 }
