// MoE and Gated DeltaNet decode ops on the default Vulkan device, timed with GPU timestamps, at
// Qwen3.5-35B-A3B shapes: n_embd 2048, 256 experts, k 8, expert and shared-expert ffn 512, Q4_K;
// delta net 16 key heads x 128, 32 value heads x 128, conv over 8192 channels with 4 taps.
// Each measurement cycles through several layers' weights/states (with random expert ids) so
// that, as in a real decode step, reads come from DRAM. GB/s counts weights (or state) read.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <algorithm>
#include <map>
#include <random>

#include "core/quant.h"
#include "vulkan/ops/gated_delta_net.h"
#include "vulkan/ops/matvec.h"
#include "vulkan/ops/moe_gemm.h"
#include "vulkan/ops/moe_matvec.h"
#include "vulkan/ops/moe_route.h"
#include "vulkan/ops/ssm_conv1d.h"
#include "vulkan/timestamps.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kEmbd = 2048, kExperts = 256, kUsed = 8, kFf = 512, kLayers = 4, kIdSets = 64;
constexpr uint32_t kHk = 16, kDk = 128, kHv = 32, kDv = 128, kTaps = 4;
constexpr uint32_t kConvDim = 2 * kHk * kDk + kHv * kDv;

struct Context : BenchDevice {
  std::unique_ptr<Buffer> x, y, act, ids, weights, logits, misc;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& r) {
    r.x = r.make_buffer(512ull * kConvDim * 4);
    r.y = r.make_buffer(512ull * kConvDim * 4);
    r.act = r.make_buffer(512ull * kUsed * kFf * 4);
    r.misc = r.make_buffer(512ull * kUsed * kEmbd * 4);
    r.logits = r.make_buffer(512ull * kExperts * 4);
    // Random expert ids (distinct per token) and routing weights, kIdSets tokens' worth.
    std::mt19937 rng(7);
    std::vector<int32_t> ids(size_t(kIdSets) * kUsed);
    for (uint32_t t = 0; t < kIdSets; ++t) {
      std::vector<int32_t> all(kExperts);
      for (uint32_t e = 0; e < kExperts; ++e) all[e] = int32_t(e);
      std::shuffle(all.begin(), all.end(), rng);
      std::copy_n(all.begin(), kUsed, &ids[size_t(t) * kUsed]);
    }
    std::vector<float> w(ids.size(), 1.0f / kUsed), x(512ull * kConvDim);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    (void)r.uploader->upload(*r.x, 0, {reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4});
    (void)r.upload_random(*r.logits, 11);  // router logits for the routed cases
    r.ids = r.make_buffer(ids.size() * 4);
    r.weights = r.make_buffer(w.size() * 4);
    (void)r.uploader->upload(*r.ids, 0, {reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4});
    (void)r.uploader->upload(*r.weights, 0, {reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4});
    return true;
  });
  return c;
}

// kLayers copies of a stacked random matrix (64 distinct rows repeated).
std::vector<std::unique_ptr<WeightBuffer>>& stacked(TensorType type, int64_t rows, int64_t cols, uint64_t* bytes) {
  static std::map<std::tuple<int, int64_t, int64_t>, std::vector<std::unique_ptr<WeightBuffer>>> cache;
  auto& v = cache[{int(type), rows, cols}];
  *bytes = row_bytes(type, cols) * size_t(rows);
  if (!v.empty()) return v;
  const std::vector<uint8_t> data = repeated_random_rows(type, rows, cols);
  Context& c = *context();
  for (uint32_t i = 0; i < kLayers; ++i) {
    auto b = WeightBuffer::upload(*c.device, *c.uploader, type, rows, cols, data);
    if (!b.ok()) {
      std::fprintf(stderr, "upload: %s\n", b.status().message().c_str());
      break;
    }
    v.push_back(std::move(*b));
  }
  return v;
}


BufferRange ids_of(Context& c, int i, uint32_t n_tokens) {
  const uint64_t t0 = uint64_t(i) % (kIdSets - n_tokens + 1);
  return {c.ids.get(), t0 * kUsed * 4, uint64_t(n_tokens) * kUsed * 4};
}

