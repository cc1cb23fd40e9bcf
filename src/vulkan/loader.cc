#include "vulkan/loader.h"

#include <dlfcn.h>

namespace zinc::vulkan {

Result<std::unique_ptr<Loader>> Loader::open() {
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return error("no Vulkan loader (libvulkan.so.1) on this system");
  std::unique_ptr<Loader> l(new Loader());
  l->library_ = lib;
  l->api_.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!l->api_.vkGetInstanceProcAddr) return error("the Vulkan loader has no vkGetInstanceProcAddr");
#define ZINC_VK_LOAD(name) \
  l->api_.name = reinterpret_cast<PFN_##name>(l->api_.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  ZINC_VK_GLOBAL_SYMBOLS(ZINC_VK_LOAD)
#undef ZINC_VK_LOAD
  if (!l->api_.vkCreateInstance) return error("the Vulkan loader has no vkCreateInstance");
  return l;
}

Loader::~Loader() {
  if (library_) dlclose(library_);
}

void Api::load_instance(VkInstance instance) {
#define ZINC_VK_LOAD(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));
  ZINC_VK_INSTANCE_SYMBOLS(ZINC_VK_LOAD)
#undef ZINC_VK_LOAD
}

void Api::load_device(VkDevice device) {
#define ZINC_VK_LOAD(name) name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
  ZINC_VK_DEVICE_SYMBOLS(ZINC_VK_LOAD)
#undef ZINC_VK_LOAD
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

}  // namespace zinc::vulkan
