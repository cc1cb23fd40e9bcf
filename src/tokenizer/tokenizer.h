// Text <-> token ids for a GGUF vocabulary: SentencePiece (llama), byte-level BPE (gpt2) and
// WordPiece (bert), per model-spec §4. Immutable after create(); encode/decode are const and
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace zinc::gguf {
class File;
}

namespace zinc::tokenizer {

class SpecialMatcher;

struct DecodeOptions {
  bool remove_special = false;  // drop a leading BOS / trailing EOS the vocabulary adds itself
  bool render_special = false;  // print the text of control and unknown tokens
  bool clean_spaces = true;     // apply the vocabulary's clean-up of spaces, if it has one
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(Vocab vocab);
  // Vocab::load + create; errors read "tokenizer: <what>".
  static Result<std::unique_ptr<Tokenizer>> load(const gguf::File& file);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  const Vocab& vocab() const { return vocab_; }
  int32_t n_tokens() const { return vocab_.n_tokens(); }
  int32_t bos() const { return vocab_.special().bos; }
  int32_t eos() const { return vocab_.special().eos; }
  int32_t eot() const { return vocab_.special().eot; }
  bool is_eog(int32_t id) const { return vocab_.is_eog(id); }

  // add_special: BOS/EOS (SEP for WordPiece) as the vocabulary's flags say. parse_special:
  // control-token texts in `text` become their ids (user-defined tokens always do).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for (may be part of a UTF-8 character). Control and unknown tokens
  // are empty unless render_special. `id` must be valid (vocab().valid_id).
  std::string_view decode_piece(int32_t id, bool render_special = false) const;

  // The text of a sequence, as llama.cpp's detokenize: one leading space is removed when the
  // vocabulary adds a space prefix (unless the sequence starts with BOS). Invalid ids are an error.
  Result<std::string> decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

 private:
  explicit Tokenizer(Vocab vocab);
  void encode_fragment(std::string_view text, bool after_special, std::vector<int32_t>* out) const;

  Vocab vocab_;
  std::optional<PreTokenizer> pre_tokenizer_;  // byte-level BPE only
  std::unique_ptr<SpecialMatcher> special_;
  // SPM: the byte-fallback token of each byte; BPE: the token of each byte's code point.
  std::array<int32_t, 256> byte_tokens_{};
  // SPM: characters X such that some mergeable token contains "X▁" (U+2581). Before any other
  // character a "▁" starts a new word no merge can cross, so words are merged separately.
  std::vector<std::string> spm_joins_before_space_;
  std::string piece_blob_;                 // decode_piece() texts, back to back
  std::vector<uint32_t> piece_offset_;     // n_tokens + 1
};

// Turns generated ids into text as they arrive: emits only complete UTF-8 (a character split
// across tokens or byte-fallback pieces is held back until it is whole; invalid bytes become
// U+FFFD). Control tokens print only with render_special. With strip_leading_space (SentencePiece
// vocabularies, decoding from the start of a sequence) the first text after the start or after a
// BOS token loses one leading space. Borrows the tokenizer, which must outlive it.
class StreamingDecoder {
 public:
  struct Options {
    bool render_special = false;
    bool strip_leading_space = false;
  };
  explicit StreamingDecoder(const Tokenizer& tokenizer);
  StreamingDecoder(const Tokenizer& tokenizer, Options options);

  // Appends one token; returns the text completed by it (often empty for partial characters).
  // `id` must be valid.
  std::string push(int32_t id);
  // Returns what is held back (an incomplete character becomes U+FFFD) and starts over.
  std::string flush();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  Options options_;
  std::string pending_;
  bool at_start_ = true;
};

}  // namespace zinc::tokenizer
