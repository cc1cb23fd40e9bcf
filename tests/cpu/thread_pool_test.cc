#include "cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace zinc::cpu {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 7, 1001}) {
    std::vector<int> hits(size_t(n), 0);
    pool.parallel_for(n, 7, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (int h : hits) EXPECT_EQ(h, 1) << n;
  }
}

TEST(ThreadPool, RunGivesEachThreadItsIndex) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  std::vector<std::atomic<int>> seen(4);
  pool.run([&](int t, int n) {
    EXPECT_EQ(n, 4);
    seen[size_t(t)]++;
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPool, ManyBackToBackDispatches) {
  // Decode calls the pool hundreds of times per token: every call must see all threads finish.
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int i = 0; i < 20000; ++i) pool.run([&](int t, int) { sum += t + 1; });
  EXPECT_EQ(sum.load(), 20000 * 3);
}

TEST(ThreadPool, WakesWorkersThatFellAsleep) {
  ThreadPool pool(3, /*spin_us=*/0);
  std::atomic<int> count{0};
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // workers are asleep now
    pool.run([&](int, int) { count++; });
    EXPECT_EQ(count.load(), 3 * (i + 1));
  }
}

TEST(ThreadPool, ParallelItemsRunsEveryItemOnce) {
  for (int spin_us : {0, ThreadPool::kDefaultSpinUs}) {
    ThreadPool pool(3, spin_us);
    for (int64_t n : {0, 1, 2, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_items(n, [&](int64_t i) { hits[size_t(i)]++; });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << n;
    }
  }
}

TEST(ThreadPool, RunAndParallelItemsInterleave) {
  // Workers late for a parallel_items job must not miss the next run().
  ThreadPool pool(3, /*spin_us=*/1);
  std::atomic<int64_t> items{0}, threads{0};
  for (int i = 0; i < 3000; ++i) {
    pool.parallel_items(2, [&](int64_t) { items++; });
    pool.run([&](int, int) { threads++; });
  }
  EXPECT_EQ(items.load(), 6000);
  EXPECT_EQ(threads.load(), 9000);
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  pool.parallel_for(100, 1, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
  });
}

}  // namespace
}  // namespace zinc::cpu
