package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/internal/fixtures"
)

// benchPrompts builds n typical prompts deterministically: zero-shot
// templates ("a photo of a {label}") and caption-like sentences.
func benchPrompts(n int) []string {
	labels := strings.Fields(`cat dog golden_retriever tabby_cat car red_bicycle sailboat
		lighthouse mountain_lake birthday_cake espresso sunflower skyscraper
		snowy_forest beach_at_sunset old_bridge teddy_bear laptop violin
		hummingbird fire_truck waterfall cathedral croissant koala ferris_wheel
		pine_cone thunderstorm desert_road subway_station`)
	templates := []string{
		"a photo of a %s.", "a blurry photo of the %s.", "a close-up photo of a %s",
		"a black and white photo of the %s.", "a painting of a %s", "itap of a %s.",
		"a photo of my %s", "a low resolution photo of a %s.", "art of the %s.",
	}
	adjectives := []string{"small", "happy", "old", "bright", "wet", "tiny", "Huge", "quiet"}
	places := []string{"on a wooden table", "in the garden", "near the window", "at the beach",
		"under a tree", "in Paris", "on the kitchen floor", "next to a red car"}
	tails := []string{"", ", 35mm film", " in the morning light", "!", " (2019)", ", highly detailed",
		" — taken with an iPhone", " at 5pm"}
	rng := rand.New(rand.NewPCG(42, 7))
	out := make([]string, n)
	for i := range out {
		label := strings.ReplaceAll(labels[rng.IntN(len(labels))], "_", " ")
		if i%3 == 2 {
			out[i] = fmt.Sprintf("A %s %s %s%s", adjectives[rng.IntN(len(adjectives))], label,
				places[rng.IntN(len(places))], tails[rng.IntN(len(tails))])
		} else {
			out[i] = fmt.Sprintf(templates[rng.IntN(len(templates))], label)
		}
	}
	return out
}

// BenchmarkEncodePrompts encodes 10,000 prompts per iteration with a warm
// word cache (the steady state of a long-running process).
func BenchmarkEncodePrompts(b *testing.B) {
	tok := loadReal(b)
	prompts := benchPrompts(10000)
	tok.EncodeBatch(prompts) // warm the cache
	b.ResetTimer()
	for b.Loop() {
		tok.EncodeBatch(prompts)
	}
	b.ReportMetric(float64(b.N*len(prompts))/b.Elapsed().Seconds(), "prompts/s")
}

// BenchmarkEncodePromptsCold empties the word cache before every batch of
// 10,000 prompts, so each batch pays for its first BPE of every word.
func BenchmarkEncodePromptsCold(b *testing.B) {
	tok := loadReal(b)
	prompts := benchPrompts(10000)
	for b.Loop() {
		tok.cache.mu.Lock()
		tok.cache.m = nil
		tok.cache.mu.Unlock()
		tok.EncodeBatch(prompts)
	}
	b.ReportMetric(float64(b.N*len(prompts))/b.Elapsed().Seconds(), "prompts/s")
}

// BenchmarkEncodeMegabyte encodes 1 MB of caption-like text (only the first
// 75 tokens are kept; the cost is the normalisation of the whole text).
func BenchmarkEncodeMegabyte(b *testing.B) {
	tok := loadReal(b)
	text := strings.Repeat("A photo of a very large and fluffy orange cat. ", (1<<20)/47)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}

// BenchmarkLoad reads vocab.json and merges.txt.
func BenchmarkLoad(b *testing.B) {
	dir := fixtures.BPE(b)
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
