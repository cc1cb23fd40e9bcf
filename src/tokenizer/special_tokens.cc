#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace zinc::tokenizer {
namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

}  // namespace

SpecialMatcher::SpecialMatcher(const Vocab& vocab) {
  std::fill(std::begin(root_children_), std::end(root_children_), -1);
  nodes_.push_back(Node{});
  std::vector<int32_t> candidates;
  for (int32_t id = 0; id < vocab.n_tokens(); ++id)
    if (vocab.has_attr(id, kAttrControl | kAttrUserDefined | kAttrUnknown)) candidates.push_back(id);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int32_t a, int32_t b) { return vocab.text(a).size() > vocab.text(b).size(); });
  priority_.assign(size_t(vocab.n_tokens()), -1);
  for (size_t i = 0; i < candidates.size(); ++i) {
    int32_t id = candidates[i];
    priority_[id] = int32_t(i);
    std::string_view t = vocab.text(id);
    int32_t node = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      uint8_t b = uint8_t(t[k]);
      int32_t next = child(node, b);
      if (next < 0) {
        next = int32_t(nodes_.size());
        Node n;
        n.byte = b;
        if (node == 0) {
          root_children_[b] = next;
        } else {
          n.next_sibling = nodes_[node].first_child;
          nodes_[node].first_child = next;
        }
        nodes_.push_back(n);
      }
      node = next;
    }
    if (nodes_[node].token == kNoToken) nodes_[node].token = id;
  }
}

int32_t SpecialMatcher::child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_children_[byte];
  for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling)
    if (nodes_[c].byte == byte) return c;
  return -1;
}

void SpecialMatcher::partition(const Vocab& vocab, std::string_view text, bool parse_special,
                               std::vector<Fragment>* out) const {
  const size_t n = text.size();
  if (n == 0) return;
  // Every occurrence of every eligible candidate: (priority, position).
  struct Occurrence {
    int32_t priority;
    uint32_t pos;
    int32_t id;
  };
  std::vector<Occurrence> found;
  for (size_t p = 0; p < n; ++p) {
    int32_t node = root_children_[uint8_t(text[p])];
    for (size_t k = p + 1; node >= 0; ++k) {
      int32_t id = nodes_[node].token;
      if (id != kNoToken && (parse_special || !vocab.has_attr(id, kAttrControl | kAttrUnknown)))
        found.push_back({priority_[id], uint32_t(p), id});
      if (k >= n) break;
      node = child(node, uint8_t(text[k]));
    }
  }
  if (found.empty()) {
    out->push_back({kNoToken, 0, n});
    return;
  }
  std::sort(found.begin(), found.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.pos < b.pos;
  });
  // state: 0 raw, 1 inside a matched token, 2 whitespace removed by LSTRIP/RSTRIP.
  std::vector<uint8_t> state(n, 0);
  struct Match {
    uint32_t pos;
    int32_t id;
  };
  std::vector<Match> matches;
  for (const Occurrence& o : found) {
    const int32_t id = o.id;
    const size_t len = vocab.text(id).size();
    bool raw = true;
    for (size_t k = o.pos; k < o.pos + len && raw; ++k) raw = state[k] == 0;
    if (!raw) continue;
    for (size_t k = o.pos; k < o.pos + len; ++k) state[k] = 1;
    matches.push_back({o.pos, id});
    if (vocab.has_attr(id, kAttrLstrip))
      for (size_t k = o.pos; k > 0 && state[k - 1] == 0 && is_ascii_space(text[k - 1]); --k) state[k - 1] = 2;
    if (vocab.has_attr(id, kAttrRstrip))
      for (size_t k = o.pos + len; k < n && state[k] == 0 && is_ascii_space(text[k]); ++k) state[k] = 2;
  }
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.pos < b.pos; });
  size_t p = 0, m = 0;
  while (p < n) {
    if (m < matches.size() && matches[m].pos == p) {
      out->push_back({matches[m].id, 0, 0});
      p += vocab.text(matches[m].id).size();
      ++m;
    } else if (state[p] == 2) {
      ++p;
    } else {
      size_t start = p;
      while (p < n && state[p] == 0) ++p;
      out->push_back({kNoToken, start, p - start});
    }
  }
}

}  // namespace zinc::tokenizer
