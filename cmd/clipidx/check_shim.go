package main

// Temporary: cmd_check.go moves to the face once its comparisons are done.

import (
	"fmt"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/tokenizer"
)

func fillTemplate(template, label string) string { return clipnpu.FillTemplate(template, label) }

func softmax(logits []float32) []float64 { return clipnpu.Softmax(logits) }

func encodeTexts(b clipnpu.Backend, tok *tokenizer.Tokenizer, texts []string) ([]int32, []float32, error) {
	ids := tok.EncodeBatch(texts)
	e, err := b.EncodeTexts(ids, len(texts))
	if err != nil {
		return nil, nil, fmt.Errorf("encode texts: %w", err)
	}
	return ids, e, nil
}
