#include "cpu/kernels/isa.h"

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define ZINC_X86_CPUID 1
#endif

namespace zinc::cpu {
namespace {

#if defined(ZINC_X86_CPUID)
struct Features {
  bool avx2_fma_f16c = false;
  bool avx512 = false;  // F, BW, VL, DQ, VNNI, VBMI and the OS saves zmm state
};

// CPUID feature bits, and XCR0 for the register state the OS saves (model: Intel SDM vol. 1 §14, 15).
Features detect() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  uint32_t xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_state = (xcr0_lo & 0x6) == 0x6, zmm_state = (xcr0_lo & 0xE6) == 0xE6;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = b & (1u << 5);
  f.avx2_fma_f16c = ymm_state && avx2 && fma && f16c;
  const bool avx512f = b & (1u << 16), avx512dq = b & (1u << 17), avx512bw = b & (1u << 30), avx512vl = b & (1u << 31),
             vbmi = c & (1u << 1), vnni = c & (1u << 11);
  f.avx512 = f.avx2_fma_f16c && zmm_state && avx512f && avx512dq && avx512bw && avx512vl && vbmi && vnni;
  return f;
}

const Features& features() {
  static const Features f = detect();
  return f;
}
#endif

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
#if defined(ZINC_X86_CPUID)
    case Isa::kAvx2: return features().avx2_fma_f16c;
    case Isa::kAvx512: return features().avx512;
#endif
    default: return false;
  }
}

Isa best_isa() {
  static const Isa best = [] {
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
      if (cpu_supports(isa)) return isa;
    return Isa::kScalar;
  }();
  return best;
}

}  // namespace zinc::cpu
