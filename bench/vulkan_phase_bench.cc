// Where the time of one decode matvec goes, from clocks read inside the kernel
// (shaders/phase_clock.glsl; needs VK_KHR_shader_clock): Llama-3-8B's decode matrices, each timed
// as the last of a run of dependent dispatches over copies of the weights larger than the
// last-level cache, as in a decode step. Per case it prints, in microseconds from the first
// workgroup's start (device clock): when workgroups start (median, last), how long staging x
// takes and each row pass (medians, from the multiprocessor clock), and when workgroups end
// (median, last). The manual time is the last workgroup's end. Cases ending in _px read x
// prequantized (MatvecOptions::prequantized_x), so their staging is only the phase marks.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "vulkan/ops/matvec.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kMaxWorkgroups = 4096;
constexpr uint32_t kEntry = 0, kStaged = 1, kFirstPass = 2, kMaxPasses = 8, kDone = 10;

struct Context : BenchDevice {
  std::unique_ptr<Buffer> x, y, norm, clock, clock_host;
};

Context* context() {
  static Context* c = [] {
    auto* r = new Context();
    r->open();
    if (!r->device) return r;
    const Device& d = *r->device;
    r->x = std::move(Buffer::create(d, 14336 * 4, MemoryKind::kDeviceLocal).value());
    r->y = std::move(Buffer::create(d, 14336 * 4, MemoryKind::kDeviceLocal).value());
    r->norm = std::move(Buffer::create(d, 14336 * 4, MemoryKind::kDeviceLocal).value());
    const uint64_t clock_bytes = ops::kPhaseClockBytes * kMaxWorkgroups;
    r->clock = std::move(Buffer::create(d, clock_bytes, MemoryKind::kDeviceLocal).value());
    r->clock_host = std::move(Buffer::create(d, clock_bytes, MemoryKind::kHostVisible).value());
    if (!r->upload_random(*r->norm, 2).ok()) r->device.reset();
    return r;
  }();
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

struct Phases {
  uint64_t device[16], sm[16];  // clock readings of one workgroup; 0 where not reached
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

struct Summary {
  double start_p50, start_max, staged, passes[kMaxPasses], end_p50, end_max;  // us
  uint32_t n_passes = 0;
};

// Device clock for when, multiprocessor clock (at the rate the device clock implies) for how long.
Summary summarize(const std::vector<Phases>& wgs) {
  Summary s{};
  uint64_t t0 = UINT64_MAX;
  double device_ns = 0, sm_cycles = 0;
  for (const Phases& w : wgs) {
    t0 = std::min(t0, w.device[kEntry]);
    if (w.device[kDone] > w.device[kEntry]) {
      device_ns += double(w.device[kDone] - w.device[kEntry]);
      sm_cycles += double(w.sm[kDone] - w.sm[kEntry]);
    }
  }
  const double us_per_cycle = sm_cycles > 0 ? device_ns / sm_cycles * 1e-3 : 0;
  std::vector<double> starts, ends, staged, passes[kMaxPasses];
  for (const Phases& w : wgs) {
    starts.push_back(double(w.device[kEntry] - t0) * 1e-3);
    ends.push_back(double(w.device[kDone] - t0) * 1e-3);
    staged.push_back(double(w.sm[kStaged] - w.sm[kEntry]) * us_per_cycle);
    uint64_t prev = w.sm[kStaged];
    for (uint32_t p = 0; p < kMaxPasses && w.sm[kFirstPass + p] != 0; ++p) {
      passes[p].push_back(double(w.sm[kFirstPass + p] - prev) * us_per_cycle);
      prev = w.sm[kFirstPass + p];
      s.n_passes = std::max(s.n_passes, p + 1);
    }
  }
  s.start_p50 = median(starts);
  s.start_max = *std::max_element(starts.begin(), starts.end());
  s.staged = median(staged);
  for (uint32_t p = 0; p < s.n_passes; ++p) s.passes[p] = median(passes[p]);
  s.end_p50 = median(ends);
  s.end_max = *std::max_element(ends.begin(), ends.end());
  return s;
}

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
  std::vector<Phases> wgs;
  Summary s{};
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
    const auto* words = static_cast<const uint32_t*>(c.clock_host->mapped());
    wgs.clear();
    for (uint32_t w = 0; w < kMaxWorkgroups; ++w) {
      const uint32_t* r = words + size_t(w) * ops::kPhaseClockBytes / 4;
      if (r[0] == 0 && r[1] == 0) break;  // past the last workgroup
      Phases ph{};
      for (uint32_t p = 0; p < 16; ++p) {
        ph.device[p] = uint64_t(r[4 * p]) | uint64_t(r[4 * p + 1]) << 32;
        ph.sm[p] = uint64_t(r[4 * p + 2]) | uint64_t(r[4 * p + 3]) << 32;
      }
      wgs.push_back(ph);
    }
    if (wgs.empty()) return state.SkipWithError("no phases recorded");
    s = summarize(wgs);
    state.SetIterationTime(s.end_max * 1e-6);
  }
  state.counters["workgroups"] = double(wgs.size());
  state.counters["start_p50"] = s.start_p50;
  state.counters["start_max"] = s.start_max;
  state.counters["staged"] = s.staged;
  for (uint32_t p = 0; p < s.n_passes; ++p) state.counters["pass" + std::to_string(p)] = s.passes[p];
  state.counters["end_p50"] = s.end_p50;
  state.counters["end_max"] = s.end_max;
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
