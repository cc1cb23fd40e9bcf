// Helpers for op tests: build a small graph, fill its inputs with random values, run it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "cpu/executor.h"
#include "graph/graph.h"
#include "kv/cache.h"

namespace zinc::cpu::test {

inline std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A float32 weight over caller-owned data.
inline graph::Weight weight(const std::vector<float>& data, int64_t cols, int64_t rows = 1, int64_t slices = 1) {
  graph::Weight w;
  w.name = "test.weight";
  w.type = TensorType::F32;
  w.data = data.data();
  w.ne = {cols, rows, slices, 1};
  w.row_bytes = size_t(cols) * 4;
  w.slice_bytes = w.row_bytes * size_t(rows);
  return w;
}

inline void fill(Executor& ex, graph::BufferId id, const std::vector<float>& values) {
  auto dst = ex.mutable_buffer(id);
  ASSERT_EQ(dst.size(), values.size());
  std::copy(values.begin(), values.end(), dst.begin());
}

// Batch storage for tests.
struct TestBatch {
  std::vector<int32_t> tokens, positions, seq_ids, output_rows;
  graph::Batch view() const { return {tokens, positions, seq_ids, output_rows}; }
  void add(int32_t seq, int32_t pos, int32_t token = 0) {
    tokens.push_back(token);
    positions.push_back(pos);
    seq_ids.push_back(seq);
    output_rows.push_back(int32_t(output_rows.size()));
  }
};

}  // namespace zinc::cpu::test
