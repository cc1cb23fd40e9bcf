#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ZINC_CPU_RELAX() _mm_pause()
#else
#define ZINC_CPU_RELAX() std::this_thread::yield()
#endif

namespace zinc::cpu {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Polls `word` until it differs from `old` or spin_ns elapsed, then sleeps on it (futex).
// Returns the new value.
uint32_t wait_for_change(const std::atomic<uint32_t>& word, uint32_t old, int64_t spin_ns) {
  uint32_t v = word.load(std::memory_order_acquire);
  if (v != old) return v;
  const int64_t deadline = spin_ns > 0 ? now_ns() + spin_ns : 0;
  for (int i = 1; spin_ns > 0; ++i) {
    ZINC_CPU_RELAX();
    v = word.load(std::memory_order_acquire);
    if (v != old) return v;
    if ((i & 63) == 0 && now_ns() > deadline) break;
  }
  for (;;) {
    word.wait(old, std::memory_order_acquire);
    v = word.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, int spin_us) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  spin_ns_ = int64_t(std::max(0, spin_us)) * 1000;
  workers_.reserve(size_t(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen, spin_ns_);
    if (stop_.load(std::memory_order_relaxed)) return;
    (*job_)(index, n_threads_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(FunctionRef<void(int, int)> fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(uint32_t(n_threads_ - 1), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(0, n_threads_);
  for (uint32_t left = pending_.load(std::memory_order_acquire); left != 0;) {
    left = wait_for_change(pending_, left, spin_ns_);
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int n_used = int(std::min<int64_t>(n_threads_, max_chunks));
  if (n_used <= 1) {
    fn(0, n);
    return;
  }
  run([&](int t, int) {
    if (t >= n_used) return;
    const int64_t begin = n * t / n_used, end = n * (t + 1) / n_used;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace zinc::cpu
