#include "kv/cache.h"

#include <gtest/gtest.h>

#include <set>

namespace zinc::kv {
namespace {

graph::StateLayout two_layers() {
  graph::StateLayout s;
  s.kv_layers = {{2, 8, 8}, {1, 4, 6}};
  s.recurrent_layers = {{12, 40}};
  return s;
}

TEST(Cache, PagesComeFromOnePoolAndReturnToIt) {
  auto c = Cache::create(two_layers(), {8, 3, KvType::kF16});
  ASSERT_TRUE(c.ok()) << c.status().message();
  Cache& cache = **c;
  EXPECT_EQ(cache.free_pages(), 8);
  auto a = cache.add_sequence(), b = cache.add_sequence();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(cache.reserve(*a, 17).ok());  // 2 pages
  ASSERT_TRUE(cache.reserve(*b, 16).ok());  // 1 page
  EXPECT_EQ(cache.free_pages(), 5);
  EXPECT_EQ(cache.capacity(*a), 32);
  ASSERT_TRUE(cache.reserve(*a, 20).ok());  // still 2 pages
  EXPECT_EQ(cache.free_pages(), 5);
  std::set<int32_t> pages;
  for (int32_t p : cache.page_table(*a)) pages.insert(p);
  for (int32_t p : cache.page_table(*b)) pages.insert(p);
  EXPECT_EQ(pages.size(), 3u);  // no page is shared
  cache.remove_sequence(*a);
  EXPECT_EQ(cache.free_pages(), 7);
  EXPECT_FALSE(cache.has_sequence(*a));
}

TEST(Cache, FullPoolIsAStatusAndChangesNothing) {
  auto c = Cache::create(two_layers(), {3, 2, KvType::kF16});
  ASSERT_TRUE(c.ok());
  Cache& cache = **c;
  auto a = cache.add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(cache.reserve(*a, 32).ok());
  Status s = cache.reserve(*a, 64);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("KV cache full"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("needs 2 more pages"), std::string::npos) << s.message();
  EXPECT_EQ(cache.capacity(*a), 32);
  EXPECT_EQ(cache.free_pages(), 1);
}

TEST(Cache, SequenceSlotsRunOut) {
  auto c = Cache::create(two_layers(), {4, 1, KvType::kF32});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->add_sequence().ok());
  auto second = (*c)->add_sequence();
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("all 1 sequence slots"), std::string::npos);
}

TEST(Cache, RowsAreDisjointAcrossLayersSlotsAndPages) {
  for (KvType type : {KvType::kF16, KvType::kF32}) {
    auto c = Cache::create(two_layers(), {4, 1, type});
    ASSERT_TRUE(c.ok());
    Cache& cache = **c;
    const size_t elt = type == KvType::kF16 ? 2 : 4;
    EXPECT_EQ(cache.pool_bytes(), 4u * 16 * (16 + 16 + 4 + 6) * elt);
    struct Range {
      uint8_t* begin;
      size_t n;
    };
    std::vector<Range> rows;
    for (int32_t page = 0; page < 4; ++page)
      for (int32_t slot = 0; slot < kPageTokens; ++slot)
        for (int32_t layer = 0; layer < 2; ++layer) {
          rows.push_back({cache.k_row(layer, page, slot), size_t(layer == 0 ? 16 : 4) * elt});
          rows.push_back({cache.v_row(layer, page, slot), size_t(layer == 0 ? 16 : 6) * elt});
        }
    std::sort(rows.begin(), rows.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i].begin, rows[i - 1].begin + rows[i - 1].n);
  }
}