// Gate/up (SwiGLU, all k experts) or down (weighted sum) of the routed experts.
// routed (gate/up only): the dispatch routes each token itself from random logits, as in a
// decode step (MoeRouting), writing ids and weights to scratch.
void BM_MoeMatvec(benchmark::State& state, TensorType type, bool gate_up, uint32_t n_tokens, bool int8,
                  uint32_t group_size, uint32_t rows, bool routed, uint32_t max_lanes) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::MoeMatvecOptions o;
  o.swiglu = gate_up;
  o.int8 = int8;
  o.group_size = group_size;
  o.rows = rows;
  o.max_lanes = max_lanes;
  auto op = ops::MoeMatvec::create(*c.device, type, o);
  if (!op.ok()) return state.SkipWithError(op.status().message().c_str());
  uint64_t bytes = 0;
  auto& w = gate_up ? stacked(type, int64_t(kExperts) * kFf, kEmbd, &bytes) : stacked(type, int64_t(kExperts) * kEmbd, kFf, &bytes);
  if (gate_up) bytes = row_bytes(type, kEmbd) * size_t(kExperts) * kFf;
  const double read = double(bytes) / kExperts * kUsed * n_tokens * (gate_up ? 2 : 1);
  time_gpu(state, *c.commands, c.timestamps.get(), 40, read, 0, [&](Commands& cmd, int i) -> Status {
    const size_t l = size_t(i) % w.size();
    const BufferRange ids = ids_of(c, i, n_tokens);
    const ops::MoeRouting routing{{{c.logits.get()}, kExperts}, {c.misc.get(), 4096, 4096}, true};
    if (gate_up)
      return (*op)->record_swiglu(cmd, *w[l], *w[(l + 1) % w.size()], kExperts, {{c.x.get()}, kEmbd},
                                  routed ? BufferRange{c.misc.get(), 0, 4096} : ids, {{c.act.get()}, kFf}, n_tokens,
                                  kUsed, routed ? &routing : nullptr);
    return (*op)->record_down(cmd, *w[l], kExperts, {{c.act.get()}, kFf}, ids,
                              {c.weights.get(), ids.offset, ids.size}, {{c.y.get()}, kEmbd}, n_tokens, kUsed);
  });
}

void BM_SharedExpert(benchmark::State& state, TensorType type) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::MatvecOptions o;
  o.swiglu = true;
  auto pair = ops::Matvec::create(*c.device, type, o);
  o.swiglu = false;
  auto down = ops::Matvec::create(*c.device, type, o);
  if (!pair.ok() || !down.ok()) return state.SkipWithError("matvec");
  uint64_t b1 = 0, b2 = 0;
  auto& gu = stacked(type, kFf, kEmbd, &b1);
  auto& d = stacked(type, kEmbd, kFf, &b2);
  time_gpu(state, *c.commands, c.timestamps.get(), 40, double(2 * b1 + b2), 0, [&](Commands& cmd, int i) -> Status {
    const size_t l = size_t(i) % gu.size();
    ZINC_RETURN_IF_ERROR((*pair)->record_swiglu(cmd, *gu[l], *gu[(l + 1) % gu.size()], {{c.x.get()}, kEmbd},
                                                {{c.act.get()}, kFf}, 1));
    cmd.compute_barrier();
    return (*down)->record(cmd, *d[l], {{c.act.get()}, kFf}, {{c.y.get()}, kEmbd}, 1);
  });
}

void BM_MoeRoute(benchmark::State& state) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  auto op = ops::MoeRoute::create(*c.device);
  if (!op.ok()) return state.SkipWithError(op.status().message().c_str());
  time_gpu(state, *c.commands, c.timestamps.get(), 40, kExperts * 4.0, 0, [&](Commands& cmd, int) {
    return (*op)->record(cmd, {{c.logits.get()}, kExperts}, {c.misc.get(), 0, 4096}, {c.misc.get(), 4096, 4096}, 1,
                         kExperts, kUsed, true);
  });
}

enum class DeltaNetPart { kBoth, kConv, kDelta };

