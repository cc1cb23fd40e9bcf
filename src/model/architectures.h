// The model architectures zinc runs (values of general.architecture).
#pragma once

#include <span>
#include <string_view>

namespace zinc::model {

std::span<const std::string_view> supported_architectures();
bool architecture_supported(std::string_view arch);

}  // namespace zinc::model
