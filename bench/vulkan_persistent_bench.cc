// Dependent decode products three ways (shaders/persistent_probe.comp: four Llama-3-8B layers of
// 4-bit matrix-vector products, about 109 MB a layer): one dispatch per product with a pipeline
// barrier between ("barriers"); one dispatch per product with no barrier, each workgroup waiting
// in the shader for the workgroups of the products before ("handoff"); and one persistent
// dispatch whose workgroups meet at a grid barrier between products ("persistent"). Measures what
// a decode step would gain from each before anything is built on it; "us/layer" is the time of
// one layer's four products, and "check" (a sum of outputs after one chain) must agree between
// cases. The waiting cases need every waiting workgroup resident; a case whose workgroups gave
// up waiting reports an error. Vulkan promises no forward progress between workgroups. The
// persistent grid is sized from DeviceCaps::compute_units, so where the driver does not report
// them (lavapipe) those cases skip; with 132 workgroups lavapipe finished them with a wrong check
// and no error (not understood). On the H200 one workgroup a multiprocessor stays resident (132;
// DECODE_LOG.md, session 15), one more does not.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "vulkan_gpu_timer.h"
#include "vulkan/pipeline.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kLayers = 4, kPhases = 4 * kLayers;
constexpr uint64_t kLayerBytes = ((6144ull + 4096 + 28672) * 4096 + 4096ull * 14336) / 2;
constexpr uint32_t kRows[4] = {6144, 4096, 28672, 4096};

struct Context : BenchDevice {
  std::unique_ptr<Buffer> weights, act, sync, readback;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& c) {
    c.weights = c.make_buffer(kLayerBytes * kLayers);
    c.act = c.make_buffer(64 << 10 << 2);
    c.sync = c.make_buffer(256);
    c.readback = c.make_buffer(256, MemoryKind::kHostVisible);
    std::vector<uint8_t> codes(1 << 24);  // uniform 4-bit codes, repeated
    std::mt19937 rng(1);
    for (auto& b : codes) b = uint8_t(rng());
    for (uint64_t off = 0; off < kLayerBytes * kLayers; off += codes.size()) {
      const uint64_t n = std::min<uint64_t>(codes.size(), kLayerBytes * kLayers - off);
      if (!c.uploader->upload(*c.weights, off, {codes.data(), n}).ok()) return false;
    }
    return true;
  });
  return c;
}

struct Push {
  uint32_t first_phase, n_phases, epoch, wait_target;
};

enum class Mode : uint32_t { kBarriers = 0, kPersistent = 1, kHandoff = 2 };

// The probe's pipeline: f16 or int8 phase code, `threads` a workgroup.
Result<std::unique_ptr<Pipeline>> probe_pipeline(const Device& device, Mode mode, uint32_t prefetch, uint32_t threads,
                                                 bool int8) {
  const PipelineDesc desc{int8 ? "persistent_probe_int8" : "persistent_probe", 3, sizeof(Push),
                          {uint32_t(mode), prefetch, threads}};
  return Pipeline::create(device, desc);
}

// groups: for the persistent dispatch 0, 1, 2 (see below); for the others a cap on each
// product's workgroups (0: one workgroup per block of rows).
void BM_Chain(benchmark::State& state, Mode mode, uint32_t prefetch, uint32_t groups, uint32_t threads, bool int8) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const uint32_t block_rows = 2 * threads / c.device->caps().subgroup_size;
  if (mode == Mode::kPersistent) {  // groups: 0 one workgroup a multiprocessor, 1 one more, 2 two each
    const uint32_t cu = c.device->caps().compute_units;
    if (cu == 0) return state.SkipWithError("the driver does not report its multiprocessors");
    groups = groups == 0 ? cu : groups == 1 ? cu + 1 : 2 * cu;
  }
  auto pipe = probe_pipeline(*c.device, mode, prefetch, threads, int8);
  if (!pipe.ok()) return state.SkipWithError(pipe.status().message().c_str());
  const BufferRange bufs[3] = {{c.weights.get()}, {c.act.get()}, {c.sync.get()}};
  uint32_t phase_groups[kPhases], chain_groups = 0;
  for (uint32_t ph = 0; ph < kPhases; ++ph) {
    const uint32_t blocks = kRows[ph % 4] / block_rows;
    phase_groups[ph] = groups ? std::min(groups, blocks) : blocks;
    chain_groups += phase_groups[ph];
  }
  auto record_chain = [&](Commands& cmd, uint32_t epoch) {
    if (mode == Mode::kPersistent) {
      const Push push{0, kPhases, epoch, 0};
      cmd.dispatch(**pipe, bufs, &push, sizeof(push), groups);
      return ok_status();
    }
    uint32_t done = epoch * chain_groups;
    for (uint32_t ph = 0; ph < kPhases; ++ph) {
      if (ph && mode == Mode::kBarriers) cmd.compute_barrier();
      const Push push{ph, 1, epoch, done};
      cmd.dispatch(**pipe, bufs, &push, sizeof(push), phase_groups[ph]);
      done += phase_groups[ph];
    }
    return ok_status();
  };
  // One chain from the same x and a fresh counter: every case must give the same "check".
  if (!c.upload_random(*c.act, 2).ok() || !c.commands->begin().ok()) return state.SkipWithError("setup");
  c.commands->zero(*c.sync, 0, 256);
  c.commands->barrier();
  if (!record_chain(*c.commands, 0).ok()) return state.SkipWithError("record");
  c.commands->barrier();
  c.commands->copy(*c.act, 0, *c.readback, 64, 128);
  c.commands->barrier();
  if (!c.commands->end().ok() || !c.commands->submit_and_wait().ok()) return state.SkipWithError("first chain");
  float y[32];
  std::memcpy(y, static_cast<const uint8_t*>(c.readback->mapped()) + 64, sizeof(y));
  double sum = 0;
  for (float v : y) sum += std::fabs(v);
  time_gpu(state, *c.commands, c.timestamps.get(), 5, double(kLayerBytes * kLayers), 0,
           [&](Commands& cmd, int i) { return record_chain(cmd, uint32_t(i) + 1); });
  state.counters["us/layer"] = state.counters["us"] / kLayers;
  state.counters["check"] = sum;
  if (!c.commands->begin().ok()) return;
  c.commands->copy(*c.sync, 0, *c.readback, 0, 16);
  c.commands->barrier();
  if (!c.commands->end().ok() || !c.commands->submit_and_wait().ok()) return;
  uint32_t words[4];
  std::memcpy(words, c.readback->mapped(), sizeof(words));
  if (words[1] != 0) state.SkipWithError("a workgroup gave up waiting (not all resident?)");
}

