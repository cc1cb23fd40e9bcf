#include <algorithm>
#include <string>

#include "tokenizer/models.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer::internal {
namespace {

struct Symbol {
  int32_t id;  // kNoToken once merged into its left neighbour (or when a byte has no token)
  int32_t prev;
  int32_t next;
};

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index
  int32_t left_id;
  int32_t right_id;
};

// Min-heap order: lowest rank first, then the leftmost pair.
bool later(const Candidate& a, const Candidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

}  // namespace

void bpe_encode_word(const Vocab& vocab, const std::array<int32_t, 256>& byte_tokens, std::string_view word,
                     std::vector<int32_t>* out) {
  if (word.empty()) return;
  if (vocab.flags().ignore_merges) {
    thread_local std::string encoded;
    encoded.clear();
    const ByteMap& map = ByteMap::get();
    for (char c : word) encoded += map.encoded(uint8_t(c));
    int32_t id = vocab.find(encoded);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  if (word.size() == 1) {
    if (byte_tokens[uint8_t(word[0])] != kNoToken) out->push_back(byte_tokens[uint8_t(word[0])]);
    return;
  }
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  heap.clear();
  const int32_t n = int32_t(word.size());
  for (int32_t i = 0; i < n; ++i) symbols.push_back({byte_tokens[uint8_t(word[i])], i - 1, i + 1 < n ? i + 1 : -1});
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    int32_t a = symbols[left].id, b = symbols[right].id;
    if (a == kNoToken || b == kNoToken) return;
    Vocab::Merge m = vocab.find_merge(a, b);
    if (m.rank < 0) return;
    heap.push_back({m.rank, left, a, b});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_add(i, i + 1);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.left];
    if (left.id != c.left_id || left.next < 0) continue;  // stale: the left symbol changed
    Symbol& right = symbols[left.next];
    if (right.id != c.right_id) continue;  // stale: the right symbol grew
    left.id = vocab.find_merge(c.left_id, c.right_id).result;
    right.id = kNoToken;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    right.prev = right.next = -1;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    if (symbols[i].id != kNoToken) out->push_back(symbols[i].id);
}

}  // namespace zinc::tokenizer::internal
