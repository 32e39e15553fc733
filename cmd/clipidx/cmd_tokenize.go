package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/store"
	"github.com/clipidx/clipidx/tokenizer"
)

func init() { subcommands = append(subcommands, newTokenizeCmd) }

func newTokenizeCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "tokenize [--json] TEXT...",
		Short: "Print the CLIP token ids of texts (for parity checks)",
		Long: `Print the 77 token ids the text model reads for each TEXT, one line per
text (ids separated by spaces), in argument order: <|startoftext|>, the text's
tokens, <|endoftext|>, then padding.

Only the vocabulary of --model is read: vocab.json and merges.txt, or
bpe_simple_vocab_16e6.txt.gz, plus special_tokens_map.json or
tokenizer_config.json for the pad id. --json prints
[{"text": TEXT, "ids": [77 ids]}, ...] instead, with "text_bytes": the
text's bytes in base64 when they are not UTF-8.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := tokenizer.Load(g.model)
			if err != nil {
				if errors.Is(err, tokenizer.ErrNoVocab) {
					return fmt.Errorf("tokenize: %w (pass --model with a model folder, or run `clipidx model pull`)", err)
				}
				return fmt.Errorf("tokenize: %w", err)
			}
			if asJSON {
				return writeTokensJSON(cmd.OutOrStdout(), tok, args)
			}
			return writeTokensText(cmd.OutOrStdout(), tok, args)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print [{"text": T, "ids": [...]}] instead of one line of ids per text ("text_bytes": the text's bytes in base64 when they are not UTF-8)`)
	return c
}

// writeTokensText writes one line of space-separated ids per text.
func writeTokensText(w io.Writer, tok *tokenizer.Tokenizer, texts []string) error {
	var line []byte
	for _, text := range texts {
		line = line[:0]
		for i, id := range tok.Encode(text) {
			if i > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendInt(line, int64(id), 10)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// tokenizeRecord is one element of the --json output.
type tokenizeRecord struct {
	Text string `json:"text"`
	// TextBytes is the text's bytes (base64 in JSON) when they are not
	// UTF-8, which "text" can only show with U+FFFD in their place.
	TextBytes []byte  `json:"text_bytes,omitempty"`
	IDs       []int32 `json:"ids"`
}

// writeTokensJSON writes the texts and their ids as one JSON array. Special
// tokens in texts stay readable (no HTML escaping of < and >).
func writeTokensJSON(w io.Writer, tok *tokenizer.Tokenizer, texts []string) error {
	recs := make([]tokenizeRecord, len(texts))
	for i, text := range texts {
		recs[i] = tokenizeRecord{Text: text, TextBytes: store.PathBytes(text), IDs: tok.Encode(text)}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(recs)
}
