// SPIR-V of every compute shader, compiled from src/vulkan/shaders/*.comp by glslc at build time
// and embedded in the binary (see src/vulkan/shaders/CMakeLists.txt for the variant list).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace zinc::vulkan {

struct ShaderCode {
  std::string_view name;  // variant name, e.g. "matvec_f32"
  std::span<const uint32_t> spirv;
};

// The shader named `name`, or an empty span when there is none.
std::span<const uint32_t> find_shader(std::string_view name);
std::span<const ShaderCode> all_shaders();

}  // namespace zinc::vulkan
