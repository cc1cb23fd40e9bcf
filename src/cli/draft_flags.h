// zinc run's and zinc chat's draft model for speculative decoding (engine/speculative.h):
// --model-draft (-md), --draft-max, --draft-min, --draft-p-min, as llama.cpp names them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/status.h"
#include "engine/speculative.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {

inline void add_draft_flags(CLI::App& sub, std::string& draft_model, engine::DraftOptions& draft) {
  sub.add_option("--model-draft", draft_model, "Draft model for speculative decoding (same vocabulary) (-md)");
  sub.add_option("--draft-max", draft.max_tokens, "Guesses the draft makes per step at most")->capture_default_str()->check(CLI::Range(1, 256));
  sub.add_option("--draft-min", draft.min_tokens, "Fewer guesses than this are not checked")->capture_default_str()->check(CLI::Range(0, 256));
  sub.add_option("--draft-p-min", draft.p_min, "The draft stops below this probability of its best token")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

// Whether the draft's vocabulary is the model's, token by token.
inline Status check_draft_vocab(const tokenizer::Tokenizer& model, const tokenizer::Tokenizer& draft) {
  const auto& a = model.vocab();
  const auto& b = draft.vocab();
  bool same = a.n_tokens() == b.n_tokens();
  for (int32_t i = 0; same && i < a.n_tokens(); ++i) same = a.text(i) == b.text(i);
  return same ? ok_status() : error("the draft model's vocabulary is not the model's");
}

}  // namespace zinc::cli