// One delta-net layer: conv (8192 channels) and/or state update of 32 heads x 128 x 128, for
// n_tokens tokens of n_tokens sequences (decode, up to 8) or of one sequence (prefill).
void BM_DeltaNet(benchmark::State& state, uint32_t n_tokens, bool one_seq, DeltaNetPart part,
                 ops::DeltaNetKernel kernel, ops::ConvKernel conv_kernel, uint32_t chunked_rows) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  auto conv = ops::SsmConv1d::create(*c.device, conv_kernel);
  auto gdn = ops::GatedDeltaNet::create(*c.device, true, kernel, chunked_rows);
  if (!conv.ok() || !gdn.ok()) return state.SkipWithError("create");
  const uint32_t conv_floats = (kTaps - 1) * kConvDim, ssm_floats = kHv * kDv * kDk;
  const uint32_t slot_floats = kLayers * (conv_floats + ssm_floats);
  static std::unique_ptr<Buffer> st, seq, seq0, small;
  if (!st) {
    st = c.make_buffer(uint64_t(slot_floats) * 4 * 8);
    seq = c.make_buffer(64 * 4);
    seq0 = c.make_buffer(512 * 4);
    std::vector<int32_t> zeros(512, 0);
    (void)c.uploader->upload(*seq0, 0, {reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4});
    small = c.make_buffer(1 << 20);
    std::vector<int32_t> s(64);
    for (int i = 0; i < 64; ++i) s[size_t(i)] = i % 8;
    std::vector<float> z(size_t(slot_floats) * 8, 0.01f);
    (void)c.uploader->upload(*seq, 0, {reinterpret_cast<const uint8_t*>(s.data()), s.size() * 4});
    (void)c.uploader->upload(*st, 0, {reinterpret_cast<const uint8_t*>(z.data()), z.size() * 4});
    std::vector<float> sm(1 << 18, -0.1f);
    (void)c.uploader->upload(*small, 0, {reinterpret_cast<const uint8_t*>(sm.data()), sm.size() * 4});
  }
  const ops::StateSlots slots{{st.get()}, {(one_seq ? seq0 : seq).get()}, slot_floats};
  const ops::DeltaNetShape shape{kHk, kDk, kHv, kDv, false, 1e-6f};
  const uint32_t n_seqs = one_seq ? 1 : n_tokens;
  // State read and written (GB/s); the conv alone also counts its input and output rows.
  double bytes = 2.0 * 4 * ((part != DeltaNetPart::kDelta ? conv_floats : 0) +
                            (part != DeltaNetPart::kConv ? ssm_floats : 0)) * n_seqs;
  if (part == DeltaNetPart::kConv) bytes += 2.0 * 4 * kConvDim * n_tokens;
  time_gpu(state, *c.commands, c.timestamps.get(), one_seq ? 5 : 40, bytes, 0, [&](Commands& cmd, int i) -> Status {
    const uint32_t l = uint32_t(i) % kLayers;
    if (part != DeltaNetPart::kDelta) {
      ZINC_RETURN_IF_ERROR((*conv)->record(cmd, {{c.x.get()}, kConvDim}, {small.get(), 0, 65536 * 4}, slots,
                                           l * (conv_floats + ssm_floats), {{c.y.get()}, kConvDim}, n_tokens,
                                           kConvDim, kTaps));
      if (part == DeltaNetPart::kConv) return Status();
      cmd.compute_barrier();
    }
    Buffer* in = (part == DeltaNetPart::kDelta ? c.x : c.y).get();  // the delta net alone reads random rows
    return (*gdn)->record(cmd, shape, {{in}, kConvDim}, {{small.get()}, kHv}, {{small.get()}, kHv},
                          {small.get()}, {small.get()}, slots, l * (conv_floats + ssm_floats) + conv_floats,
                          {{c.misc.get()}, kHv * kDv}, n_tokens);
  });
}

void BM_MoeGemm(benchmark::State& state, TensorType type, uint32_t n_tokens, bool coopmat, uint32_t slot_tile) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  auto pair = ops::MoeGemm::create(*c.device, type, true, slot_tile, coopmat);
  if (!pair.ok()) return state.SkipWithError(pair.status().message().c_str());
  if (coopmat && !(*pair)->uses_coopmat()) return state.SkipWithError("no cooperative matrices here");
  uint64_t bytes = 0;
  auto& w = stacked(type, int64_t(kExperts) * kFf, kEmbd, &bytes);
  static std::unique_ptr<Buffer> order, tiles, ids;
  if (!order) {
    order = c.make_buffer(512 * kUsed * 4);
    tiles = c.make_buffer(16 * ops::MoeGemm::max_tiles(512 * kUsed, kExperts));
    std::mt19937 rng(3);
    std::vector<int32_t> v(512 * kUsed);
    for (auto& e : v) e = int32_t(rng() % kExperts);
    ids = c.make_buffer(v.size() * 4);
    (void)c.uploader->upload(*ids, 0, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
  }
  const ops::MoeScratch scratch{{order.get()}, {tiles.get()}, {}};
  time_gpu(state, *c.commands, c.timestamps.get(), 5, 2.0 * double(bytes), 0, [&](Commands& cmd, int i) -> Status {
    const size_t l = size_t(i) % w.size();
    ZINC_RETURN_IF_ERROR((*pair)->record_group(cmd, {ids.get()}, kExperts, scratch, n_tokens, kUsed));
    cmd.compute_barrier();
    return (*pair)->record_swiglu(cmd, *w[l], *w[(l + 1) % w.size()], kExperts, {{c.x.get()}, kEmbd}, scratch,
                                  {{c.misc.get()}, kFf}, n_tokens, kUsed);
  });
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * 2 * kFf * kEmbd * double(n_tokens) * kUsed * 1e-12 /
                                                 (state.counters["us"] * 1e-6));
}

