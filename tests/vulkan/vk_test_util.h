// Shared by the Vulkan op tests: one device per test binary, host-visible buffers, random
// quantized matrices and their float32 reference.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/quant.h"
#include "graph/ops.h"
#include "vulkan/commands.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::test {

struct Env {
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Device> device;
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<Commands> commands;
};

// The default device (lavapipe in CI), made on first use; null with a message when there is none.
inline Env* env() {
  static Env* e = [] {
    auto* r = new Env();
    auto inst = Instance::create();
    if (!inst.ok()) return r;
    r->instance = std::move(*inst);
    auto dev = Device::create(*r->instance, r->instance->default_device());
    if (!dev.ok()) return r;
    r->device = std::move(*dev);
    auto up = Uploader::create(*r->device, 16u << 20);
    auto cmd = Commands::create(*r->device);
    if (up.ok()) r->uploader = std::move(*up);
    if (cmd.ok()) r->commands = std::move(*cmd);
    return r;
  }();
  return e;
}

#define ZINC_REQUIRE_VULKAN()                                                     \
  do {                                                                            \
    ASSERT_NE(::zinc::vulkan::test::env()->commands, nullptr) << "no Vulkan device"; \
  } while (0)

inline const Device& dev() { return *env()->device; }

inline std::unique_ptr<Buffer> host_buffer(const std::vector<float>& v, size_t n_floats = 0) {
  auto b = Buffer::create(dev(), std::max(v.size(), n_floats) * 4, MemoryKind::kHostVisible);
  EXPECT_TRUE(b.ok()) << b.status().message();
  std::memset((*b)->mapped(), 0, (*b)->size_bytes());
  if (!v.empty()) std::memcpy((*b)->mapped(), v.data(), v.size() * 4);
  return std::move(*b);
}

inline std::vector<float> read_floats(const Buffer& b, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), b.mapped(), n * 4);
  return v;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A random rows x cols matrix stored as `type`, and its exact dequantization.
struct Matrix {
  TensorType type;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // dequantized, rows x cols
};

inline Matrix random_matrix(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m{type, rows, cols, {}, {}};
  const std::vector<float> src = random_floats(size_t(rows * cols), seed);
  const size_t rb = row_bytes(type, cols);
  m.bytes.resize(rb * size_t(rows));
  m.values.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, src.data() + r * cols, m.bytes.data() + rb * r, cols);
    dequantize_row(type, m.bytes.data() + rb * r, m.values.data() + r * cols, cols);
  }
  return m;
}

inline std::unique_ptr<WeightBuffer> upload(const Matrix& m, uint64_t max_chunk_bytes = 0) {
  auto w = WeightBuffer::upload(dev(), *env()->uploader, m.type, m.rows, m.cols, m.bytes, max_chunk_bytes);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::move(*w) : nullptr;
}

// Phase clocks (shaders/phase_clock.glsl) in a host-visible buffer: clock `which` (0 the device's,
// 1 the multiprocessor's) of `phase` of `workgroup`, and the workgroups that stored an entry.
inline uint64_t phase_reading(const Buffer& clock, uint32_t workgroup, uint32_t phase, uint32_t which) {
  const uint32_t* r = static_cast<const uint32_t*>(clock.mapped()) + (workgroup * 16 + phase) * 4 + 2 * which;
  return uint64_t(r[0]) | uint64_t(r[1]) << 32;
}
inline uint32_t phase_workgroups(const Buffer& clock) {
  const uint32_t max = uint32_t(clock.size_bytes() / (16 * 16));
  uint32_t n = 0;
  while (n < max && phase_reading(clock, n, 0, 0) != 0) ++n;
  return n;
}

// Query heads of dk in a row, each followed by its gate (dv wide) when gated, as Qwen3.5's q
// projection lays them out; gate_heads() is where those gates sit.
inline graph::HeadLayout query_heads(uint32_t n_q, uint32_t dk, bool gated) {
  return gated ? graph::HeadLayout{int32_t(n_q), int32_t(dk), int32_t(2 * dk), 0} : graph::HeadLayout::packed(n_q, dk);
}
inline graph::HeadLayout gate_heads(uint32_t n_q, uint32_t dk, uint32_t dv) {
  return {int32_t(n_q), int32_t(dv), int32_t(2 * dk), int32_t(dk)};
}

// Records with fn into the shared command buffer, submits and waits.
template <typename Fn>
void run(Fn&& fn) {
  Commands& c = *env()->commands;
  ASSERT_TRUE(c.begin().ok());
  fn(c);
  c.barrier();
  ASSERT_TRUE(c.end().ok());
  const Status s = c.submit_and_wait();
  ASSERT_TRUE(s.ok()) << s.message();
}

}  // namespace zinc::vulkan::test
