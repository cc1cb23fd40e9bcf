// What the Vulkan benchmarks share: the default device with an uploader, a command buffer and
// two timestamps (BenchDevice, which also fills buffers with random values), and GPU timing:
// `reps` back-to-back recordings of fn(commands, index) with a compute barrier after each (as
// between dependent ops of a step), timed with two timestamps, reported as manual time per op and
// the counters GB/s (bytes_per_op), TFLOP/s (flop_per_op, when given) and us.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "vulkan/weights.h"  // Uploader
#include "vulkan/commands.h"
#include "vulkan/device.h"
#include "vulkan/instance.h"
#include "vulkan/timestamps.h"

namespace zinc::vulkan {

struct BenchDevice {
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Device> device;  // null where there is no Vulkan device
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<Commands> commands;
  std::unique_ptr<TimestampPool> timestamps;  // null where the device has no timestamps

  // Opens the default device and prints its name.
  void open() {
    auto inst = Instance::create();
    if (!inst.ok()) return;
    instance = std::move(*inst);
    auto dev = Device::create(*instance, instance->default_device());
    if (!dev.ok()) return;
    device = std::move(*dev);
    std::fprintf(stderr, "device: %s (%s)\n", device->caps().name.c_str(), device->caps().driver.c_str());
    uploader = std::move(Uploader::create(*device).value());
    commands = std::move(Commands::create(*device).value());
    auto ts = TimestampPool::create(*device, 2);
    if (ts.ok()) timestamps = std::move(*ts);
  }

  // A buffer of `bytes` (the benchmarks' sizes: a failure ends the run).
  std::unique_ptr<Buffer> make_buffer(uint64_t bytes, MemoryKind kind = MemoryKind::kDeviceLocal) const {
    return std::move(Buffer::create(*device, bytes, kind).value());
  }

  // Fills b with normal(0, 1) values from `seed`: floats, or f16 halves with `halves`.
  Status upload_random(const Buffer& b, uint32_t seed, bool halves = false) const {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    if (halves) {
      std::vector<uint16_t> v(b.size_bytes() / 2);
      for (auto& x : v) x = f32_to_fp16(nd(rng));
      return uploader->upload(b, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 2});
    }
    std::vector<float> v(b.size_bytes() / 4);
    for (float& x : v) x = nd(rng);
    return uploader->upload(b, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
  }
};

// The benchmark binary's context C (a BenchDevice): opened, then set up by init(C&) where a device
// opened; init returning false drops the device (the cases then skip).
template <typename C, typename Init>
C* open_context(Init&& init) {
  auto* c = new C();
  c->open();
  if (c->device && !init(*c)) c->device.reset();
  return c;
}

// A rows x cols matrix of `type` as stored in GGUF: 64 random rows, repeated (the kernels' speed
// does not depend on the values).
inline std::vector<uint8_t> repeated_random_rows(TensorType type, int64_t rows, int64_t cols) {
  const size_t rb = row_bytes(type, cols);
  std::vector<float> src(static_cast<size_t>(cols));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<uint8_t> block(rb * 64);
  for (int r = 0; r < 64; ++r) {
    for (auto& v : src) v = nd(rng);
    quantize_row(type, src.data(), block.data() + rb * r, cols);
  }
  std::vector<uint8_t> data(rb * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(data.data() + rb * r, block.data() + rb * (r % 64), rb);
  return data;
}

// Iterations of every GPU-timed benchmark. Their manual time is the GPU time of one op, a few
// microseconds, so the library's minimum-time rule would run thousands of submissions (each a
// host round trip of `reps` ops) per case; 20 give the mean of 20 * reps ops.
constexpr int kGpuIterations = 20;

// A registered GPU-timed case: manual time in microseconds over kGpuIterations iterations.
inline void gpu_timed(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Iterations(kGpuIterations)->Unit(benchmark::kMicrosecond);
}

// Keeps the GPU busy for about `ms` milliseconds with recordings of record(commands) (16 a
// submit, a compute barrier after each, untimed), so that the timed runs after it meet raised
// clocks: a benchmark that uploads weights between cases lets the GPU idle, and an H100 then ran
// its next cases at 345 MHz instead of 1980.
template <typename Fn>
Status warm_clocks(Commands& commands, Fn&& record, double ms = 100) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < until) {
    ZINC_RETURN_IF_ERROR(commands.begin());
    for (int r = 0; r < 16; ++r) {
      ZINC_RETURN_IF_ERROR(record(commands));
      commands.compute_barrier();
    }
    ZINC_RETURN_IF_ERROR(commands.end());
    ZINC_RETURN_IF_ERROR(commands.submit_and_wait());
  }
  return ok_status();
}

template <typename Fn>
void time_gpu(benchmark::State& state, Commands& commands, const TimestampPool* timestamps, int reps,
              double bytes_per_op, double flop_per_op, Fn&& fn) {
  if (!timestamps) return state.SkipWithError("no Vulkan device with timestamps");
  int warm_index = 0;
  if (const Status s = warm_clocks(commands, [&](Commands& c) { return fn(c, warm_index++); }, 20); !s.ok())
    return state.SkipWithError(s.message().c_str());
  double total_s = 0;
  int64_t ops = 0;
  int index = 0;
  for (auto _ : state) {
    if (!commands.begin().ok()) return state.SkipWithError("begin");
    commands.reset_queries(timestamps->handle(), 0, 2);
    commands.write_timestamp(timestamps->handle(), 0);
    for (int r = 0; r < reps; ++r) {
      const Status s = fn(commands, index++);
      if (!s.ok()) return state.SkipWithError(s.message().c_str());
      commands.compute_barrier();
    }
    commands.write_timestamp(timestamps->handle(), 1);
    if (!commands.end().ok() || !commands.submit_and_wait().ok()) return state.SkipWithError("submit");
    const double s = timestamps->elapsed_ns(0, 1).value() * 1e-9;
    state.SetIterationTime(s / reps);
    total_s += s;
    ops += reps;
  }
  state.counters["GB/s"] = bytes_per_op * double(ops) / total_s * 1e-9;
  if (flop_per_op > 0) state.counters["TFLOP/s"] = flop_per_op * double(ops) / total_s * 1e-12;
  state.counters["us"] = total_s / double(ops) * 1e6;
}

}  // namespace zinc::vulkan
