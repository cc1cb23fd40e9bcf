// fp16 -> float32 through a 64K-entry table (exact; built once on first use).
#pragma once

#include <cstdint>

namespace zinc::cpu::ops {

const float* fp16_table();

}  // namespace zinc::cpu::ops
