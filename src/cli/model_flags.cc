#include "cli/model_flags.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "cli/command.h"

namespace zinc::cli {

void add_model_flags(CLI::App& sub, hub::ModelSource& source, const std::string& file_help) {
  sub.add_option("-m,--model", source.path, file_help);
  sub.add_option("--hf-repo", source.hf_repo, "Hugging Face repository OWNER/NAME[:QUANT] to download the model from (-hf)");
  sub.add_option("--hf-file", source.hf_file, "The repository's file to use instead of QUANT's (-hff)");
  sub.add_option("--hf-token", source.hf_token, "Hugging Face access token (default: $HF_TOKEN) (-hft)");
  sub.add_option("--model-url", source.url, "URL to download the model from (to -m PATH if given) (-mu)");
  sub.add_flag("--offline", source.offline, "Use only models already downloaded");
}

std::optional<int> resolve_model_flags(const hub::ModelSource& source, std::string& model) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool open_line = false;
  auto notice = [&](const std::string& line, bool transient) {
    if (transient && !tty) return;
    if (transient) {
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
      open_line = true;
    } else {
      std::fprintf(stderr, "%szinc: %s\n", open_line ? "\r\033[K" : "", line.c_str());
      open_line = false;
    }
    std::fflush(stderr);
  };
  auto path = hub::resolve_model(source, notice);
  if (open_line) std::fprintf(stderr, "\n");
  if (!path.ok()) return fail(path.status().message());
  model = *path;
  return std::nullopt;
}

const char* long_model_flag(const char* arg) {
  static constexpr const char* kShort[][2] = {
      {"-hf", "--hf-repo"}, {"-hfr", "--hf-repo"}, {"-hff", "--hf-file"}, {"-hft", "--hf-token"}, {"-mu", "--model-url"},
      {"-md", "--model-draft"}};
  for (const auto& s : kShort)
    if (std::strcmp(arg, s[0]) == 0) return s[1];
  return arg;
}

}  // namespace zinc::cli
