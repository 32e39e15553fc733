// Package tokenizer turns text into the 77 CLIP BPE token ids that CLIP
// ViT-H/14 reads, exactly as Hugging Face's CLIPTokenizer computes them.
// It is a leaf: it imports no other clipidx package.
//
// The pipeline follows transformers v5's tokenizers-backed CLIPTokenizer for
// laion/CLIP-ViT-H-14-laion2B-s32B-b79K, step by step:
//
//  1. Invalid UTF-8: each byte that is not part of a valid UTF-8 sequence
//     becomes U+FFFD (Hugging Face only ever sees valid strings).
//  2. NFC normalisation.
//  3. Every run of Unicode White_Space characters (the set the tokenizers
//     library's `\s` matches) becomes one ASCII space.
//  4. Lowercase, one character at a time with the full Unicode lowercase
//     mapping (Rust's char::to_lowercase): 'İ' becomes "i̇" (two code points)
//     and 'Σ' always becomes 'σ', never the final form 'ς'. The result is not
//     renormalised.
//  5. The literal special tokens <|startoftext|> and <|endoftext|> found in
//     the normalised text become their ids; the text between them is
//     pre-tokenised on its own.
//  6. Pre-tokenisation by CLIP's pattern, leftmost alternative first:
//     's 't 're 've 'm 'll 'd, runs of letters (\p{L}), single numbers
//     (\p{N}), runs of anything else but spaces. Spaces are dropped.
//  7. Each piece's UTF-8 bytes are mapped to GPT-2's byte-level alphabet and
//     merged by BPE, lowest merge rank first (leftmost on ties), with "</w>"
//     marking the piece's last symbol. Results are cached per piece.
//  8. BOS + the first 75 ids + EOS, padded to 77 with the folder's pad id.
//
// HTML entities are kept literally (no ftfy, no html.unescape): that is
// where OpenAI's original tokenizer differs, and the target is Hugging Face.
package tokenizer
