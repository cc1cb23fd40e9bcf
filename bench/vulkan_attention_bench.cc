// Prefill attention on the default Vulkan device, timed with GPU timestamps: one layer of a
// 512-token prompt at depth 0 (one sequence, causal), f16 cache, for Llama-3-8B (32 query and 8 KV
// heads of 128), Qwen3-30B-A3B (32/4, 128) and Qwen3.5-35B-A3B (16/2 of 256, sigmoid output
// gate), through the scalar tiled kernel and the cooperative-matrix one. Counters: us per layer,
// TFLOP/s (2 * (dk + dv) per query head and visible key), GB/s of the layer's K and V (read once).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "vulkan/ops/attention.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kTokens = 512, kPages = kTokens / 16;

struct Context : BenchDevice {
  // q (with gates) rows of up to 8192 floats, output rows of up to 4096, step data (positions,
  // sequence ids, page table) and one layer's K and V pools of up to 1024 halves a row.
  std::unique_ptr<Buffer> q, out, step, kc, vc;
};

Status upload_random(Context& c, const Buffer& b, uint32_t seed, bool halves) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  if (halves) {
    std::vector<uint16_t> v(b.size_bytes() / 2);
    for (auto& x : v) x = f32_to_fp16(nd(rng));
    return c.uploader->upload(b, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 2});
  }
  std::vector<float> v(b.size_bytes() / 4);
  for (float& x : v) x = nd(rng);
  return c.uploader->upload(b, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
}

Context* context() {
  static Context* c = [] {
    auto* r = new Context();
    r->open();
    if (!r->device) return r;
    const Device& d = *r->device;
    r->q = std::move(Buffer::create(d, uint64_t(kTokens) * 8192 * 4, MemoryKind::kDeviceLocal).value());
    r->out = std::move(Buffer::create(d, uint64_t(kTokens) * 4096 * 4, MemoryKind::kDeviceLocal).value());
    for (auto* b : {&r->kc, &r->vc})
      *b = std::move(Buffer::create(d, uint64_t(kPages) * 16 * 1024 * 2, MemoryKind::kDeviceLocal).value());
    if (!upload_random(*r, *r->q, 1, false).ok() || !upload_random(*r, *r->kc, 2, true).ok() ||
        !upload_random(*r, *r->vc, 3, true).ok())
      r->device.reset();
    // Token t of sequence 0 at position t, pages 0..
    std::vector<int32_t> step(2 * kTokens + kPages, 0);
    for (uint32_t t = 0; t < kTokens; ++t) step[t] = int32_t(t);
    for (uint32_t i = 0; i < kPages; ++i) step[2 * kTokens + i] = int32_t(i);
    if (r->device) {
      r->step = std::move(Buffer::create(d, step.size() * 4, MemoryKind::kDeviceLocal).value());
      if (!r->uploader->upload(*r->step, 0, {reinterpret_cast<const uint8_t*>(step.data()), step.size() * 4}).ok())
        r->device.reset();
    }
    return r;
  }();
  return c;
}

struct Shape {
  const char* name;
  int32_t n_q, n_kv, head_dim;
  bool gate;
};
constexpr Shape kShapes[] = {{"llama3_8b", 32, 8, 128, false},
                             {"qwen3_30b_a3b", 32, 4, 128, false},
                             {"qwen35_35b_a3b", 16, 2, 256, true}};

void BM_Prefill(benchmark::State& state, Shape s, bool coopmat) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::AttentionOptions opt;
  opt.coopmat = coopmat;
  auto att = ops::Attention::create(*c.device, true, opt);
  if (!att.ok()) return state.SkipWithError(att.status().message().c_str());
  if (coopmat && !(*att)->uses_coopmat()) return state.SkipWithError("no cooperative matrices here");
  const int32_t d = s.head_dim;
  ops::AttentionArgs a;
  a.q_heads = s.gate ? graph::HeadLayout{s.n_q, d, 2 * d, 0} : graph::HeadLayout::packed(s.n_q, d);
  a.q = {{c.q.get()}, uint32_t(a.q_heads.span() + (s.gate ? d : 0))};
  if (s.gate) {
    a.gate = &a.q;
    a.gate_heads = graph::HeadLayout{s.n_q, d, 2 * d, d};
  }
  a.out = {{c.out.get()}, uint32_t(s.n_q * d)};
  a.scale = 0.1f;
  const ops::KvLayerBuffers layer{c.kc.get(), c.vc.get(), uint32_t(s.n_kv), uint32_t(d), uint32_t(d), true};
  const ops::StepData step{c.step.get(), 0, kTokens, 2 * kTokens, kPages};
  const double flop = 2.0 * 2 * d * s.n_q * (double(kTokens) * (kTokens + 1) / 2);
  const double kv_bytes = 2.0 * 2 * kTokens * s.n_kv * d;
  time_gpu(state, *c.commands, c.timestamps.get(), 20, kv_bytes, flop, [&](Commands& cmd, int) {
    return (*att)->record(cmd, a, layer, step, kTokens, 1, nullptr);
  });
}

int register_all() {
  for (const Shape& s : kShapes)
    for (bool coopmat : {true, false})
      benchmark::RegisterBenchmark(("attention_prefill/" + std::string(s.name) + "/512tok/" +
                                    (coopmat ? "coopmat" : "scalar"))
                                       .c_str(),
                                   BM_Prefill, s, coopmat)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
