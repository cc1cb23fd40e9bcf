// zinc list [--json]: the models downloaded into the Hugging Face hub cache (zinc pull, -hf, and
// huggingface-cli's or llama.cpp's downloads), each as the -hf reference that names it, with its
// file, size and path.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/human_bytes.h"
#include "hub/cache.h"

namespace zinc::cli {
namespace {

struct ListOptions {
  bool json = false;
};

int list_models(const ListOptions& o) {
  auto root = hub::cache_root();
  if (!root.ok()) return fail(root.status().message());
  const auto models = hub::cached_models(*root);
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : models)
      out.push_back({{"model", m.reference()}, {"file", m.path}, {"bytes", m.bytes}, {"path", m.local.string()}});
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (models.empty()) {
    std::printf("no models in %s (zinc pull OWNER/NAME[:QUANT] downloads one)\n", root->c_str());
    return 0;
  }
  std::printf("%-48s %-44s %s\n", "MODEL", "FILE", "SIZE");
  for (const auto& m : models)
    std::printf("%-48s %-44s %s\n", m.reference().c_str(), m.path.c_str(), human_bytes(uint64_t(m.bytes)).c_str());
  return 0;
}

ZINC_REGISTER_COMMAND(list, Command{"list", "List the models downloaded into the Hugging Face hub cache",
                                    [](CLI::App& sub) {
                                      auto o = std::make_shared<ListOptions>();
                                      sub.add_flag("--json", o->json, "Print JSON");
                                      return [o]() { return list_models(*o); };
                                    }});

}  // namespace
}  // namespace zinc::cli
