// The prefix cache over a small kv::Cache: longest-prefix adoption, LRU beyond max_entries, idle
// entries dropped, eviction to free pages, entries replaced by their extensions; for hybrid
// layouts, snapshots that bring back their recurrent state.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

namespace zinc::engine {
namespace {

using namespace std::chrono_literals;

graph::StateLayout one_layer() {
  graph::StateLayout s;
  s.kv_layers = {{1, 4, 4}};
  return s;
}

// A sequence holding `tokens` (its K/V content does not matter here).
kv::SeqId fill(kv::Cache& c, const std::vector<int32_t>& tokens) {
  const kv::SeqId s = c.add_sequence().value();
  EXPECT_TRUE(c.reserve(s, int64_t(tokens.size())).ok());
  c.set_length(s, int64_t(tokens.size()));
  return s;
}

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(PrefixCache, AdoptsTheLongestCommonPrefix) {
  auto c = kv::Cache::create(one_layer(), {64, 4, kv::KvType::kF16}).value();
  PrefixCache pc(*c);
  const auto a = range(0, 40), b = range(100, 20);
  for (const auto& t : {a, b}) {
    const kv::SeqId s = fill(*c, t);
    pc.insert(s, t);
    c->remove_sequence(s);
  }
  EXPECT_EQ(pc.size(), 2u);
  auto prompt = range(0, 35);
  prompt.push_back(999);
  const kv::SeqId s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, prompt, int64_t(prompt.size()) - 1), 35);
  EXPECT_EQ(c->length(s), 35);
  c->remove_sequence(s);
  const kv::SeqId t = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(t, range(500, 10), 9), 0);  // nothing in common
  EXPECT_EQ(c->length(t), 0);
  c->remove_sequence(t);
  pc.clear();
  EXPECT_EQ(c->free_pages(), 64);
}

TEST(PrefixCache, LruIdleAndEviction) {
  auto c = kv::Cache::create(one_layer(), {64, 2, kv::KvType::kF16}).value();
  PrefixCache pc(*c, /*max_entries=*/3, /*max_idle=*/30min);
  const auto t0 = PrefixCache::Clock::now();
  for (int32_t i = 0; i < 4; ++i) {  // 4 conversations of 2 pages: the oldest is dropped
    const auto toks = range(i * 1000, 32);
    const kv::SeqId s = fill(*c, toks);
    pc.insert(s, toks, t0 + std::chrono::minutes(i));
    c->remove_sequence(s);
  }
  EXPECT_EQ(pc.size(), 3u);
  EXPECT_EQ(c->free_pages(), 64 - 6);
  const kv::SeqId s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, range(0, 20), 19, t0 + 5min), 0);  // conversation 0 is gone
  c->remove_sequence(s);
  // 31 minutes after conversation 1 was last used, it is dropped at the next lookup.
  const kv::SeqId u = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(u, range(3000, 20), 19, t0 + 32min), 19);
  EXPECT_EQ(pc.size(), 2u);
  c->remove_sequence(u);
  // Asking for more pages than are free drops entries, least recently used first.
  EXPECT_TRUE(pc.evict_for(c->free_pages() + 1));
  EXPECT_EQ(pc.size(), 1u);
  EXPECT_FALSE(pc.evict_for(65));
  EXPECT_EQ(pc.size(), 0u);
  EXPECT_EQ(c->free_pages(), 64);
}

TEST(PrefixCache, ExtensionsReplaceTheirPrefixes) {
  auto c = kv::Cache::create(one_layer(), {64, 2, kv::KvType::kF16}).value();
  PrefixCache pc(*c);
  const auto turn1 = range(0, 20), turn2 = range(0, 50);
  kv::SeqId s = fill(*c, turn1);
  pc.insert(s, turn1);
  c->remove_sequence(s);
  s = fill(*c, turn2);
  pc.insert(s, turn2);
  c->remove_sequence(s);
  EXPECT_EQ(pc.size(), 1u);  // the first turn is inside the second
  EXPECT_EQ(c->free_pages(), 64 - 4);
}

graph::StateLayout hybrid() {
  auto layout = one_layer();
  layout.recurrent_layers = {{8, 16}};  // 24 floats of state a sequence
  return layout;
}

// A sequence of a hybrid layout holding `tokens`, its state marked by `tag`.
kv::SeqId fill_state(kv::Cache& c, const std::vector<int32_t>& tokens, float tag) {
  const kv::SeqId s = fill(c, tokens);
  auto state = c.recurrent_state(s);
  for (size_t i = 0; i < state.size(); ++i) state[i] = tag + float(i);
  return s;
}

