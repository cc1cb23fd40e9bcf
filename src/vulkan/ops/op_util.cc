#include "vulkan/ops/op_util.h"

#include <cctype>

namespace zinc::vulkan::ops {

std::string shader_type_suffix(TensorType t) {
  std::string s(type_name(t));
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Grid grid_for(uint32_t n_groups) {
  Grid g;
  g.x = n_groups < 65535 ? (n_groups ? n_groups : 1) : 65535;
  g.y = (n_groups + g.x - 1) / g.x;
  if (g.y == 0) g.y = 1;
  return g;
}

}  // namespace zinc::vulkan::ops
