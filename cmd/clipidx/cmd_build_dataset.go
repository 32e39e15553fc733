package main

import (
	"os"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/index"
)

// Webdataset and split-build support for `clipidx build` (--shard,
// --captions, brace patterns); the flags are declared in cmd_build.go.

// expandPatterns expands brace patterns (shards/{00000..00099}.tar) in
// the build's roots; a root that exists as written stays literal.
func expandPatterns(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Lstat(a); err == nil {
			out = append(out, a)
			continue
		}
		more, err := index.ExpandBraces(a)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// parseShardFlag parses --shard I/N ("" = the whole input).
func parseShardFlag(s string) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	i, n, err = index.ParseShard(s)
	if err != nil {
		return 0, 0, usageError("--shard: %v", err)
	}
	return i, n, nil
}

// buildTowers is what a build loads: the text tower too for --captions.
func buildTowers(captions bool) clipnpu.Towers {
	if captions {
		return clipnpu.BothTowers
	}
	return clipnpu.ImageTower
}
