// matmul allocates nothing once its buffers are warm: this binary's operator new counts calls
// while a test arms it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "cpu/matmul.h"
#include "matmul_test_util.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

// GCC cannot tell that these replace the global pair, and warns about free() on new'd memory.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

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
      g_allocations = 0;
      g_counting = true;
      for (int i = 0; i < 5; ++i) {
        in.reset(x.data(), n_tok, cols);
        matmul(wv, in, y.data(), pool);
        matmul(wv, x.data(), n_tok, y.data(), pool);
      }
      g_counting = false;
      EXPECT_EQ(g_allocations.load(), 0) << type_name(t) << " n_tokens " << n_tok;
    }
  }
}

}  // namespace
}  // namespace zinc::cpu
