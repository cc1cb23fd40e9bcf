#include "cpu/matmul.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace zinc::cpu {
namespace {

TEST(Matmul, F32MatchesNaiveProduct) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t rows = 37, cols = 29, n_tokens = 5;
  std::vector<float> w(rows * cols), x(n_tokens * cols), y(n_tokens * rows);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(2);
  matmul({TensorType::F32, w.data(), rows, cols, size_t(cols) * 4}, x.data(), n_tokens, y.data(), pool);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int64_t k = 0; k < cols; ++k) ref += double(w[r * cols + k]) * x[t * cols + k];
      EXPECT_NEAR(y[t * rows + r], ref, 1e-4) << t << "," << r;
    }
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<int> hits(1001, 0);
  pool.parallel_for(1001, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (int h : hits) EXPECT_EQ(h, 1);
}

}  // namespace
}  // namespace zinc::cpu
