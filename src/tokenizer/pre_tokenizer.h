// Byte-level BPE pre-tokenization (model-spec §4.5): the regex list for each tokenizer.ggml.pre
// value, and the splitter that applies it with PCRE2 (UTF + UCP, JIT). Each regex re-splits every
// current piece; both the matches and the stretches between them are kept as pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zinc::tokenizer {

struct PreTokenizerSpec {
  std::vector<std::string> regexes;  // PCRE2 syntax; \s and \S mean Unicode White_Space
  bool ignore_merges = false;
  bool clean_spaces = true;
  bool add_bos = false;
};

// The spec for a tokenizer.ggml.pre value ("" means "default"); nullptr when zinc does not know it.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre);
// Every pre value find_pre_tokenizer() accepts (for messages and tests).
std::vector<std::string> known_pre_tokenizers();

// A compiled regex list. Thread-safe: split() may run concurrently.
class PreTokenizer {
 public:
  static Result<PreTokenizer> compile(const std::vector<std::string>& regexes);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Appends the pieces of `text` (views into it, in order, covering it exactly) to `pieces`.
  void split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  PreTokenizer();
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace zinc::tokenizer