TEST(Cache, PositionsMapThroughThePageTable) {
  auto c = Cache::create(two_layers(), {6, 2, KvType::kF16});
  ASSERT_TRUE(c.ok());
  Cache& cache = **c;
  auto a = cache.add_sequence(), b = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(*a, 16).ok());
  ASSERT_TRUE(cache.reserve(*b, 16).ok());
  ASSERT_TRUE(cache.reserve(*a, 40).ok());  // a's pages are not contiguous
  const auto pages = cache.page_table(*a);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(cache.k_at(1, *a, 0), cache.k_row(1, pages[0], 0));
  EXPECT_EQ(cache.k_at(1, *a, 17), cache.k_row(1, pages[1], 1));
  EXPECT_EQ(cache.v_at(0, *a, 39), cache.v_row(0, pages[2], 7));
  cache.set_length(*a, 40);
  EXPECT_EQ(cache.length(*a), 40);
}

TEST(Cache, RecurrentStateIsPerSequenceAndZeroedOnReuse) {
  auto c = Cache::create(two_layers(), {2, 2, KvType::kF16});
  ASSERT_TRUE(c.ok());
  Cache& cache = **c;
  auto a = cache.add_sequence(), b = cache.add_sequence();
  float* ca = cache.conv_state(0, *a);
  float* sb = cache.ssm_state(0, *b);
  EXPECT_NE(ca, cache.conv_state(0, *b));
  for (int i = 0; i < 12; ++i) ca[i] = 1.f;
  for (int i = 0; i < 40; ++i) sb[i] = 2.f;
  EXPECT_EQ(cache.ssm_state(0, *a)[0], 0.f);
  cache.remove_sequence(*a);
  auto again = cache.add_sequence();
  ASSERT_TRUE(again.ok());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(cache.conv_state(0, *again)[i], 0.f);
  EXPECT_EQ(cache.ssm_state(0, *b)[39], 2.f);
  cache.clear(*b);
  EXPECT_EQ(cache.ssm_state(0, *b)[39], 0.f);
}

// A retained prefix keeps its pages after the sequence ends; a new sequence shares its full pages
// and gets a copy of the partly filled last one; pages return to the pool with their last holder.
TEST(Cache, RetainedPrefixIsSharedAndCopied) {
  auto c = Cache::create(two_layers(), {8, 3, KvType::kF32});
  ASSERT_TRUE(c.ok());
  Cache& cache = **c;
  auto a = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(*a, 40).ok());  // 3 pages
  cache.set_length(*a, 40);
  for (int64_t pos = 0; pos < 40; ++pos)
    for (int32_t l = 0; l < 2; ++l) {
      reinterpret_cast<float*>(cache.k_at(l, *a, pos))[0] = float(pos * 10 + l);
      reinterpret_cast<float*>(cache.v_at(l, *a, pos))[0] = float(-pos * 10 - l);
    }
  std::vector<int32_t> kept = cache.retain_prefix(*a, 40);
  ASSERT_EQ(kept.size(), 3u);
  cache.remove_sequence(*a);
  EXPECT_EQ(cache.free_pages(), 5);  // the prefix still holds its 3 pages

  auto b = cache.add_sequence();
  ASSERT_TRUE(cache.adopt_prefix(*b, kept, 37).ok());
  EXPECT_EQ(cache.length(*b), 37);
  EXPECT_EQ(cache.free_pages(), 4);  // one page copied
  EXPECT_EQ(cache.page_table(*b)[0], kept[0]);
  EXPECT_EQ(cache.page_table(*b)[1], kept[1]);
  EXPECT_NE(cache.page_table(*b)[2], kept[2]);
  EXPECT_EQ(cache.page_refs(kept[0]), 2);
  for (int64_t pos = 0; pos < 37; ++pos)
    for (int32_t l = 0; l < 2; ++l) {
      EXPECT_EQ(reinterpret_cast<float*>(cache.k_at(l, *b, pos))[0], float(pos * 10 + l));
      EXPECT_EQ(reinterpret_cast<float*>(cache.v_at(l, *b, pos))[0], float(-pos * 10 - l));
    }
  cache.release_pages(kept);
  EXPECT_EQ(cache.free_pages(), 5);  // b still holds two shared pages and its copy
  cache.remove_sequence(*b);
  EXPECT_EQ(cache.free_pages(), 8);
}

}  // namespace
}  // namespace zinc::kv
