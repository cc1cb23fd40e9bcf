// Opens the system's Vulkan loader (libvulkan.so.1) with dlopen and resolves the entry points of
// symbols.h. One binary therefore runs where there is no Vulkan at all.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>

#include "core/status.h"
#include "vulkan/symbols.h"

namespace zinc::vulkan {

// The function table. Global and instance symbols are filled by Loader and load_instance();
// device symbols by load_device(). A symbol the driver lacks stays null.
struct Api {
#define ZINC_VK_DECLARE(name) PFN_##name name = nullptr;
  ZINC_VK_GLOBAL_SYMBOLS(ZINC_VK_DECLARE)
  ZINC_VK_INSTANCE_SYMBOLS(ZINC_VK_DECLARE)
  ZINC_VK_DEVICE_SYMBOLS(ZINC_VK_DECLARE)
#undef ZINC_VK_DECLARE
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;

  void load_instance(VkInstance instance);
  void load_device(VkDevice device);
};

class Loader {
 public:
  // Errors: no loader library, or one without vkGetInstanceProcAddr.
  static Result<std::unique_ptr<Loader>> open();
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const Api& api() const { return api_; }
  Api& api() { return api_; }

 private:
  Loader() = default;
  void* library_ = nullptr;
  Api api_;
};

const char* result_name(VkResult r);

}  // namespace zinc::vulkan
