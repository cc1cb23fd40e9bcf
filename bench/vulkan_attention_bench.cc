// Attention on the default Vulkan device, timed with GPU timestamps, for Llama-3-8B (32 query /
// 8 KV heads of 128), Qwen3-30B-A3B (32 / 4 of 128) and Qwen3.5-35B-A3B (16 gated / 2 of 256),
// f16 cache, one sequence:
// - prefill: one layer of a 512-token prompt at depth 0 (causal), scalar tiled kernel and the
//   cooperative-matrix one. Counters: us per layer, TFLOP/s (2 * (dk + dv) per query head and
//   visible key), GB/s of the layer's K and V (read once);
// - decode: one token attending to depth + 1 keys, with the splits the executor uses for a
//   16384-token pool (merged by the last workgroup) or one split. Counter: us per layer;
// - decode_cold: the same after a 256 MiB copy that evicts the cache, as the weights streamed
//   between two layers do in a decode step (subtract attention_decode_evict_only).
// - decode_phases: the decode case with the executor's splits, its kernel's phases read from
//   clocks inside it (phase_clock.h; needs VK_KHR_shader_clock): entry, q staged, the first
//   tile's scores reduced, the first tile done, all tiles done, written, merged.
// The first cases of a run may meet a GPU still raising its clocks: run the filter twice.
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "vulkan/ops/attention.h"
#include "phase_clock.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kTokens = 512;                                  // prefill prompt
constexpr uint32_t kMaxKeys = 16384, kPages = kMaxKeys / 16, kRow = 1024;  // pool: halves a row

struct Context : BenchDevice {
  // q (with gates) rows of up to 8192 floats, output rows of up to 4096, decode partial records
  // and counters, step data of the prefill (positions, sequence ids, pages) and of the decode
  // step (8 positions, 8 sequence ids, pages), one layer's K and V pools.
  std::unique_ptr<Buffer> q, out, partials, counters, prefill_step, decode_step, kc, vc;
};

