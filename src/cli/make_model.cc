// zinc make-model --preset NAME --out FILE [--type TYPE] [--seed N] [--vocab-from GGUF] [--threads N]:
// a random-weight model with the exact tensor layout and metadata of a real architecture
// (model/presets.h), quantized blocks written directly for quantized types.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/human_bytes.h"
#include "cpu/thread_pool.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/presets.h"
#include "model/presets_weights.h"
#include "model/quant_mix.h"

namespace zinc::cli {
namespace {

struct MakeModelOptions {
  std::string preset;
  std::string out;
  std::string type = "F32";
  uint64_t seed = 1;
  std::string vocab_from;
  int threads = 0;  // 0: one per hardware thread
};

// Every tokenizer.* key of `path`, in file order; n_vocab from tokenizer.ggml.tokens.
Result<model::Metadata> vocab_from(const std::string& path, uint32_t* n_vocab) {
  ZINC_ASSIGN_OR_RETURN(auto f, gguf::open_file(path));
  auto tokens = f->find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING);
  if (!tokens.ok()) return tokens.status().with_context(path);
  if (!*tokens || (*tokens)->array_count == 0) return error("%s: no tokenizer.ggml.tokens", path.c_str());
  if ((*tokens)->array_count > UINT32_MAX) return error("%s: too many tokens", path.c_str());
  *n_vocab = uint32_t((*tokens)->array_count);
  model::Metadata m;
  for (const auto& kv : f->metadata())
    if (kv.key.rfind("tokenizer.", 0) == 0) m.emplace_back(std::string(kv.key), gguf::Value::from_view(kv.value));
  return m;
}

int run_make_model(const MakeModelOptions& o) {
  const model::PresetConfig* preset = model::find_preset(o.preset);
  if (!preset) return fail("unknown preset '" + o.preset + "': valid presets are " + model::preset_list());
  const model::QuantMix* mix = model::find_quant_mix(o.type);
  if (!mix) return fail("unknown type '" + o.type + "': valid types are " + model::quant_mix_list());
  model::PresetConfig c = *preset;

  model::Metadata vocab;
  if (!o.vocab_from.empty()) {
    auto v = vocab_from(o.vocab_from, &c.n_vocab);
    if (!v.ok()) return fail(v.status().message());
    vocab = std::move(*v);
  } else {
    vocab = model::synthetic_vocab(c.n_vocab);
  }

  const std::vector<model::PresetTensor> tensors = model::preset_tensors(c);
  std::vector<model::MixTensor> mts;
  for (const auto& t : tensors) {
    model::MixTensor m{t.name};
    for (size_t i = 0; i < t.ne.size(); ++i) m.ne[i] = t.ne[i];
    mts.push_back(m);
  }
  auto plan = model::plan_quant_mix(*mix, {std::string(c.arch), c.n_layer, c.n_head, c.n_head_kv, c.n_expert}, mts);
  if (!plan.ok()) return fail(plan.status().message());

  const std::string name = "zinc-random-" + std::string(c.name) + "-seed" + std::to_string(o.seed);
  model::Metadata hparams = model::preset_hparams(c, name);
  gguf::Writer w;
  w.set(hparams[0].first, hparams[0].second);  // general.architecture
  w.set(hparams[1].first, hparams[1].second);  // general.name
  if (mix->base_type != TensorType::F32) {
    w.set("general.quantization_version", gguf::Value::u32(2));
    w.set("general.file_type", gguf::Value::u32(mix->file_type));
  }
  for (auto& kv : vocab) w.set(kv.first, std::move(kv.second));
  for (size_t i = 2; i < hparams.size(); ++i) w.set(hparams[i].first, std::move(hparams[i].second));

  cpu::ThreadPool pool(o.threads);
  const size_t n = tensors.size();
  uint64_t total_bytes = 0, n_params = 0;
  for (size_t i = 0; i < n; ++i) {
    const model::PresetTensor& t = tensors[i];
    const TensorType type = plan->types[i];
    int64_t n_rows = 1;
    for (size_t d = 1; d < t.ne.size(); ++d) n_rows *= t.ne[d];
    const size_t row_size = row_bytes(type, t.ne[0]);
    total_bytes += row_size * uint64_t(n_rows);
    n_params += uint64_t(t.ne[0]) * uint64_t(n_rows);
    Status s = w.add_tensor(t.name, type, t.ne, [&, i, type, n_rows, row_size](std::span<uint8_t> out) -> Status {
      std::string shape;
      for (int64_t d : t.ne) shape += (shape.empty() ? "[" : ", ") + std::to_string(d);
      std::printf("[%4zu/%4zu] %-40s %-22s %-6s %s\n", i + 1, n, t.name.c_str(), (shape + "]").c_str(),
                  std::string(type_name(type)).c_str(), human_bytes(out.size()).c_str());
      std::fflush(stdout);
      const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(t.ne[0], 1));
      pool.parallel_for(n_rows, grain, [&](int64_t begin, int64_t end) {
        model::random_rows(c, t, type, o.seed, begin, end, out.data() + size_t(begin) * row_size);
      });
      return Status();
    });
    if (!s.ok()) return fail(s.message());
  }
  const auto start = std::chrono::steady_clock::now();
  Status s = w.write(o.out);
  if (!s.ok()) return fail(s.message());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: preset %s as %s, %zu tensors, %.3f B parameters, %s of tensor data, vocabulary %u, in %.2f s "
              "with %d threads\n",
              o.out.c_str(), std::string(c.name).c_str(), std::string(mix->name).c_str(), n, double(n_params) * 1e-9,
              human_bytes(total_bytes).c_str(), c.n_vocab, seconds, pool.size());
  return 0;
}

ZINC_REGISTER_COMMAND(make_model, Command{"make-model", "Write a random-weight model with a real architecture's layout",
                                          [](CLI::App& sub) {
                                            auto o = std::make_shared<MakeModelOptions>();
                                            sub.add_option("--preset,-p", o->preset,
                                                           "Architecture and size: " + model::preset_list())
                                                ->required();
                                            sub.add_option("--out,-o", o->out, "GGUF file to write")->required();
                                            sub.add_option("--type", o->type,
                                                           "Weight types, a quantization mix: " + model::quant_mix_list())
                                                ->capture_default_str();
                                            sub.add_option("--seed", o->seed, "Random seed (same seed, same file)")
                                                ->capture_default_str();
                                            sub.add_option("--vocab-from", o->vocab_from,
                                                           "Copy every tokenizer.* key from this GGUF (default: a "
                                                           "synthetic vocabulary of the preset's size)");
                                            sub.add_option("--threads,-t", o->threads,
                                                           "Threads (default: one per hardware thread)")
                                                ->check(CLI::NonNegativeNumber);
                                            return [o]() { return run_make_model(*o); };
                                          }});

}  // namespace
}  // namespace zinc::cli
