package search

import "github.com/clipidx/clipidx/store"

// searchVideos is Search with the frames of a video (VIDEO#t=S records)
// counted as one result, the best: the frame's path, so its time, and its
// score. It widens the scan until K videos and files are found or the
// index has no more.
func searchVideos(s *store.Snapshot, q []float32, opts Options) ([]Result, error) {
	k := opts.K
	if k <= 0 {
		k = 10
	}
	for wide := k; ; wide *= 4 {
		o := opts
		o.K = wide
		o.Order = ByScore // the K best videos and files first, then their order
		res, err := searchFiles(s, q, o)
		if err != nil {
			return nil, err
		}
		out := GroupVideos(res, k)
		if len(out) >= k || len(res) < wide {
			return sortByDate(s, out, opts)
		}
	}
}

// GroupVideos keeps, of results ranked best first, the first frame of each
// video and every other result, up to k (0 = all).
func GroupVideos(res []Result, k int) []Result {
	seen := map[string]bool{}
	var out []Result
	for _, r := range res {
		if k > 0 && len(out) >= k {
			break
		}
		if v, _, ok := store.SplitFrame(r.Path); ok {
			if seen[v] {
				continue
			}
			seen[v] = true
		}
		out = append(out, r)
	}
	return out
}