int register_all() {
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K}) {
    const std::string tn(type_name(t));
    for (uint32_t n : {1u, 4u})
      for (bool int8 : {true, false}) {
        const std::string suffix = "/tokens" + std::to_string(n) + (int8 ? "/int8" : "/float");
        gpu_timed(benchmark::RegisterBenchmark(("moe_matvec/gate_up/" + tn + suffix).c_str(), BM_MoeMatvec, t, true, n,
                                               int8, 0u, 0u, false, 0u));
        gpu_timed(benchmark::RegisterBenchmark(("moe_matvec/gate_up/" + tn + suffix + "/routed").c_str(), BM_MoeMatvec,
                                               t, true, n, int8, 0u, 0u, true, 0u));
        gpu_timed(benchmark::RegisterBenchmark(("moe_matvec/down/" + tn + suffix).c_str(), BM_MoeMatvec, t, false, n,
                                               int8, 0u, 0u, false, 0u));
      }
    gpu_timed(benchmark::RegisterBenchmark(("shared_expert/" + tn).c_str(), BM_SharedExpert, t));
  }
  // Workgroup shapes (threads, rows per row set, lanes per row at most) for one token, Q4_K
  // int8; gate/up routed.
  for (bool gate_up : {true, false})
    for (uint32_t gs : {64u, 128u, 256u})
      for (uint32_t rows : {1u, 2u, 4u})
        for (uint32_t lanes : {0u, 32u, 16u, 8u})
          gpu_timed(benchmark::RegisterBenchmark(
              (std::string("moe_matvec_shape/") + (gate_up ? "gate_up" : "down") + "/threads" + std::to_string(gs) +
               "/rows" + std::to_string(rows) + (lanes ? "/lanes" + std::to_string(lanes) : ""))
                  .c_str(),
              BM_MoeMatvec, TensorType::Q4_K, gate_up, 1u, true, gs, rows, gate_up, lanes));
  gpu_timed(benchmark::RegisterBenchmark("moe_route/256x8", BM_MoeRoute));
  for (uint32_t n : {1u, 4u}) {
    gpu_timed(benchmark::RegisterBenchmark(("delta_net_decode/seqs" + std::to_string(n)).c_str(), BM_DeltaNet, n, false,
                                           DeltaNetPart::kBoth, ops::DeltaNetKernel::kTokens, ops::ConvKernel::kAuto,
                                           16u));
    for (auto k : {ops::ConvKernel::kTokens, ops::ConvKernel::kBatched})
      gpu_timed(benchmark::RegisterBenchmark(
          ("ssm_conv1d_decode/seqs" + std::to_string(n) + (k == ops::ConvKernel::kBatched ? "/batched" : "/tokens"))
              .c_str(),
          BM_DeltaNet, n, false, DeltaNetPart::kConv, ops::DeltaNetKernel::kTokens, k, 16u));
  }
  // Prefill of one 512-token sequence: the conv (batched kernel; by token for comparison) and the
  // delta net (chunked; by token for comparison) timed apart.
  for (auto k : {ops::ConvKernel::kBatched, ops::ConvKernel::kTokens})
    gpu_timed(benchmark::RegisterBenchmark(
        k == ops::ConvKernel::kBatched ? "ssm_conv1d_prefill512" : "ssm_conv1d_prefill512/tokens", BM_DeltaNet, 512u,
        true, DeltaNetPart::kConv, ops::DeltaNetKernel::kChunked, k, 16u));
  // chunked: 16 state rows per workgroup (the default), chunked_rows8: 8.
  for (auto k : {ops::DeltaNetKernel::kChunked, ops::DeltaNetKernel::kTokens})
    gpu_timed(benchmark::RegisterBenchmark(
        (std::string("delta_net_prefill512/") + (k == ops::DeltaNetKernel::kChunked ? "chunked" : "tokens")).c_str(),
        BM_DeltaNet, 512u, true, DeltaNetPart::kDelta, k, ops::ConvKernel::kBatched, 16u));
  gpu_timed(benchmark::RegisterBenchmark("delta_net_prefill512/chunked_rows8", BM_DeltaNet, 512u, true,
                                         DeltaNetPart::kDelta, ops::DeltaNetKernel::kChunked, ops::ConvKernel::kBatched,
                                         8u));
  for (bool coopmat : {true, false})
    for (uint32_t tile : {0u, 32u, 64u})  // 0: the op's choice for the shape
      gpu_timed(benchmark::RegisterBenchmark(
          (std::string("moe_gemm/gate_up/Q4_K/tokens512/") + (coopmat ? "coopmat" : "scalar") + "/slots" +
           (tile ? std::to_string(tile) : "auto"))
              .c_str(),
          BM_MoeGemm, TensorType::Q4_K, 512u, coopmat, tile));
  return 0;
}
const int registered = register_all();

}  // namespace
}  // namespace zinc::vulkan
