// The instruction sets the CPU kernels are built for, and which of them this CPU runs.
#pragma once

#include <string_view>

namespace zinc::cpu {

// Ordered from most portable to fastest.
enum class Isa {
  kScalar,  // baseline x86-64 / any CPU: the reference
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL/DQ + VNNI + VBMI (+ AVX2, FMA, F16C)
};
constexpr int kNumIsas = 3;

std::string_view isa_name(Isa isa);
// True when this CPU and OS can run kernels built for `isa`.
bool cpu_supports(Isa isa);
// The fastest instruction set this CPU supports (detected once).
Isa best_isa();

}  // namespace zinc::cpu
