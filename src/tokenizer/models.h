// The tokenization algorithms, one per vocabulary family (internal to the tokenizer layer).
// Each appends the ids for one raw-text fragment to `out`.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace zinc::tokenizer::internal {

// SentencePiece BPE on `text` (spaces already replaced by U+2581), model-spec §4.3.
// `byte_tokens[b]` is the fallback token of byte b (kNoToken: none).
void spm_encode(const Vocab& vocab, const std::array<int32_t, 256>& byte_tokens, std::string_view text,
                std::vector<int32_t>* out);

// Byte-level BPE on one pre-tokenized word (raw bytes), model-spec §4.4. `byte_tokens[b]` is the
// token of the code point standing for byte b.
void bpe_encode_word(const Vocab& vocab, const std::array<int32_t, 256>& byte_tokens, std::string_view word,
                     std::vector<int32_t>* out);

// WordPiece (BERT) on a raw-text fragment: normalization, whitespace/punctuation split, greedy
// longest-match-first.
void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

}  // namespace zinc::tokenizer::internal
