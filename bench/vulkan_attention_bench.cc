// Decode attention on the default Vulkan device, timed with GPU timestamps: one token of one
// sequence attending to `depth` keys of an f16 paged pool, for the attention shapes of
// Llama-3-8B (32 query / 8 KV heads of 128), Qwen3-30B-A3B (32 / 4 of 128) and Qwen3.5-35B-A3B
// (16 gated / 2 of 256), with the splits the executor uses for a 16384-token pool (merged by
// the last workgroup) or one split. Counter: us per layer.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "vulkan/ops/attention.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kMaxKeys = 16384, kPages = kMaxKeys / 16, kMaxRow = 1024;  // halves per pool row

struct Context : BenchDevice {
  std::unique_ptr<ops::Attention> attention;
  // q (and gate) rows, the output, partial records and counters, step data, one layer's pools.
  std::unique_ptr<Buffer> q, out, partials, counters, step, kc, vc;
};

Context* context() {
  static Context* c = [] {
    auto* r = new Context();
    r->open();
    if (!r->device) return r;
    const Device& d = *r->device;
    r->attention = std::move(ops::Attention::create(d, true).value());
    auto make = [&](std::unique_ptr<Buffer>& b, uint64_t bytes) {
      b = std::move(Buffer::create(d, bytes, MemoryKind::kDeviceLocal).value());
    };
    make(r->q, 8 * 8192 * 4);
    make(r->out, 8 * 8192 * 4);
    make(r->partials, 4 * ops::Attention::partial_floats(8, 64, 256, 32));
    make(r->counters, 4 * ops::Attention::counter_words(8, 64));
    make(r->kc, uint64_t(kMaxKeys) * kMaxRow * 2);
    make(r->vc, uint64_t(kMaxKeys) * kMaxRow * 2);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> qv(8 * 8192);
    for (float& x : qv) x = nd(rng);
    std::vector<uint16_t> kv(size_t(kMaxKeys) * kMaxRow);
    for (uint16_t& h : kv) h = f32_to_fp16(nd(rng));
    std::vector<uint32_t> zeros(ops::Attention::counter_words(8, 64), 0);
    bool ok = r->uploader->upload(*r->q, 0, {reinterpret_cast<const uint8_t*>(qv.data()), qv.size() * 4}).ok();
    ok = ok && r->uploader->upload(*r->kc, 0, {reinterpret_cast<const uint8_t*>(kv.data()), kv.size() * 2}).ok();
    ok = ok && r->uploader->upload(*r->vc, 0, {reinterpret_cast<const uint8_t*>(kv.data()), kv.size() * 2}).ok();
    ok = ok && r->uploader->upload(*r->counters, 0, {reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4}).ok();
    // Step data: positions (8), seq ids (8), then the page table of sequence 0 (pages in order).
    std::vector<int32_t> step(16 + kPages, 0);
    for (uint32_t i = 0; i < kPages; ++i) step[16 + i] = int32_t(i);
    make(r->step, step.size() * 4);
    ok = ok && r->uploader->upload(*r->step, 0, {reinterpret_cast<const uint8_t*>(step.data()), step.size() * 4}).ok();
    if (!ok) r->device.reset();
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

void BM_DecodeAttention(benchmark::State& state, Shape s, uint32_t depth, bool split) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  // The query position is `depth`: depth + 1 keys, written by the step itself in the engine.
  const int32_t position = int32_t(depth);
  if (!c.uploader->upload(*c.step, 0, {reinterpret_cast<const uint8_t*>(&position), 4}).ok())
    return state.SkipWithError("upload");
  ops::AttentionArgs a;
  const uint32_t q_cols = uint32_t(s.n_q * s.head_dim) * (s.gate ? 2 : 1);
  a.q = {{c.q.get()}, q_cols};
  a.q_heads = s.gate ? graph::HeadLayout{s.n_q, s.head_dim, 2 * s.head_dim, 0}
                     : graph::HeadLayout::packed(s.n_q, s.head_dim);
  const ops::Activations gate{{c.q.get()}, q_cols};
  if (s.gate) {
    a.gate = &gate;
    a.gate_heads = graph::HeadLayout{s.n_q, s.head_dim, 2 * s.head_dim, s.head_dim};
  }
  a.out = {{c.out.get()}, uint32_t(s.n_q * s.head_dim)};
  a.scale = 1.f / std::sqrt(float(s.head_dim));
  const ops::KvLayerBuffers layer{c.kc.get(), c.vc.get(), uint32_t(s.n_kv), uint32_t(s.head_dim),
                                  uint32_t(s.head_dim), true};
  const ops::StepData step{c.step.get(), 0, 8, 16, kPages};
  const uint32_t n_splits = split ? ops::Attention::splits_for(1, kMaxKeys) : 1;
  const BufferRange partials{c.partials.get(), 0, VK_WHOLE_SIZE}, counters{c.counters.get(), 0, VK_WHOLE_SIZE};
  const double bytes = 2.0 * double(depth + 1) * s.n_kv * s.head_dim * 2;
  time_gpu(state, *c.commands, c.timestamps.get(), 50, bytes, 0, [&](Commands& cmd, int) -> Status {
    return c.attention->record(cmd, a, layer, step, 1, n_splits, &partials, &counters);
  });
}

int register_all() {
  for (const Shape& s : kShapes)
    for (uint32_t depth : {0u, 64u, 512u, 4096u})
      for (bool split : {true, false})
        benchmark::RegisterBenchmark((std::string("decode_attention/") + s.name + "/depth" + std::to_string(depth) +
                                      (split ? "/splits" : "/one_split"))
                                         .c_str(),
                                     BM_DecodeAttention, s, depth, split)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace zinc::vulkan
