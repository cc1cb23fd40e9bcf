#include "model/architectures.h"

#include <algorithm>
#include <array>

namespace zinc::model {

namespace {
constexpr std::array<std::string_view, 6> kSupported = {"llama", "qwen2", "qwen3", "qwen3moe", "qwen35", "qwen35moe"};
}

std::span<const std::string_view> supported_architectures() { return kSupported; }

bool architecture_supported(std::string_view arch) {
  return std::find(kSupported.begin(), kSupported.end(), arch) != kSupported.end();
}

}  // namespace zinc::model
