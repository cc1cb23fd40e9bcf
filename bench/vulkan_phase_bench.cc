// Where the time of one decode matvec goes, from clocks read inside the kernel
// (shaders/phase_clock.glsl; needs VK_KHR_shader_clock): Llama-3-8B's decode matrices, each timed
// as the last of a run of dependent dispatches over copies of the weights larger than the
// last-level cache, as in a decode step. Counters (phase_clock.h, us): per phase (entry, x
// staged, each row pass, done) when workgroups reach it (median, last) and how long it took
// (median). The manual time is the last workgroup's end. Cases ending in _px read x
// prequantized (MatvecOptions::prequantized_x), so their staging is only the phase marks. Each
// case first runs its products untimed for 100 ms (warm_clocks): the weight uploads before it
// let the GPU clock down.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "vulkan/ops/matvec.h"
#include "phase_clock.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kMaxWorkgroups = 4096;

struct Context : BenchDevice {
  std::unique_ptr<Buffer> x, y, norm, clock, clock_host;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& r) {
    for (auto* b : {&r.x, &r.y, &r.norm}) *b = r.make_buffer(14336 * 4);
    r.clock = r.make_buffer(ops::kPhaseClockBytes * kMaxWorkgroups);
    r.clock_host = r.make_buffer(ops::kPhaseClockBytes * kMaxWorkgroups, MemoryKind::kHostVisible);
    return r.upload_random(*r.norm, 2).ok();
  });
  return c;
}

// Copies of a random rows x cols matrix, together past a 50 MiB L2 (at least 4).
std::vector<std::unique_ptr<WeightBuffer>> weight_copies(TensorType type, int64_t rows, int64_t cols) {
  Context& c = *context();
  const std::vector<uint8_t> data = repeated_random_rows(type, rows, cols);
  const size_t n = std::max<size_t>(4, (128ull << 20) / data.size() + 1);
  std::vector<std::unique_ptr<WeightBuffer>> copies;
  for (size_t i = 0; i < n; ++i) {
    auto b = WeightBuffer::upload(*c.device, *c.uploader, type, rows, cols, data);
    if (!b.ok()) break;
    copies.push_back(std::move(*b));
  }
  return copies;
}

// The staged matvec's phases (shaders/matvec_staged.comp): entry, x staged, row passes, done.
constexpr const char* kPhaseNames[kClockPhases] = {"entry", "staged", "pass0", "pass1", "pass2", "pass3", "pass4",
                                                   "pass5", "pass6", "pass7", "done"};

enum class Input { kNorm, kResidual };

void BM_Phases(benchmark::State& state, TensorType type, int64_t rows, int64_t cols, bool swiglu, Input input,
               bool prequantized_x) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  if (!c.device->caps().shader_clock) return state.SkipWithError("no VK_KHR_shader_clock");
  ops::MatvecOptions opt;
  opt.swiglu = swiglu;
  opt.phase_clock = c.clock.get();
  opt.prequantized_x = prequantized_x;
  auto mv = ops::Matvec::create(*c.device, type, opt);
  if (!mv.ok()) return state.SkipWithError(mv.status().message().c_str());
  // x: random floats, or their records (on the device alike, for either kind of case).
  std::vector<float> xf(static_cast<size_t>(cols));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (float& v : xf) v = nd(rng);
  std::vector<uint32_t> words(xf.size());
  std::memcpy(words.data(), xf.data(), xf.size() * 4);
  if (prequantized_x) words = ops::Matvec::prequantize_x(xf.data(), 1, uint32_t(cols), uint32_t(cols), nullptr);
  const Status up = c.uploader->upload(*c.x, 0, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4});
  if (!up.ok()) return state.SkipWithError(up.message().c_str());
  if (!(*mv)->uses_staged(cols)) return state.SkipWithError("no staged kernel for these columns");
  const auto copies = weight_copies(type, rows, cols);
  if (copies.size() < 2) return state.SkipWithError("weight upload failed");
  const ops::Activations x{{c.x.get()}, uint32_t(cols)}, y{{c.y.get()}, uint32_t(rows)};
  const ops::InputNorm norm{{c.norm.get(), 0, uint64_t(cols) * 4}, 1e-5f, nullptr};
  const ops::Activations* residual = input == Input::kResidual ? &y : nullptr;
  const ops::InputNorm* in_norm = input == Input::kNorm ? &norm : nullptr;
  size_t warm = 0;
  const Status warmed = warm_clocks(*c.commands, [&](Commands& cmd) {
    const WeightBuffer& w = *copies[warm % copies.size()];
    const WeightBuffer& up = *copies[++warm % copies.size()];
    return swiglu ? (*mv)->record_swiglu(cmd, w, up, x, y, 1, nullptr, in_norm) : (*mv)->record(cmd, w, x, y, 1, residual, in_norm);
  });
  if (!warmed.ok()) return state.SkipWithError(warmed.message().c_str());
  for (auto _ : state) {
    Commands& cmd = *c.commands;
    if (!cmd.begin().ok()) return state.SkipWithError("begin");
    cmd.zero(*c.clock, 0, c.clock->size_bytes());
    cmd.barrier();
    for (size_t i = 0; i < copies.size(); ++i) {
      const WeightBuffer& w = *copies[i];
      const WeightBuffer& up = *copies[(i + 1) % copies.size()];
      const Status st = swiglu ? (*mv)->record_swiglu(cmd, w, up, x, y, 1, nullptr, in_norm)
                               : (*mv)->record(cmd, w, x, y, 1, residual, in_norm);
      if (!st.ok()) return state.SkipWithError(st.message().c_str());
      cmd.compute_barrier();
    }
    cmd.barrier();
    cmd.copy(*c.clock, 0, *c.clock_host, 0, c.clock->size_bytes());
    cmd.barrier();
    if (!cmd.end().ok() || !cmd.submit_and_wait().ok()) return state.SkipWithError("submit");
    const auto phases = read_phases(static_cast<const uint32_t*>(c.clock_host->mapped()), kMaxWorkgroups);
    if (phases.empty()) return state.SkipWithError("no phases recorded");
    state.SetIterationTime(report_phases(state, phases, kPhaseNames) * 1e-6);
  }
}

struct Case {
  const char* name;
  TensorType type;
  int64_t rows, cols;
  bool swiglu;
  Input input;
};

const Case kCases[] = {
    {"attn_q", TensorType::Q4_K, 4096, 4096, false, Input::kNorm},
    {"attn_k", TensorType::Q4_K, 1024, 4096, false, Input::kNorm},
    {"attn_v", TensorType::Q6_K, 1024, 4096, false, Input::kNorm},
    {"attn_output", TensorType::Q4_K, 4096, 4096, false, Input::kResidual},
    {"ffn_gate_up", TensorType::Q4_K, 14336, 4096, true, Input::kNorm},
    {"ffn_down_q4_k", TensorType::Q4_K, 4096, 14336, false, Input::kResidual},
    {"ffn_down_q6_k", TensorType::Q6_K, 4096, 14336, false, Input::kResidual},
};

[[maybe_unused]] const bool registered = [] {
  for (bool px : {false, true})
    for (const Case& k : kCases)
      benchmark::RegisterBenchmark((std::string("phases/") + k.name + (px ? "_px" : "")).c_str(), BM_Phases, k.type,
                                   k.rows, k.cols, k.swiglu, k.input, px)
          ->UseManualTime()
          ->Iterations(5)
          ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
}  // namespace zinc::vulkan
