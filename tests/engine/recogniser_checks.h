// What the tests of the byte recognisers (JsonPrefix, SchemaPrefix, XmlCallPrefix) share: how far
// a recogniser takes a text, and a PrefixConstraint's mask checked against feeding every token.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace zinc::engine::test {

// Bytes of `text` the recogniser `s` takes; *complete: whether it is then whole.
template <class State>
size_t accepted(State s, const std::string& text, bool* complete = nullptr) {
  for (size_t i = 0; i < text.size(); ++i)
    if (!s.feed(uint8_t(text[i]))) return i;
  if (complete) *complete = s.complete();
  return text.size();
}
template <class State>
bool takes_whole(State s, const std::string& text) {
  bool complete = false;
  return accepted(std::move(s), text, &complete) == text.size() && complete;
}

// Walks `doc` one byte token at a time (token b is byte b); at every step the constraint allows
// exactly the tokens whose whole text `start` (fed the same bytes) takes, and it ends finished
// (or not, as `finished` says).
template <class Constraint, class State>
void expect_mask_matches_feeding(Constraint& c, State reference, const std::vector<std::string>& texts, const std::string& doc,
                                 bool finished = true) {
  for (size_t pos = 0;; ++pos) {
    std::vector<float> logits(texts.size(), 0.0f);
    c.mask(logits);
    for (size_t id = 0; id < texts.size(); ++id) {
      State st = reference;
      bool want = !texts[id].empty();
      for (char ch : texts[id]) want = want && st.feed(uint8_t(ch));
      ASSERT_EQ(!std::isinf(logits[id]), want) << "token '" << texts[id] << "' after '" << doc.substr(0, pos) << "'";
    }
    if (pos == doc.size()) break;
    c.accept(int32_t(uint8_t(doc[pos])));
    ASSERT_TRUE(reference.feed(uint8_t(doc[pos]))) << doc.substr(0, pos + 1);
  }
  EXPECT_EQ(c.finished(), finished);
}

}  // namespace zinc::engine::test
