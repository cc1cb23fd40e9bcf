#include "engine/prefix_constraint.h"

#include <algorithm>

#include "engine/json_lex.h"

namespace zinc::engine {

TokenVocab::TokenVocab(std::vector<std::string> token_texts)
    : texts(std::move(token_texts)), bytes(texts.size()), plain(texts.size()), order(texts.size()), shared(texts.size()) {
  for (size_t id = 0; id < texts.size(); ++id) {
    plain[id] = json_lex::utf8_continues(texts[id]) &&
                std::all_of(texts[id].begin(), texts[id].end(), [](char c) { return uint8_t(c) >= 0x20 && c != '"' && c != '\\'; });
    longest = std::max(longest, texts[id].size());
  }
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return texts[a] < texts[b]; });
  for (size_t i = 1; i < order.size(); ++i) {
    const std::string &a = texts[order[i - 1]], &b = texts[order[i]];
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    shared[i] = uint32_t(n);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& t = texts[order[i]];
    for (char c : t) {
      if (uint8_t(c) < 0x80) bytes[i].ascii[uint8_t(c) / 64] |= uint64_t(1) << (uint8_t(c) % 64);
      else bytes[i].high = true;
    }
    bytes[i].utf8 = json_lex::utf8_continues(t);
  }
}

std::shared_ptr<const TokenVocab> TokenVocab::of(const tokenizer::Tokenizer& tok) {
  std::vector<std::string> texts;
  const int32_t n = tok.vocab().n_tokens();
  texts.reserve(size_t(n));
  for (int32_t id = 0; id < n; ++id) texts.emplace_back(tok.decode_piece(id));
  return std::make_shared<const TokenVocab>(std::move(texts));
}

}  // namespace zinc::engine
