// The attention prologue of a Qwen3 / Qwen3.5 layer on the default Vulkan device, timed with GPU
// timestamps: per-head Q/K RMS norms, RoPE and the KV write as one dispatch (norm_rope_kv_write)
// against the QkNorm dispatches, a barrier and rope_kv_write. Shapes: qwen3-30b-a3b (32 query
// and 4 KV heads of 128, full rotary) and qwen3.5-35b-a3b (16 gated query and 2 KV heads of
// 256, 64 rotated dims), f16 cache, one decode token or a 512-token chunk. Counter: us per layer.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "vulkan/ops/kv_write.h"
#include "vulkan/ops/qk_norm.h"
#include "vulkan/timestamps.h"
#include "vulkan/weights.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kMaxTokens = 512, kPages = kMaxTokens / 16;

struct Context : BenchDevice {
  std::unique_ptr<ops::KvWrite> kv_write;
  std::unique_ptr<ops::QkNorm> qk_norm;
  // q, k, v rows of up to 8192 floats; norm weights; step data (positions, seq ids, pages,
  // RoPE table); one layer's K and V pools of up to 1024 halves a row.
  std::unique_ptr<Buffer> q, k, v, weights, step, kc, vc;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& r) {
    const Device& d = *r.device;
    r.kv_write = std::move(ops::KvWrite::create(d, true).value());
    r.qk_norm = std::move(ops::QkNorm::create(d).value());
    for (auto* b : {&r.q, &r.k, &r.v}) *b = r.make_buffer(uint64_t(kMaxTokens) * 8192 * 4);
    r.weights = r.make_buffer(1024 * 4);
    for (auto* b : {&r.kc, &r.vc}) *b = r.make_buffer(uint64_t(kPages) * 16 * 1024 * 2);
    uint32_t seed = 1;
    for (const Buffer* b : {r.q.get(), r.k.get(), r.v.get(), r.weights.get()})
      if (!r.upload_random(*b, seed++).ok()) return false;
    // Step data: token t of sequence 0 at position t, pages 0.., then a RoPE table.
    std::vector<int32_t> step(3 * kMaxTokens + kPages + kMaxTokens * 128);
    for (uint32_t t = 0; t < kMaxTokens; ++t) step[t] = int32_t(t);
    for (uint32_t i = 0; i < kPages; ++i) step[2 * kMaxTokens + i] = int32_t(i);
    for (size_t i = 2 * kMaxTokens + kPages; i < step.size(); ++i) step[i] = int32_t(0x3f000000);  // 0.5f
    r.step = r.make_buffer(step.size() * 4);
    return r.uploader->upload(*r.step, 0, {reinterpret_cast<const uint8_t*>(step.data()), step.size() * 4}).ok();
  });
  return c;
}

struct Shape {
  const char* name;
  int32_t n_q, n_kv, head_dim, n_rot;
  bool gate;
};
constexpr Shape kShapes[] = {{"qwen3_30b_a3b", 32, 4, 128, 128, false}, {"qwen35_35b_a3b", 16, 2, 256, 64, true}};

void BM_RopeKv(benchmark::State& state, Shape s, uint32_t n_tokens, bool fused) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const graph::HeadLayout qh = s.gate ? graph::HeadLayout{s.n_q, s.head_dim, 2 * s.head_dim, 0}
                                      : graph::HeadLayout::packed(s.n_q, s.head_dim);
  const graph::HeadLayout kh = graph::HeadLayout::packed(s.n_kv, s.head_dim);
  graph::RopeParams rope;
  rope.mode = graph::RopeMode::kNeox;
  rope.n_rot = s.n_rot;
  const ops::Activations q{{c.q.get()}, uint32_t(qh.span())}, k{{c.k.get()}, uint32_t(kh.span())},
      v{{c.v.get()}, uint32_t(kh.span())};
  const ops::KvLayerBuffers layer{c.kc.get(), c.vc.get(), uint32_t(s.n_kv), uint32_t(s.head_dim),
                                  uint32_t(s.head_dim), true};
  const ops::StepData step{c.step.get(), 0, kMaxTokens, 2 * kMaxTokens, kPages};
  const BufferRange w{c.weights.get()};
  const ops::KvWrite::HeadNorm norm{w, 1e-6f};
  ops::KvWrite::RopeArgs args{q, qh, &rope, {c.step.get()}, 2 * kMaxTokens + kPages};
  if (fused) args.q_norm = args.k_norm = &norm;
  time_gpu(state, *c.commands, c.timestamps.get(), 50, 0.0, 0.0, [&](Commands& cmd, int) {
    if (!fused) {
      ZINC_RETURN_IF_ERROR(c.qk_norm->record(cmd, q, qh, w, n_tokens, 1e-6f));
      ZINC_RETURN_IF_ERROR(c.qk_norm->record(cmd, k, kh, w, n_tokens, 1e-6f));
      cmd.compute_barrier();
    }
    return c.kv_write->record_rope(cmd, args, k, kh, v, kh, layer, step, n_tokens);
  });
}

int register_all() {
  for (const Shape& s : kShapes)
    for (uint32_t n : {1u, kMaxTokens})
      for (bool fused : {true, false})
        gpu_timed(benchmark::RegisterBenchmark((std::string(s.name) + "/" + std::to_string(n) + "tok/" +
                                                (fused ? "norm_rope_kv_write" : "qk_norm+rope_kv_write"))
                                                   .c_str(),
                                               BM_RopeKv, s, n, fused));
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
