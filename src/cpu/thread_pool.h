// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of n threads starts n-1 workers. Not reentrant: one call at a time, from one thread.
// Dispatch is cheap (no allocation, no lock): idle workers poll for `spin_us` (first pausing,
// then yielding the core) before sleeping on a futex, so back-to-back calls (hundreds per decoded
// token) find them awake.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace zinc::cpu {

// A non-owning reference to a callable (no allocation). The callable must outlive the call.
template <class Sig>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, A...>)
      FunctionRef(F&& f)  // NOLINT: implicit on purpose, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))), call_([](void* obj, A... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<A>(args)...);
        }) {}
  R operator()(A... args) const { return call_(obj_, std::forward<A>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

class ThreadPool {
 public:
  static constexpr int kDefaultSpinUs = 200;
  // n_threads <= 0: one per hardware thread. spin_us: how long an idle worker polls for work.
  explicit ThreadPool(int n_threads, int spin_us = kDefaultSpinUs);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Runs fn(thread_index, n_threads) on every thread and returns when all are done.
  void run(FunctionRef<void(int thread, int n_threads)> fn);
  // Splits [0, n) into at most size() contiguous chunks of at least `grain` and runs fn(begin, end)
  // on each, handed out like parallel_items.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t begin, int64_t end)> fn);
  // Runs fn(i) for every i in [0, n_items), each item taken by whichever thread is free; returns
  // when all are done. Workers that wake up after the caller has taken the last item stay out, so
  // a busy or preempted core never delays the call by more than the item it is running.
  void parallel_items(int64_t n_items, FunctionRef<void(int64_t item)> fn);

 private:
  void worker(int index);
  void run_items(const FunctionRef<void(int64_t)>& fn, int64_t n_items);

  int n_threads_;
  int64_t spin_ns_;
  std::vector<std::thread> workers_;
  // The current job, written by the caller before generation_ is bumped. gate_ says which job the
  // workers may take: [generation:32 | kind, closed and joined-count bits:32] (see .cc).
  const FunctionRef<void(int, int)>* all_job_ = nullptr;
  const FunctionRef<void(int64_t)>* items_job_ = nullptr;
  int64_t n_items_ = 0;
  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped once per job (futex word)
  alignas(64) std::atomic<uint64_t> gate_{0};
  alignas(64) std::atomic<int64_t> next_item_{0};
  alignas(64) std::atomic<uint32_t> pending_{0};  // run(): workers still running (futex word)
  alignas(64) std::atomic<uint32_t> left_{0};     // parallel_items(): joined workers done (futex word)
  std::atomic<bool> stop_{false};
};

}  // namespace zinc::cpu
