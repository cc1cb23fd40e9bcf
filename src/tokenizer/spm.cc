#include <algorithm>
#include <string>

#include "tokenizer/models.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer::internal {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;  // bytes into the text
  uint32_t size;   // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;
};

// Max-heap order: higher score first, then the leftmost pair.
bool lower_priority(const Bigram& a, const Bigram& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

// Tokens a merge may produce: SentencePiece never merges into control, unknown or byte pieces.
bool mergeable(const Vocab& vocab, int32_t id) {
  return id != kNoToken && !vocab.has_attr(id, kAttrControl | kAttrUnknown | kAttrByte);
}

}  // namespace

void spm_encode(const Vocab& vocab, const std::array<int32_t, 256>& byte_tokens, std::string_view text,
                std::vector<int32_t>* out) {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = std::min(utf8_sequence_bytes(uint8_t(text[pos])), text.size() - pos);
    int32_t index = int32_t(symbols.size());
    symbols.push_back({index - 1, pos + len == text.size() ? -1 : index + 1, uint32_t(pos), uint32_t(len)});
    pos += len;
  }
  std::vector<Bigram> heap;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    uint32_t size = symbols[left].size + symbols[right].size;
    int32_t id = vocab.find(text.substr(symbols[left].start, size));
    if (!mergeable(vocab, id)) return;
    heap.push_back({vocab.score(id), left, right, size});
    std::push_heap(heap.begin(), heap.end(), lower_priority);
  };
  for (int32_t i = 1; i < int32_t(symbols.size()); ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != b.size) continue;  // stale
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    std::string_view piece = text.substr(symbols[i].start, symbols[i].size);
    int32_t id = vocab.find(piece);
    if (mergeable(vocab, id)) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {  // byte fallback
      int32_t byte_id = byte_tokens[uint8_t(c)];
      if (byte_id == kNoToken) byte_id = vocab.special().unk;
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }
}

}  // namespace zinc::tokenizer::internal
