// matmul allocates nothing once its buffers are warm (counted by the binary's replaced operator
// new, see alloc_counter.h).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "alloc_counter.h"
#include "cpu/matmul.h"
#include "matmul_test_util.h"

namespace zinc::cpu {
namespace {

TEST(Matmul, NoAllocationOnceWarm) {
  std::mt19937 rng(21);
  const int64_t rows = 300, cols = 512;
  ThreadPool pool(2);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
    const auto w = test_util::random_weights(t, rows, cols, rng);
    const WeightView wv{t, w.data(), rows, cols, row_bytes(t, cols)};
    for (int64_t n_tok : {1, 3, 40}) {
      const auto x = test_util::random_floats(size_t(n_tok * cols), rng);
      std::vector<float> y(size_t(n_tok * rows));
      MatmulInput in(x.data(), n_tok, cols);
      matmul(wv, in, y.data(), pool);  // warm: the buffers grow here
      matmul(wv, x.data(), n_tok, y.data(), pool);
      test::g_allocations = 0;
      test::g_count_allocations = true;
      for (int i = 0; i < 5; ++i) {
        in.reset(x.data(), n_tok, cols);
        matmul(wv, in, y.data(), pool);
        matmul(wv, x.data(), n_tok, y.data(), pool);
      }
      test::g_count_allocations = false;
      EXPECT_EQ(test::g_allocations.load(), 0) << type_name(t) << " n_tokens " << n_tok;
    }
  }
}

}  // namespace
}  // namespace zinc::cpu
