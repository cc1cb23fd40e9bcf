// The subcommands of the zinc binary. Each command file registers itself with
// ZINC_REGISTER_COMMAND; main() builds the CLI from the registry.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace zinc::cli {

struct Command {
  std::string name;
  std::string summary;
  // Adds the options to `sub` and returns the action to run after a successful parse;
  // the action returns the process exit code.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();
bool register_command(Command c);

// Prints "error: <message>" on stderr; returns 1 (the exit code for failed commands).
int fail(const std::string& message);

// A whole file's bytes ("PATH: cannot open" when it cannot be read).
Result<std::string> read_text(const std::string& path);

}  // namespace zinc::cli

#define ZINC_REGISTER_COMMAND(id, ...) \
  static const bool zinc_command_registered_##id = ::zinc::cli::register_command(__VA_ARGS__)