// One kind of product alone (0 q/k/v, 1 o, 2 gate/up, 3 down), its four layers' copies in turn
// with a barrier after each: the phase code's speed on that shape, beside vulkan_ops_bench's
// matvec cases of the real kernels.
void BM_Product(benchmark::State& state, uint32_t kind, uint32_t groups, uint32_t threads, bool int8) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const uint32_t block_rows = 2 * threads / c.device->caps().subgroup_size;
  auto pipe = probe_pipeline(*c.device, Mode::kBarriers, 0, threads, int8);
  if (!pipe.ok()) return state.SkipWithError(pipe.status().message().c_str());
  const BufferRange bufs[3] = {{c.weights.get()}, {c.act.get()}, {c.sync.get()}};
  const uint32_t blocks = kRows[kind] / block_rows, n_groups = groups ? std::min(groups, blocks) : blocks;
  const uint64_t cols = kind == 3 ? 14336 : 4096;
  time_gpu(state, *c.commands, c.timestamps.get(), 20, double(kRows[kind] * cols / 2), 0, [&](Commands& cmd, int i) {
    const Push push{4 * uint32_t(i % 4) + kind, 1, 0, 0};
    cmd.dispatch(**pipe, bufs, &push, sizeof(push), n_groups);
    return ok_status();
  });
}

int register_all() {
  // Phase code: x in f16 and float products, or x in int8 and integer dot products (as the
  // staged matvec; about twice as fast).
  for (bool int8 : {false, true}) {
    const std::string code = int8 ? "int8/" : "f16/";
    auto add = [&](const std::string& name, Mode mode, uint32_t prefetch, uint32_t groups, const std::string& grid,
                   uint32_t threads) {
      gpu_timed(benchmark::RegisterBenchmark(
          ("chain/" + code + name + "/t" + std::to_string(threads) + "_groups_" + grid).c_str(), BM_Chain, mode,
          prefetch, groups, threads, int8));
    };
    for (uint32_t t : {256u, 512u}) {
      for (uint32_t g : {0u, 264u, 528u}) add("barriers", Mode::kBarriers, 0, g, std::to_string(g), t);
      for (uint32_t g : {0u, 264u}) add("handoff", Mode::kHandoff, 0, g, std::to_string(g), t);
      // The first weight words requested before x is staged, kept in shared memory.
      for (uint32_t g : {0u, 264u}) add("barriers_early", Mode::kBarriers, 3, g, std::to_string(g), t);
    }
    // One workgroup a multiprocessor, one more, and two each: how many stay resident.
    const char* kGrids[] = {"cu", "cu+1", "2cu"};
    for (uint32_t t : {256u, 512u, 1024u})
      for (uint32_t g : {0u, 1u, 2u}) {
        if (int8 && g) continue;
        add("persistent", Mode::kPersistent, 0, g, kGrids[g], t);
      }
    if (!int8) add("persistent_prefetch", Mode::kPersistent, 1, 0, "cu", 256);
    // The next phase's first weight words loaded into shared memory during the grid barrier.
    for (uint32_t t : {256u, 512u, 1024u}) add("persistent_shared", Mode::kPersistent, 2, 0, "cu", t);
  }
  const char* kKinds[] = {"qkv_6144x4096", "o_4096x4096", "gate_up_28672x4096", "down_4096x14336"};
  for (uint32_t kind = 0; kind < 4; ++kind)
    for (uint32_t t : {256u, 512u})
      for (uint32_t g : {0u, 264u})
        gpu_timed(benchmark::RegisterBenchmark(("product/int8/" + std::string(kKinds[kind]) + "/t" + std::to_string(t) +
                                                "_groups_" + std::to_string(g))
                                                   .c_str(),
                                               BM_Product, kind, g, t, true));
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
