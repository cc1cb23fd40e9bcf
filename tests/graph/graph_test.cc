#include "graph/graph.h"

#include <gtest/gtest.h>

#include <random>

namespace zinc::graph {
namespace {

// Live buffers never share bytes; dead ones do get reused.
TEST(PlanBuffers, LiveBuffersNeverOverlapAndMemoryIsReused) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Buffer> bufs(40);
    for (auto& b : bufs) {
      b.rows = 1 + rng() % 8;
      b.cols = 1 + rng() % 500;
      b.first_op = int32_t(rng() % 100);
      b.last_op = b.first_op + int32_t(rng() % 10);
    }
    bufs[3].first_op = bufs[3].last_op = -1;  // unused
    const size_t arena = plan_buffers(bufs);
    size_t total = 0;
    for (size_t i = 0; i < bufs.size(); ++i) {
      const Buffer& a = bufs[i];
      if (a.first_op < 0) continue;
      total += a.size_bytes();
      EXPECT_EQ(a.offset_bytes % kBufferAlignment, 0u);
      EXPECT_LE(a.offset_bytes + a.size_bytes(), arena);
      for (size_t j = i + 1; j < bufs.size(); ++j) {
        const Buffer& b = bufs[j];
        if (b.first_op < 0) continue;
        const bool live_together = a.first_op <= b.last_op && b.first_op <= a.last_op;
        const bool share = a.offset_bytes < b.offset_bytes + b.size_bytes() && b.offset_bytes < a.offset_bytes + a.size_bytes();
        EXPECT_FALSE(live_together && share) << "buffers " << i << " and " << j;
      }
    }
    EXPECT_LT(arena, total);  // 40 buffers over 100 ops: plenty of reuse
  }
}

Weight f32_weight(std::vector<float>& data, int64_t cols, int64_t rows) {
  Weight w;
  w.name = "w";
  w.type = TensorType::F32;
  w.data = data.data();
  w.ne = {cols, rows, 1, 1};
  w.row_bytes = size_t(cols) * 4;
  w.slice_bytes = w.row_bytes * size_t(rows);
  return w;
}

TEST(GraphBuilder, PlansAChainWithReuseAndKeepsTheOutputToTheEnd) {
  std::vector<float> data(16 * 16, 0.5f);
  Weight w = f32_weight(data, 16, 16);
  GraphBuilder g({4, 4}, {});
  BufferId x = g.input("x", 16);
  BufferId cur = x;
  for (int i = 0; i < 6; ++i) {
    BufferId next = g.buffer("h" + std::to_string(i), 16);
    g.add("mm" + std::to_string(i), Matmul{cur, next, &w});
    cur = next;
  }
  Graph graph = g.finish(cur);
  EXPECT_EQ(graph.ops().size(), 6u);
  EXPECT_EQ(graph.buffer(x).first_op, 0);
  EXPECT_EQ(graph.buffer(graph.output()).last_op, 6);  // read after the last op
  EXPECT_LT(graph.arena_bytes(), graph.unplanned_bytes());
  EXPECT_EQ(graph.find_buffer("h3").index, 4);
  EXPECT_FALSE(graph.find_buffer("nope").valid());
  EXPECT_STREQ(op_kind_name(graph.ops()[0].params), "matmul");
}

TEST(GraphBuilderDeathTest, RejectsAShapeMismatchNamingTheOp) {
  std::vector<float> data(16 * 8, 0.5f);
  Weight w = f32_weight(data, 16, 8);
  GraphBuilder g({2, 2}, {});
  BufferId x = g.input("x", 12);  // W wants 16 columns
  BufferId y = g.buffer("y", 8);
  EXPECT_DEATH(g.add("blk.0.attn_q", Matmul{x, y, &w}), "blk.0.attn_q.*in cols = w cols");
}

TEST(GraphBuilderDeathTest, RejectsAttentionOnAMissingKvLayer) {
  GraphBuilder g({1, 1}, {});
  BufferId q = g.input("q", 8);
  BufferId o = g.buffer("o", 8);
  Attention a;
  a.q = q;
  a.q_heads = HeadLayout::packed(2, 4);
  a.out = o;
  a.kv_layer = 0;
  EXPECT_DEATH(g.add("att", a), "kv layer index");
}

}  // namespace
}  // namespace zinc::graph
