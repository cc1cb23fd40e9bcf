// Reading back the phase clocks of shaders/phase_clock.glsl (the phase benchmarks): per
// workgroup and phase, the device clock (ns) and the multiprocessor's clock (cycles), zero where
// the workgroup did not reach the phase. Reported as benchmark counters in microseconds: per
// phase, when it was reached after the first workgroup's entry (median and last over the
// workgroups, device clock), and how long after the workgroup's previous phase (median, from
// the multiprocessor clock at the rate the device clock implies over whole workgroups), and that
// rate (sm_MHz).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace zinc::vulkan {

constexpr uint32_t kClockPhases = 16;

struct WorkgroupPhases {
  uint64_t device[kClockPhases], sm[kClockPhases];
};

// The workgroups in `words` (kClockPhases uvec4 each), up to the first that has no entry.
inline std::vector<WorkgroupPhases> read_phases(const uint32_t* words, uint32_t max_workgroups) {
  std::vector<WorkgroupPhases> wgs;
  for (uint32_t w = 0; w < max_workgroups; ++w) {
    const uint32_t* r = words + size_t(w) * kClockPhases * 4;
    if (r[0] == 0 && r[1] == 0) break;
    WorkgroupPhases ph{};
    for (uint32_t p = 0; p < kClockPhases; ++p) {
      ph.device[p] = uint64_t(r[4 * p]) | uint64_t(r[4 * p + 1]) << 32;
      ph.sm[p] = uint64_t(r[4 * p + 2]) | uint64_t(r[4 * p + 3]) << 32;
    }
    wgs.push_back(ph);
  }
  return wgs;
}

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Counters "<name>_at" (median), "<name>_last" and "<name>_took" for each named phase reached by
// some workgroup (names[p] null: not reported, and not a previous phase either); the last
// workgroup's final phase time is returned (us), for the manual time.
inline double report_phases(benchmark::State& state, const std::vector<WorkgroupPhases>& wgs,
                            const char* const names[kClockPhases]) {
  if (wgs.empty()) return 0;
  uint64_t t0 = UINT64_MAX;
  double device_ns = 0, cycles = 0;
  for (const WorkgroupPhases& w : wgs) {
    t0 = std::min(t0, w.device[0]);
    uint32_t last = 0;
    for (uint32_t p = 1; p < kClockPhases; ++p)
      if (names[p] && w.device[p] != 0) last = p;
    if (last && w.device[last] > w.device[0]) {
      device_ns += double(w.device[last] - w.device[0]);
      cycles += double(w.sm[last] - w.sm[0]);
    }
  }
  const double us_per_cycle = cycles > 0 ? device_ns / cycles * 1e-3 : 0;
  double end = 0;
  for (uint32_t p = 0; p < kClockPhases; ++p) {
    if (!names[p]) continue;
    std::vector<double> at, took;
    for (const WorkgroupPhases& w : wgs) {
      if (w.device[p] == 0) continue;
      at.push_back(double(w.device[p] - t0) * 1e-3);
      for (int q = int(p) - 1; q >= 0; --q)
        if (names[q] && w.sm[q] != 0) {
          took.push_back(double(w.sm[p] - w.sm[q]) * us_per_cycle);
          break;
        }
    }
    if (at.empty()) continue;
    const double last = *std::max_element(at.begin(), at.end());
    state.counters[std::string(names[p]) + "_at"] = median_of(at);
    state.counters[std::string(names[p]) + "_last"] = last;
    if (!took.empty()) state.counters[std::string(names[p]) + "_took"] = median_of(took);
    end = std::max(end, last);
  }
  state.counters["workgroups"] = double(wgs.size());
  // The multiprocessors' clock while the kernel ran: a GPU that idles between the benchmark's
  // submits may run them below its decode-step clock.
  if (us_per_cycle > 0) state.counters["sm_MHz"] = 1.0 / us_per_cycle;
  return end;
}

}  // namespace zinc::vulkan
