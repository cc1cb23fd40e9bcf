#include "core/tensor_type.h"

#include <array>
#include <cctype>

#include "core/check.h"

namespace zinc {
namespace {

struct Entry {
  bool known;
  TensorTypeInfo info;
};

constexpr std::array<Entry, kMaxTensorTypeId + 1> kTypes = {{
    {true, {"F32", 1, 4, true}},        // 0
    {true, {"F16", 1, 2, true}},        // 1
    {true, {"Q4_0", 32, 18, true}},     // 2
    {true, {"Q4_1", 32, 20, true}},     // 3
    {false, {}},                        // 4 (removed Q4_2)
    {false, {}},                        // 5 (removed Q4_3)
    {true, {"Q5_0", 32, 22, true}},     // 6
    {true, {"Q5_1", 32, 24, true}},     // 7
    {true, {"Q8_0", 32, 34, true}},     // 8
    {true, {"Q8_1", 32, 36, false}},    // 9 (activation-only)
    {true, {"Q2_K", 256, 84, true}},    // 10
    {true, {"Q3_K", 256, 110, true}},   // 11
    {true, {"Q4_K", 256, 144, true}},   // 12
    {true, {"Q5_K", 256, 176, true}},   // 13
    {true, {"Q6_K", 256, 210, true}},   // 14
    {true, {"Q8_K", 256, 292, false}},  // 15 (activation-only)
    {true, {"IQ2_XXS", 256, 66, false}},
    {true, {"IQ2_XS", 256, 74, false}},
    {true, {"IQ3_XXS", 256, 98, false}},
    {true, {"IQ1_S", 256, 50, false}},
    {true, {"IQ4_NL", 32, 18, true}},   // 20
    {true, {"IQ3_S", 256, 110, false}},
    {true, {"IQ2_S", 256, 82, false}},
    {true, {"IQ4_XS", 256, 136, true}},  // 23
    {true, {"I8", 1, 1, false}},
    {true, {"I16", 1, 2, false}},
    {true, {"I32", 1, 4, false}},
    {true, {"I64", 1, 8, false}},
    {true, {"F64", 1, 8, false}},
    {true, {"IQ1_M", 256, 56, false}},
    {true, {"BF16", 1, 2, true}},        // 30
    {false, {}},                         // 31-33: removed Q4_0 repacks
    {false, {}},
    {false, {}},
    {true, {"TQ1_0", 256, 54, false}},   // 34
    {true, {"TQ2_0", 256, 66, false}},   // 35
    {false, {}},                         // 36-38: removed IQ4_NL repacks
    {false, {}},
    {false, {}},
    {true, {"MXFP4", 32, 17, true}},     // 39
    {true, {"NVFP4", 64, 36, false}},    // 40
    {true, {"Q1_0", 128, 18, false}},    // 41
}};

}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(uint32_t type_id) {
  if (type_id > kMaxTensorTypeId || !kTypes[type_id].known) return std::nullopt;
  return kTypes[type_id].info;
}

const TensorTypeInfo& type_info(TensorType t) {
  const uint32_t id = uint32_t(t);
  ZINC_CHECK(id <= kMaxTensorTypeId && kTypes[id].known);
  return kTypes[id].info;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (uint32_t id = 0; id <= kMaxTensorTypeId; ++id) {
    if (!kTypes[id].known) continue;
    std::string_view n = kTypes[id].info.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(name[i])) == n[i];
    if (same) return TensorType(id);
  }
  return std::nullopt;
}

}  // namespace zinc
