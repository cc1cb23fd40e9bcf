#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "cli/command.h"
#include "cli/model_flags.h"

namespace zinc::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

bool register_command(Command c) {
  command_registry().push_back(std::move(c));
  return true;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error("%s: cannot open", path.c_str());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace zinc::cli

int main(int argc, char** argv) {
  using namespace zinc::cli;
  CLI::App app{"zinc: LLM inference for GGUF models on the CPU and Vulkan GPUs", "zinc"};
  app.set_version_flag("--version", "zinc " ZINC_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::function<int()> action;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    auto act = c.setup(*sub);
    sub->callback([&action, act] { action = act; });
  }
  std::vector<const char*> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) args[i] = long_model_flag(args[i]);
  try {
    app.parse(argc, args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "error: %s (see zinc --help)\n", what.c_str());
    return 2;
  }
  return action ? action() : 0;
}