Status upload_ints(Context& c, std::unique_ptr<Buffer>& b, const std::vector<int32_t>& v) {
  ZINC_ASSIGN_OR_RETURN(b, Buffer::create(*c.device, v.size() * 4, MemoryKind::kDeviceLocal));
  return c.uploader->upload(*b, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
}

Context* context() {
  static Context* c = open_context<Context>([](Context& r) {
    r.q = r.make_buffer(uint64_t(kTokens) * 8192 * 4);
    r.out = r.make_buffer(uint64_t(kTokens) * 4096 * 4);
    r.partials = r.make_buffer(4 * ops::Attention::partial_floats(8, 64, 256, 32));
    r.counters = r.make_buffer(4 * ops::Attention::counter_words(8, 64));
    r.kc = r.make_buffer(uint64_t(kMaxKeys) * kRow * 2);
    r.vc = r.make_buffer(uint64_t(kMaxKeys) * kRow * 2);
    bool ok = r.upload_random(*r.q, 1).ok() && r.upload_random(*r.kc, 2, true).ok() &&
              r.upload_random(*r.vc, 3, true).ok();
    const std::vector<float> zeros(ops::Attention::counter_words(8, 64), 0.f);
    ok = ok &&
         r.uploader->upload(*r.counters, 0, {reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4}).ok();
    // Prefill: token t of sequence 0 at position t; decode: sequence 0 (position set per case).
    // Both walk pages 0, 1, 2, ...
    std::vector<int32_t> prefill(2 * kTokens + kPages, 0), decode(16 + kPages, 0);
    for (uint32_t t = 0; t < kTokens; ++t) prefill[t] = int32_t(t);
    for (uint32_t i = 0; i < kPages; ++i) prefill[2 * kTokens + i] = decode[16 + i] = int32_t(i);
    return ok && upload_ints(r, r.prefill_step, prefill).ok() && upload_ints(r, r.decode_step, decode).ok();
  });
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

ops::AttentionArgs args_for(Context& c, const Shape& s) {
  const int32_t d = s.head_dim;
  ops::AttentionArgs a;
  a.q_heads = s.gate ? graph::HeadLayout{s.n_q, d, 2 * d, 0} : graph::HeadLayout::packed(s.n_q, d);
  a.q = {{c.q.get()}, uint32_t(a.q_heads.span() + (s.gate ? d : 0))};
  if (s.gate) {
    // The gate is read from q's buffer; the Activations it points at outlive the returned copy.
    static std::map<std::string, ops::Activations> gates;
    a.gate = &(gates[s.name] = a.q);
    a.gate_heads = graph::HeadLayout{s.n_q, d, 2 * d, d};
  }
  a.out = {{c.out.get()}, uint32_t(s.n_q * d)};
  a.scale = 1.f / std::sqrt(float(d));
  return a;
}

void BM_Prefill(benchmark::State& state, Shape s, bool coopmat) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::AttentionOptions opt;
  opt.coopmat = coopmat;
  auto att = ops::Attention::create(*c.device, true, opt);
  if (!att.ok()) return state.SkipWithError(att.status().message().c_str());
  if (coopmat && !(*att)->uses_coopmat()) return state.SkipWithError("no cooperative matrices here");
  const int32_t d = s.head_dim;
  const ops::AttentionArgs a = args_for(c, s);
  const ops::KvLayerBuffers layer{c.kc.get(), c.vc.get(), uint32_t(s.n_kv), uint32_t(d), uint32_t(d), true};
  const ops::StepData step{c.prefill_step.get(), 0, kTokens, 2 * kTokens, kPages};
  const double flop = 2.0 * 2 * d * s.n_q * (double(kTokens) * (kTokens + 1) / 2);
  const double kv_bytes = 2.0 * 2 * kTokens * s.n_kv * d;
  time_gpu(state, *c.commands, c.timestamps.get(), 20, kv_bytes, flop, [&](Commands& cmd, int) {
    return (*att)->record(cmd, a, layer, step, kTokens, 1, nullptr);
  });
}

// A copy big enough to evict the last-level cache (and the address translations of the KV
// pool), as the weights streamed between two layers' attention do in a decode step.
struct Evictor {
  std::unique_ptr<Buffer> a, b;
  static constexpr uint64_t kBytes = 256ull << 20;
  Status record(Commands& cmd) {
    if (!a) {
      Context& c = *context();
      ZINC_ASSIGN_OR_RETURN(a, Buffer::create(*c.device, kBytes, MemoryKind::kDeviceLocal));
      ZINC_ASSIGN_OR_RETURN(b, Buffer::create(*c.device, kBytes, MemoryKind::kDeviceLocal));
    }
    cmd.copy(*a, 0, *b, 0, kBytes);
    cmd.barrier();
    return Status();
  }
};
Evictor& evictor() {
  static Evictor e;
  return e;
}

// The evicting copy alone: subtract from decode_cold.
void BM_EvictOnly(benchmark::State& state) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  time_gpu(state, *c.commands, c.timestamps.get(), 20, 0, 0, [&](Commands& cmd, int) { return evictor().record(cmd); });
}

// One decode token of shape s at `depth` (depth + 1 keys: the engine writes the token's own
// first), with the executor's splits or one.
struct DecodeCase {
  ops::AttentionArgs args;
  ops::KvLayerBuffers layer;
  ops::StepData step;
  uint32_t n_splits;
  BufferRange partials, counters;
  double kv_bytes;  // K and V read
  Status record(Commands& cmd, const ops::Attention& att) const {
    return att.record(cmd, args, layer, step, 1, n_splits, &partials, &counters);
  }
};

Result<DecodeCase> decode_case(Context& c, const Shape& s, uint32_t depth, bool split) {
  const int32_t position = int32_t(depth);
  ZINC_RETURN_IF_ERROR(c.uploader->upload(*c.decode_step, 0, {reinterpret_cast<const uint8_t*>(&position), 4}));
  return DecodeCase{args_for(c, s),
                    {c.kc.get(), c.vc.get(), uint32_t(s.n_kv), uint32_t(s.head_dim), uint32_t(s.head_dim), true},
                    {c.decode_step.get(), 0, 8, 16, kPages},
                    split ? ops::Attention::splits_for(1, kMaxKeys) : 1,
                    {c.partials.get()},
                    {c.counters.get()},
                    2.0 * double(depth + 1) * s.n_kv * s.head_dim * 2};
}

