// The prefix cache over a small kv::Cache: longest-prefix adoption, LRU beyond max_entries, idle
// entries dropped, eviction to free pages, entries replaced by their extensions, hybrid layouts off.
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

TEST(PrefixCache, OffForRecurrentLayouts) {
  auto layout = one_layer();
  layout.recurrent_layers = {{8, 16}};
  auto c = kv::Cache::create(layout, {16, 2, kv::KvType::kF16}).value();
  PrefixCache pc(*c);
  EXPECT_FALSE(pc.enabled());
  const kv::SeqId s = fill(*c, range(0, 20));
  pc.insert(s, range(0, 20));
  EXPECT_EQ(pc.size(), 0u);
}

}  // namespace
}  // namespace zinc::engine
