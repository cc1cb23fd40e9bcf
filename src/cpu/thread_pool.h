// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of n threads starts n-1 workers. Not reentrant: one parallel_for at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zinc::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Runs fn(thread_index, n_threads) on every thread and returns when all are done.
  void run(const std::function<void(int thread, int n_threads)>& fn);
  // Splits [0, n) into contiguous chunks of at least `grain` and runs fn(begin, end) on them.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int, int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace zinc::cpu
