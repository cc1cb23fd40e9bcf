// The flags that name a command's model: -m FILE, or one to fetch it (hub/model_source.h):
// --hf-repo OWNER/NAME[:QUANT], --hf-file, --hf-token, --model-url, --offline. llama.cpp's short
// forms -hf, -hfr, -hff, -hft and -mu are accepted too (rewritten by long_model_flag before
// parsing, since single-dash names have one letter in CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "hub/model_source.h"

namespace zinc::cli {

void add_model_flags(CLI::App& sub, hub::ModelSource& source, const std::string& file_help);

// Sets `model` to the local file the flags name, downloading it where needed (progress on
// stderr); on failure prints the error and returns the exit code.
std::optional<int> resolve_model_flags(const hub::ModelSource& source, std::string& model);

// Runs `command(o)` once o.source is resolved into o.model.
template <typename Options, typename Command>
int with_model(Options& o, Command command) {
  if (auto rc = resolve_model_flags(o.source, o.model)) return *rc;
  return command(o);
}

// "-hf" -> "--hf-repo" and the other short forms (with zinc run's "-md" -> "--model-draft"); any
// other argument as it is.
const char* long_model_flag(const char* arg);

}  // namespace zinc::cli
