#include "model/family.h"

#include <array>

namespace zinc::model {

const Family* find_family(std::string_view arch) {
  static const std::array<const Family*, 6> kFamilies = {&kLlamaFamily,    &kQwen2Family,  &kQwen3Family,
                                                         &kQwen3MoeFamily, &kQwen35Family, &kQwen35MoeFamily};
  for (const Family* f : kFamilies)
    if (f->arch == arch) return f;
  return nullptr;
}

}  // namespace zinc::model
