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

// Waits until `word` differs from `old` and returns the new value: polls with a pause for the
// first quarter of spin_ns, then yields the CPU between polls (another thread may need this core,
// possibly the one we wait for), then sleeps on the futex.
uint32_t wait_for_change(const std::atomic<uint32_t>& word, uint32_t old, int64_t spin_ns) {
  uint32_t v = word.load(std::memory_order_acquire);
  if (v != old) return v;
  if (spin_ns > 0) {
    const int64_t start = now_ns();
    for (int i = 1;; ++i) {
      if ((i & 63) == 0) {
        const int64_t waited = now_ns() - start;
        if (waited > spin_ns) break;
        if (waited > spin_ns / 4) std::this_thread::yield();
      }
      ZINC_CPU_RELAX();
      v = word.load(std::memory_order_acquire);
      if (v != old) return v;
    }
  }
  for (;;) {
    word.wait(old, std::memory_order_acquire);
    v = word.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

// gate_ low word: which kind of job the current generation is, whether it still takes workers,
// and how many joined.
constexpr uint64_t kItemsJob = uint64_t(1) << 31;
constexpr uint64_t kClosed = uint64_t(1) << 30;
constexpr uint64_t kJoinedMask = kClosed - 1;

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
    uint64_t gate = gate_.load(std::memory_order_acquire);
    if (uint32_t(gate >> 32) != seen) continue;  // that job is over already: look again
    if (!(gate & kItemsJob)) {
      // run(): every thread takes part, and the caller waits for all of them.
      (*all_job_)(index, n_threads_);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
      continue;
    }
    // parallel_items(): join unless the caller has closed the job.
    bool joined = false;
    while (uint32_t(gate >> 32) == seen && !(gate & kClosed)) {
      if (gate_.compare_exchange_weak(gate, gate + 1, std::memory_order_acq_rel)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    run_items(*items_job_, n_items_);
    left_.fetch_add(1, std::memory_order_acq_rel);
    left_.notify_one();
  }
}

void ThreadPool::run(FunctionRef<void(int, int)> fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  all_job_ = &fn;
  pending_.store(uint32_t(n_threads_ - 1), std::memory_order_relaxed);
  const uint32_t g = generation_.load(std::memory_order_relaxed) + 1;
  gate_.store(uint64_t(g) << 32, std::memory_order_release);
  generation_.store(g, std::memory_order_release);
  generation_.notify_all();
  fn(0, n_threads_);
  for (uint32_t left = pending_.load(std::memory_order_acquire); left != 0;) {
    left = wait_for_change(pending_, left, spin_ns_);
  }
  all_job_ = nullptr;
}

void ThreadPool::run_items(const FunctionRef<void(int64_t)>& fn, int64_t n_items) {
  for (int64_t i; (i = next_item_.fetch_add(1, std::memory_order_relaxed)) < n_items;) fn(i);
}

void ThreadPool::parallel_items(int64_t n_items, FunctionRef<void(int64_t)> fn) {
  if (n_items <= 0) return;
  if (n_threads_ == 1 || n_items == 1) {
    for (int64_t i = 0; i < n_items; ++i) fn(i);
    return;
  }
  items_job_ = &fn;
  n_items_ = n_items;
  next_item_.store(0, std::memory_order_relaxed);
  left_.store(0, std::memory_order_relaxed);
  const uint32_t g = generation_.load(std::memory_order_relaxed) + 1;
  gate_.store(uint64_t(g) << 32 | kItemsJob, std::memory_order_release);
  generation_.store(g, std::memory_order_release);
  generation_.notify_all();
  run_items(fn, n_items);
  // No item is left to take: close the job, then wait for the workers that joined it.
  const uint32_t joined = uint32_t(gate_.fetch_or(kClosed, std::memory_order_acq_rel) & kJoinedMask);
  for (uint32_t done = left_.load(std::memory_order_acquire); done != joined;) {
    done = wait_for_change(left_, done, spin_ns_);
  }
  items_job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t n_chunks = std::min<int64_t>(n_threads_, (n + grain - 1) / grain);
  if (n_chunks <= 1) {
    fn(0, n);
    return;
  }
  // Chunks as items: a chunk whose thread is late is run by one that is not.
  parallel_items(n_chunks, [&](int64_t c) { fn(n * c / n_chunks, n * (c + 1) / n_chunks); });
}

}  // namespace zinc::cpu