void BM_Decode(benchmark::State& state, Shape s, uint32_t depth, bool split, bool cold) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  static std::unique_ptr<ops::Attention> att = std::move(ops::Attention::create(*c.device, true).value());
  const auto d = decode_case(c, s, depth, split);
  if (!d.ok()) return state.SkipWithError(d.status().message().c_str());
  time_gpu(state, *c.commands, c.timestamps.get(), cold ? 20 : 50, d->kv_bytes, 0, [&](Commands& cmd, int) -> Status {
    if (cold) ZINC_RETURN_IF_ERROR(evictor().record(cmd));
    return d->record(cmd, *att);
  });
}

void BM_DecodePhases(benchmark::State& state, Shape s, uint32_t depth) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  if (!c.device->caps().shader_clock) return state.SkipWithError("no VK_KHR_shader_clock");
  constexpr uint32_t kMaxWorkgroups = 4096;
  constexpr uint64_t kClockBytes = uint64_t(kClockPhases) * 16 * kMaxWorkgroups;
  static std::unique_ptr<Buffer> clock = c.make_buffer(kClockBytes);
  static std::unique_ptr<Buffer> host = c.make_buffer(kClockBytes, MemoryKind::kHostVisible);
  ops::AttentionOptions options;
  options.phase_clock = clock.get();
  static std::unique_ptr<ops::Attention> att = std::move(ops::Attention::create(*c.device, true, options).value());
  const auto d = decode_case(c, s, depth, true);
  if (!d.ok()) return state.SkipWithError(d.status().message().c_str());
  Commands& cmd = *c.commands;
  auto submit = [&](auto&& record) {
    if (!cmd.begin().ok()) return false;
    record();
    cmd.barrier();
    return cmd.end().ok() && cmd.submit_and_wait().ok();
  };
  const auto run = [&](Commands& cm) { return d->record(cm, *att); };
  time_gpu(state, cmd, c.timestamps.get(), 50, d->kv_bytes, 0, [&](Commands& cm, int) { return run(cm); });
  // The phases of one more run on cleared clocks: the merging workgroup differs between runs,
  // and the merge phases of an earlier one would stay behind.
  Status recorded;
  if (!submit([&] {
        cmd.zero(*clock, 0, kClockBytes);
        cmd.barrier();
        recorded = run(cmd);
      }) ||
      !recorded.ok())
    return state.SkipWithError("phase run");
  if (!submit([&] { cmd.copy(*clock, 0, *host, 0, kClockBytes); })) return state.SkipWithError("copy");
  constexpr const char* kNames[kClockPhases] = {"entry",   "q_staged", "scored",   "tile0",    "tiles",
                                                "written", "released", "counted",  "acquired", "merged"};
  report_phases(state, read_phases(static_cast<const uint32_t*>(host->mapped()), kMaxWorkgroups), kNames);
}

int register_all() {
  for (const Shape& s : kShapes)
    for (bool coopmat : {true, false})
      gpu_timed(benchmark::RegisterBenchmark(
          ("attention_prefill/" + std::string(s.name) + "/512tok/" + (coopmat ? "coopmat" : "scalar")).c_str(),
          BM_Prefill, s, coopmat));
  for (const Shape& s : kShapes)
    for (uint32_t depth : {0u, 64u, 512u, 4096u})
      for (bool split : {true, false})
        gpu_timed(benchmark::RegisterBenchmark((std::string("attention_decode/") + s.name + "/depth" +
                                                std::to_string(depth) + (split ? "/splits" : "/one_split"))
                                                   .c_str(),
                                               BM_Decode, s, depth, split, false));
  for (const Shape& s : kShapes)
    for (uint32_t depth : {0u, 64u, 512u, 4096u})
      gpu_timed(benchmark::RegisterBenchmark(
          (std::string("attention_decode_phases/") + s.name + "/depth" + std::to_string(depth)).c_str(),
          BM_DecodePhases, s, depth));
  // Each op after a cache-evicting copy (time includes the copy: subtract decode_evict_only).
  gpu_timed(benchmark::RegisterBenchmark("attention_decode_evict_only", BM_EvictOnly));
  for (const Shape& s : kShapes)
    for (uint32_t depth : {0u, 64u, 4096u})
      gpu_timed(benchmark::RegisterBenchmark(
          (std::string("attention_decode_cold/") + s.name + "/depth" + std::to_string(depth) + "/splits").c_str(),
          BM_Decode, s, depth, true, true));
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