TEST(PrefixCache, RecurrentLayoutsAdoptWholeSnapshotsWithTheirState) {
  auto c = kv::Cache::create(hybrid(), {64, 2, kv::KvType::kF16}).value();
  PrefixCache pc(*c);
  ASSERT_TRUE(pc.enabled() && pc.snapshots_state());
  const auto history = range(0, 20), longer = range(0, 37);
  kv::SeqId s = fill_state(*c, history, 100);
  pc.insert(s, history);
  c->remove_sequence(s);
  s = fill_state(*c, longer, 200);
  pc.insert(s, longer);
  c->remove_sequence(s);
  EXPECT_EQ(pc.size(), 2u);  // the longer snapshot does not replace the shorter
  EXPECT_EQ(pc.state_bytes(), 2 * 24 * sizeof(float));

  // A prompt that leaves the longer entry at token 30 resumes at the shorter one's end, state and all.
  auto prompt = range(0, 30);
  prompt.push_back(999);
  s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, prompt, int64_t(prompt.size()) - 1), 20);
  EXPECT_EQ(c->length(s), 20);
  EXPECT_EQ(c->recurrent_state(s)[0], 100.0f);
  EXPECT_EQ(c->recurrent_state(s)[23], 123.0f);
  c->remove_sequence(s);
  // One that holds all of the longer entry resumes there; no entry fits within max_tokens 10.
  s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, range(0, 60), 59), 37);
  EXPECT_EQ(c->recurrent_state(s)[5], 205.0f);
  c->remove_sequence(s);
  s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, range(0, 60), 10), 0);
  EXPECT_EQ(c->length(s), 0);
  EXPECT_EQ(c->recurrent_state(s)[5], 0.0f);
  c->remove_sequence(s);
  pc.clear();
  EXPECT_EQ(c->free_pages(), 64);
  EXPECT_EQ(pc.state_bytes(), 0u);
}

TEST(PrefixCache, SnapshotsOfALiveSequenceKeepTheirRows) {
  auto c = kv::Cache::create(hybrid(), {64, 2, kv::KvType::kF32}).value();
  PrefixCache pc(*c);
  const kv::SeqId s = fill_state(*c, range(0, 20), 7);
  for (int64_t pos = 0; pos < 20; ++pos) *reinterpret_cast<float*>(c->k_at(0, s, pos)) = float(pos);
  pc.insert(s, range(0, 20));
  // The sequence goes on in the page it shares with the snapshot.
  ASSERT_TRUE(c->reserve(s, 30).ok());
  for (int64_t pos = 20; pos < 30; ++pos) *reinterpret_cast<float*>(c->k_at(0, s, pos)) = -1.0f;
  c->set_length(s, 30);
  const kv::SeqId t = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(t, range(0, 25), 24), 20);
  for (int64_t pos = 0; pos < 20; ++pos) EXPECT_EQ(*reinterpret_cast<float*>(c->k_at(0, t, pos)), float(pos)) << pos;
  EXPECT_EQ(c->recurrent_state(t)[1], 8.0f);
  c->remove_sequence(s);
  c->remove_sequence(t);
}

TEST(PrefixCache, SnapshotsStayWithinTheirMemory) {
  auto c = kv::Cache::create(hybrid(), {64, 2, kv::KvType::kF16}).value();
  const size_t state = 24 * sizeof(float);
  PrefixCache pc(*c, 64, std::chrono::minutes(30), 2 * state + 1);
  const auto t0 = PrefixCache::Clock::now();
  for (int32_t i = 0; i < 3; ++i) {
    const auto toks = range(i * 100, 16);
    const kv::SeqId s = fill_state(*c, toks, float(i));
    pc.insert(s, toks, t0 + std::chrono::seconds(i));
    c->remove_sequence(s);
  }
  EXPECT_EQ(pc.size(), 2u);  // the oldest made room
  EXPECT_EQ(pc.state_bytes(), 2 * state);
  const kv::SeqId s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, range(0, 20), 19), 0);
  c->remove_sequence(s);

  PrefixCache none(*c, 64, std::chrono::minutes(30), state - 1);  // not even one fits
  EXPECT_FALSE(none.enabled());
  const kv::SeqId u = fill_state(*c, range(0, 20), 1);
  none.insert(u, range(0, 20));
  EXPECT_EQ(none.size(), 0u);
  c->remove_sequence(u);
}

TEST(PrefixCache, AStateThatCannotBeReadOrRestoredIsNotUsed) {
  auto c = kv::Cache::create(hybrid(), {64, 2, kv::KvType::kF16}).value();
  PrefixCache pc(*c);
  bool fail_save = true;
  pc.set_state_io({[&](kv::SeqId) -> Result<std::vector<float>> {
                     if (fail_save) return error("device lost");
                     return std::vector<float>(24, 3.0f);
                   },
                   [&](kv::SeqId, std::span<const float>) { return error("device lost"); }});
  kv::SeqId s = fill_state(*c, range(0, 20), 0);
  pc.insert(s, range(0, 20));
  EXPECT_EQ(pc.size(), 0u);
  fail_save = false;
  pc.insert(s, range(0, 20));
  EXPECT_EQ(pc.size(), 1u);
  c->remove_sequence(s);
  s = c->add_sequence().value();
  EXPECT_EQ(pc.adopt(s, range(0, 30), 29), 0);  // restoring failed: the sequence starts over
  EXPECT_EQ(c->length(s), 0);
  EXPECT_TRUE(c->page_table(s).empty());
  c->remove_sequence(s);
}

}  // namespace
}  // namespace zinc::engine
