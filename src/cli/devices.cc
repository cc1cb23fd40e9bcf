// zinc devices [--json]: the Vulkan devices zinc can use and what they support.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "vulkan/instance.h"

namespace zinc::cli {
namespace {

nlohmann::ordered_json to_json(const vulkan::DeviceCaps& d, int default_index) {
  return {{"index", d.index},
          {"name", d.name},
          {"type", d.type},
          {"default", d.index == default_index},
          {"driver", d.driver},
          {"vulkan", d.api_version_string()},
          {"memory_bytes", d.device_local_bytes},
          {"subgroup_size", d.subgroup_size},
          {"subgroup_size_range", {d.min_subgroup_size, d.max_subgroup_size}},
          {"fp16", d.fp16},
          {"int8", d.int8},
          {"int8_dot_product", d.int8_dot},
          {"cooperative_matrix_nv", d.coopmat_nv},
          {"cooperative_matrix_khr", d.coopmat_khr},
          {"max_storage_buffer_range", d.max_storage_buffer_range},
          {"max_allocation_bytes", d.max_allocation_bytes},
          {"shared_memory_bytes", d.max_compute_shared_bytes},
          {"compute_units", d.compute_units},
          {"shader_clock", d.shader_clock}};
}

ZINC_REGISTER_COMMAND(devices, Command{"devices", "List the Vulkan devices and their capabilities", [](CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "Print JSON");
  return [json]() -> int {
    auto inst = vulkan::Instance::create();
    if (!inst.ok()) {
      if (*json) {
        std::printf("[]\n");
        return 0;
      }
      std::printf("no Vulkan devices: %s (zinc runs on the CPU)\n", inst.status().message().c_str());
      return 0;
    }
    const auto& devs = (*inst)->devices();
    const int def = (*inst)->default_device();
    if (*json) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& d : devs) a.push_back(to_json(d, def));
      std::printf("%s\n", a.dump(1).c_str());
      return 0;
    }
    if (devs.empty()) std::printf("no Vulkan 1.2 compute devices (zinc runs on the CPU)\n");
    for (const auto& d : devs) {
      std::printf("%d%s %s (%s, Vulkan %s)\n", d.index, d.index == def ? "*" : " ", d.name.c_str(), d.type.c_str(),
                  d.api_version_string().c_str());
      std::printf("   driver %s\n", d.driver.c_str());
      std::printf("   memory %.1f GiB, subgroup %u (%u-%u), fp16 %s, int8 %s, int8 dot %s, coopmat nv %s khr %s\n",
                  double(d.device_local_bytes) / (1 << 30), d.subgroup_size, d.min_subgroup_size, d.max_subgroup_size,
                  d.fp16 ? "yes" : "no", d.int8 ? "yes" : "no", d.int8_dot ? "yes" : "no", d.coopmat_nv ? "yes" : "no",
                  d.coopmat_khr ? "yes" : "no");
      std::printf("   max buffer range %.0f MiB, max allocation %.0f MiB, shared memory %u KiB, shader clock %s",
                  double(d.max_storage_buffer_range) / (1 << 20), double(d.max_allocation_bytes) / (1 << 20),
                  d.max_compute_shared_bytes / 1024, d.shader_clock ? "yes" : "no");
      if (d.compute_units) std::printf(", compute units %u", d.compute_units);
      std::printf("\n");
    }
    return 0;
  };
}});

}  // namespace
}  // namespace zinc::cli
