// CPU references for the Vulkan op tests: small graphs run by the CPU executor, so the device
// ops are checked against the CPU ops themselves.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/executor.h"
#include "graph/graph.h"
#include "kv/cache.h"

namespace zinc::vulkan::test {

// A graph weight over caller-owned bytes: ne = [cols, rows, slices] of `type`.
inline graph::Weight graph_weight(TensorType type, const void* data, int64_t cols, int64_t rows = 1,
                                  int64_t slices = 1) {
  graph::Weight w;
  w.name = "test.weight";
  w.type = type;
  w.data = data;
  w.ne = {cols, rows, slices, 1};
  w.row_bytes = row_bytes(type, cols);
  w.slice_bytes = w.row_bytes * size_t(rows);
  return w;
}

struct CpuBatch {
  std::vector<int32_t> tokens, positions, seq_ids, output_rows;
  graph::Batch view() const { return {tokens, positions, seq_ids, output_rows}; }
  void add(int32_t seq, int32_t pos) {
    tokens.push_back(0);
    positions.push_back(pos);
    seq_ids.push_back(seq);
    output_rows.push_back(int32_t(output_rows.size()));
  }
};

inline void fill(cpu::Executor& ex, graph::BufferId id, const std::vector<float>& v) {
  auto dst = ex.mutable_buffer(id);
  ASSERT_GE(dst.size(), v.size());
  std::copy(v.begin(), v.end(), dst.begin());
}

inline std::vector<float> copy_out(const cpu::Executor& ex, graph::BufferId id) {
  const auto s = ex.buffer(id);
  return std::vector<float>(s.begin(), s.end());
}

inline float max_abs(const std::vector<float>& v) {
  float m = 0.f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Every got[i] within tol of want[i] (reports the first few failures).
inline void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol,
                            const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol) && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i] << " tol " << tol;
}

}  // namespace zinc::vulkan::test
