// zinc quantize IN OUT TYPE [--threads N]: rewrites a GGUF model with the per-tensor types of a
// llama.cpp quantization mix (model/quant_mix.h). Streams: one tensor in memory at a time.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/human_bytes.h"
#include "core/quant.h"
#include "cpu/thread_pool.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/quant_mix.h"

namespace zinc::cli {
namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  int threads = 0;  // 0: one per hardware thread
};

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

// Converts `src` (ne[0] = n_per_row) into `dst` of type `to`, rows split over the pool.
Status convert_rows(cpu::ThreadPool& pool, const gguf::TensorInfo& src, TensorType to, std::span<uint8_t> dst) {
  const int64_t n_per_row = src.ne[0];
  if (n_per_row == 0) return Status();
  const int64_t n_rows = src.n_elements() / n_per_row;
  const size_t src_row = src.row_bytes(), dst_row = row_bytes(to, n_per_row);
  if (dst.size() != dst_row * size_t(n_rows)) return error("internal: output size mismatch");
  const int64_t grain = std::max<int64_t>(1, 65536 / n_per_row);
  pool.parallel_for(n_rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(n_per_row));
    for (int64_t r = begin; r < end; ++r) {
      const uint8_t* in = src.data + size_t(r) * src_row;
      const float* f = reinterpret_cast<const float*>(in);
      if (src.type != TensorType::F32) {
        dequantize_row(src.type, in, row.data(), n_per_row);
        f = row.data();
      } else if (reinterpret_cast<uintptr_t>(in) % alignof(float) != 0) {
        std::memcpy(row.data(), in, src_row);
        f = row.data();
      }
      quantize_row(to, f, dst.data() + size_t(r) * dst_row, n_per_row);
    }
  });
  return Status();
}

int run_quantize(const QuantizeOptions& o) {
  const model::QuantMix* mix = model::find_quant_mix(o.type);
  if (!mix) return fail("unknown type '" + o.type + "': valid types are " + model::quant_mix_list());
  if (same_file(o.input, o.output))
    return fail("the output " + o.output + " is the input file: write to another path");
  auto opened = gguf::open_file(o.input);
  if (!opened.ok()) return fail(opened.status().message());
  const gguf::File& in = **opened;

  auto model = model::mix_model_from_gguf(in);
  if (!model.ok()) return fail(o.input + ": " + model.status().message());
  std::vector<model::MixTensor> mts;
  for (const auto& t : in.tensors()) mts.push_back({std::string(t.name), t.ne, t.type});
  auto plan = model::plan_quant_mix(*mix, *model, mts);
  if (!plan.ok()) return fail(o.input + ": " + plan.status().message());

  // Refuse before writing anything when a conversion is not available.
  for (size_t i = 0; i < mts.size(); ++i) {
    const TensorType from = mts[i].type, to = plan->types[i];
    if (from == to) continue;
    if (from != TensorType::F32 && !can_dequantize(from))
      return fail(o.input + ": tensor '" + mts[i].name + "' is " + std::string(type_name(from)) +
                  ", which this build cannot dequantize to requantize as " + std::string(type_name(to)));
    if (!can_quantize(to))
      return fail("tensor '" + mts[i].name + "': this build cannot quantize to " + std::string(type_name(to)));
  }

  gguf::Writer w;
  for (const auto& kv : in.metadata()) {
    const std::string key(kv.key);
    if (key == "general.alignment" || key.rfind("split.", 0) == 0) continue;  // written with 32, one file
    w.set(key, gguf::Value::from_view(kv.value));
  }
  w.set("general.quantization_version", gguf::Value::u32(2));
  w.set("general.file_type", gguf::Value::u32(mix->file_type));

  cpu::ThreadPool pool(o.threads);
  const auto start = std::chrono::steady_clock::now();
  const size_t n = in.tensors().size();
  uint64_t bytes_in = 0, bytes_out = 0, n_elements = 0;
  for (size_t i = 0; i < n; ++i) {
    const gguf::TensorInfo& t = in.tensors()[i];
    const TensorType to = plan->types[i];
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + std::max<uint32_t>(t.n_dims, 1));
    Status s = w.add_tensor(std::string(t.name), to, ne, [&pool, &t, to, i, n](std::span<uint8_t> out) -> Status {
      std::printf("[%4zu/%4zu] %-40s %-22s %6s -> %-6s %12s -> %s\n", i + 1, n, std::string(t.name).c_str(),
                  t.shape_string().c_str(), std::string(type_name(t.type)).c_str(),
                  std::string(type_name(to)).c_str(), human_bytes(t.size_bytes).c_str(), human_bytes(out.size()).c_str());
      std::fflush(stdout);
      if (t.type == to) {
        std::memcpy(out.data(), t.data, out.size());
        return Status();
      }
      return convert_rows(pool, t, to, out);
    });
    if (!s.ok()) return fail(o.output + ": " + s.message());
    bytes_in += t.size_bytes;
    bytes_out += row_bytes(to, t.ne[0]) * uint64_t(t.ne[0] ? t.n_elements() / t.ne[0] : 0);
    n_elements += uint64_t(t.n_elements());
  }
  Status s = w.write(o.output);
  if (!s.ok()) return fail(s.message());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double weights = double(std::max<uint64_t>(n_elements, 1));
  std::printf("%s: %zu tensors, %s (%.2f bits/weight) -> %s (%.2f bits/weight) as %s", o.output.c_str(), n,
              human_bytes(bytes_in).c_str(), bytes_in * 8.0 / weights, human_bytes(bytes_out).c_str(), bytes_out * 8.0 / weights,
              std::string(mix->name).c_str());
  if (plan->n_fallback) std::printf(", %d with a fallback type for their row length", plan->n_fallback);
  std::printf(", in %.2f s with %d threads\n", seconds, pool.size());
  return 0;
}

ZINC_REGISTER_COMMAND(quantize, Command{"quantize", "Convert a GGUF model to a quantization mix (Q4_K_M, Q8_0, ...)",
                                        [](CLI::App& sub) {
                                          auto o = std::make_shared<QuantizeOptions>();
                                          sub.add_option("input", o->input, "Source GGUF (F32/F16/BF16 or quantized)")
                                              ->required();
                                          sub.add_option("output", o->output, "GGUF file to write")->required();
                                          sub.add_option("type", o->type, "Target mix: " + model::quant_mix_list())
                                              ->required();
                                          sub.add_option("--threads,-t", o->threads,
                                                         "Threads (default: one per hardware thread)")
                                              ->check(CLI::NonNegativeNumber);
                                          return [o]() { return run_quantize(*o); };
                                        }});

}  // namespace
}  // namespace zinc::cli
