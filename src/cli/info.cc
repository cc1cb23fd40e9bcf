// zinc info MODEL [--json]: what a GGUF file holds and whether zinc can run it.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/command.h"
#include "core/human_bytes.h"
#include "gguf/file.h"
#include "model/architectures.h"

namespace zinc::cli {
namespace {

using nlohmann::ordered_json;

ordered_json value_to_json(const gguf::ValueView& v, bool summarize_arrays) {
  using gguf::ValueType;
  switch (v.type) {
    case ValueType::UINT8: case ValueType::UINT16: case ValueType::UINT32: case ValueType::UINT64:
      return v.scalar.u64;
    case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
      return v.scalar.i64;
    case ValueType::FLOAT32: case ValueType::FLOAT64:
      return v.scalar.f64;
    case ValueType::BOOL:
      return v.scalar.u64 != 0;
    case ValueType::STRING:
      return std::string(v.str);
    case ValueType::ARRAY: {
      if (summarize_arrays && v.array_count > 16)
        return ordered_json{{"array_of", gguf::value_type_name(v.array_type)}, {"count", v.array_count}};
      ordered_json a = ordered_json::array();
      for (uint64_t i = 0; i < v.array_count; ++i) {
        if (v.array_type == ValueType::STRING)
          a.push_back(std::string(v.array_strings[i]));
        else if (v.array_type == ValueType::FLOAT32 || v.array_type == ValueType::FLOAT64)
          a.push_back(v.array_float(i));
        else
          a.push_back(v.array_int(i));
      }
      return a;
    }
  }
  return nullptr;
}

ordered_json describe(const gguf::File& f) {
  const std::string arch = f.architecture();
  ordered_json j;
  j["version"] = f.version();
  j["architecture"] = arch;
  j["architecture_supported"] = model::architecture_supported(arch);
  if (auto n = f.find("general.name"); n && n->type == gguf::ValueType::STRING) j["name"] = std::string(n->str);

  ordered_json hparams = ordered_json::object();
  ordered_json general = ordered_json::object();
  ordered_json vocab = ordered_json::object();
  for (const auto& kv : f.metadata()) {
    std::string key(kv.key);
    if (!arch.empty() && key.rfind(arch + ".", 0) == 0)
      hparams[key.substr(arch.size() + 1)] = value_to_json(kv.value, true);
    else if (key.rfind("tokenizer.", 0) == 0) {
      if (key == "tokenizer.chat_template") {
        vocab["chat_template_bytes"] = kv.value.str.size();
      } else if (kv.value.type == gguf::ValueType::ARRAY) {
        vocab[key.substr(10) + "_count"] = kv.value.array_count;
      } else {
        vocab[key.substr(10)] = value_to_json(kv.value, true);
      }
    } else {
      general[key] = value_to_json(kv.value, true);
    }
  }
  j["hparams"] = hparams;
  j["vocab"] = vocab;
  j["metadata"] = general;

  ordered_json tensors = ordered_json::array();
  uint64_t total = 0;
  std::set<std::string> unsupported;
  for (const auto& t : f.tensors()) {
    ordered_json row;
    row["name"] = std::string(t.name);
    row["type"] = std::string(type_name(t.type));
    row["shape"] = std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max<uint32_t>(t.n_dims, 1));
    row["bytes"] = t.size_bytes;
    tensors.push_back(row);
    total += t.size_bytes;
    if (!type_info(t.type).can_dequantize) unsupported.insert(std::string(type_name(t.type)));
  }
  j["tensor_count"] = f.tensors().size();
  j["tensor_bytes"] = total;
  j["file_bytes"] = f.model_bytes();
  if (f.n_parts() > 1) j["parts"] = f.n_parts();
  j["unsupported_types"] = unsupported;
  j["supported"] = model::architecture_supported(arch) && unsupported.empty();
  j["tensors"] = tensors;
  return j;
}

void print_text(const ordered_json& j) {
  std::printf("GGUF version   %d\n", j["version"].get<int>());
  std::printf("architecture   %s (%s)\n", j["architecture"].get<std::string>().c_str(),
              j["architecture_supported"].get<bool>() ? "supported" : "not supported by zinc");
  if (j.contains("name")) std::printf("name           %s\n", j["name"].get<std::string>().c_str());
  std::printf("\nhyper-parameters\n");
  for (auto& [k, v] : j["hparams"].items()) std::printf("  %-36s %s\n", k.c_str(), v.dump(-1, ' ', false, ordered_json::error_handler_t::replace).c_str());
  std::printf("\nvocabulary\n");
  for (auto& [k, v] : j["vocab"].items()) std::printf("  %-36s %s\n", k.c_str(), v.dump(-1, ' ', false, ordered_json::error_handler_t::replace).c_str());
  std::printf("\nother metadata\n");
  for (auto& [k, v] : j["metadata"].items()) std::printf("  %-36s %s\n", k.c_str(), v.dump(-1, ' ', false, ordered_json::error_handler_t::replace).c_str());
  std::printf("\ntensors (%zu)\n", j["tensors"].size());
  std::printf("  %-40s %-8s %-24s %s\n", "name", "type", "shape", "bytes");
  for (auto& t : j["tensors"])
    std::printf("  %-40s %-8s %-24s %" PRIu64 "\n", t["name"].get<std::string>().c_str(),
                t["type"].get<std::string>().c_str(), t["shape"].dump().c_str(), t["bytes"].get<uint64_t>());
  std::printf("\ntotal tensor data %s (%" PRIu64 " bytes) in a file of %s\n",
              human_bytes(j["tensor_bytes"].get<uint64_t>()).c_str(), j["tensor_bytes"].get<uint64_t>(),
              human_bytes(j["file_bytes"].get<uint64_t>()).c_str());
  if (!j["unsupported_types"].empty())
    std::printf("types zinc cannot compute with: %s\n", j["unsupported_types"].dump().c_str());
  std::printf("zinc can run this model: %s\n", j["supported"].get<bool>() ? "yes" : "no");
}

struct InfoOptions {
  std::string model;
  bool json = false;
};

ZINC_REGISTER_COMMAND(info, Command{"info", "Show a GGUF file's metadata, hyper-parameters and tensors",
                                    [](CLI::App& sub) {
                                      auto o = std::make_shared<InfoOptions>();
                                      sub.add_option("model", o->model, "GGUF file")->required();
                                      sub.add_flag("--json", o->json, "Print JSON");
                                      return [o]() -> int {
                                        auto f = gguf::open_file(o->model);
                                        if (!f.ok()) return fail(f.status().message());
                                        ordered_json j = describe(**f);
                                        if (o->json)
                                          std::printf("%s\n", j.dump(1, ' ', false, ordered_json::error_handler_t::replace).c_str());
                                        else
                                          print_text(j);
                                        return 0;
                                      };
                                    }});

}  // namespace
}  // namespace zinc::cli
