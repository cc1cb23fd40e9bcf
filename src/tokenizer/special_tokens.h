// Splits text into raw-text fragments and special-token fragments (model-spec §4.2) with the
// semantics of llama.cpp: candidates longest first, each cut out left to right from the text
// that is still raw. One pass over the text with a trie finds every occurrence first, so the
// cost does not grow with the number of special tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace zinc::tokenizer {

struct Fragment {
  int32_t token = kNoToken;  // kNoToken: raw text
  size_t offset = 0;         // raw text: bytes into the input
  size_t length = 0;
};

class SpecialMatcher {
 public:
  explicit SpecialMatcher(const Vocab& vocab);
  // With parse_special off only USER_DEFINED tokens are matched.
  void partition(const Vocab& vocab, std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Node {
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    int32_t token = kNoToken;  // a candidate ends here
    uint8_t byte = 0;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;        // nodes_[0] is the root
  int32_t root_children_[256];     // direct table for the first byte
  std::vector<int32_t> priority_;  // by token id: position in longest-first order (-1: not a candidate)
};

}  // namespace zinc::tokenizer
