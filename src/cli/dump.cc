// zinc dump MODEL TENSOR -o FILE|-: writes one tensor, dequantized to float32 (ne[0] contiguous,
// little-endian, no header), for inspection and for comparing against other tools.
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/quant.h"
#include "gguf/file.h"

namespace zinc::cli {
namespace {

struct DumpOptions {
  std::string model;
  std::string tensor;
  std::string output;
};

// Removes a partially written output, but only a regular file: never a device or a pipe.
void remove_partial(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
}

// Streams the tensor row by row into `path`; a failure removes the partial file.
Status dump_tensor(const gguf::TensorInfo& t, const std::string& path) {
  const bool to_stdout = path == "-";
  std::FILE* f = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  const std::string where = to_stdout ? std::string("stdout") : "'" + path + "'";
  if (!f) return error("cannot write %s: %s", where.c_str(), std::strerror(errno));
  const int64_t n_rows = t.ne[1] * t.ne[2] * t.ne[3];
  const size_t src_row_bytes = t.row_bytes();
  std::vector<float> row(static_cast<size_t>(t.ne[0]));
  bool ok = true;
  for (int64_t r = 0; r < n_rows && ok; ++r) {
    dequantize_row(t.type, t.data + size_t(r) * src_row_bytes, row.data(), t.ne[0]);
    ok = std::fwrite(row.data(), sizeof(float), row.size(), f) == row.size();
  }
  const int saved_errno = errno;
  if ((to_stdout ? std::fflush(f) : std::fclose(f)) != 0 || !ok) {
    if (!to_stdout) remove_partial(path);
    return error("cannot write %s: %s", where.c_str(), std::strerror(ok ? errno : saved_errno));
  }
  return ok_status();
}

int run_dump(const DumpOptions& o) {
  auto file = gguf::open_file(o.model);
  if (!file.ok()) return fail(file.status().message());
  const gguf::File& f = **file;
  const gguf::TensorInfo* t = f.find_tensor(o.tensor);
  if (!t)
    return fail(format("%s: no tensor named '%s' (the file has %zu tensors; 'zinc info' lists them)",
                       o.model.c_str(), o.tensor.c_str(), f.tensors().size()));
  if (Status s = check_dequantize(t->type); !s.ok())
    return fail(format("%s: tensor '%s': %s", o.model.c_str(), o.tensor.c_str(), s.message().c_str()));
  if (Status s = dump_tensor(*t, o.output); !s.ok()) return fail(s.message());
  if (o.output == "-") return 0;
  std::printf("wrote %s %s %s as %" PRId64 " float32 values (%" PRId64 " bytes) to %s\n",
              std::string(t->name).c_str(), std::string(type_name(t->type)).c_str(), t->shape_string().c_str(),
              t->n_elements(), t->n_elements() * 4, o.output.c_str());
  return 0;
}

ZINC_REGISTER_COMMAND(dump, Command{"dump", "Write one tensor, dequantized to float32, to a file",
                                    [](CLI::App& sub) {
                                      auto o = std::make_shared<DumpOptions>();
                                      sub.add_option("model", o->model, "GGUF file")->required();
                                      sub.add_option("tensor", o->tensor, "Tensor name, as 'zinc info' lists it")
                                          ->required();
                                      sub.add_option("-o,--output", o->output,
                                                     "Output file ('-' for stdout): raw little-endian float32, ne[0] contiguous")
                                          ->required();
                                      return [o]() -> int { return run_dump(*o); };
                                    }});

}  // namespace
}  // namespace zinc::cli
