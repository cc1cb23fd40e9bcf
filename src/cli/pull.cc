// zinc pull OWNER/NAME[:QUANT] [--hf-file FILE] [--hf-token TOKEN] [--offline] | zinc pull
// --model-url URL [-m PATH]: downloads a model into the cache as -hf / -mu would (hub/), without
// loading it, and prints its local path.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/model_flags.h"

namespace zinc::cli {
namespace {

struct PullOptions {
  std::string repo, model;
  hub::ModelSource source;
};

int pull(PullOptions& o) {
  if (!o.repo.empty() && !o.source.hf_repo.empty()) return fail("give the repository once");
  if (!o.repo.empty()) o.source.hf_repo = o.repo;
  if (o.source.hf_repo.empty() && o.source.url.empty()) return fail("give a repository OWNER/NAME[:QUANT] or --model-url URL");
  if (auto rc = resolve_model_flags(o.source, o.model)) return *rc;
  std::printf("%s\n", o.model.c_str());
  return 0;
}

ZINC_REGISTER_COMMAND(pull, Command{"pull", "Download a model from Hugging Face (or a URL) into the cache",
                                    [](CLI::App& sub) {
                                      auto o = std::make_shared<PullOptions>();
                                      sub.add_option("repo", o->repo, "Hugging Face repository OWNER/NAME[:QUANT]");
                                      add_model_flags(sub, o->source, "Where a --model-url download goes");
                                      return [o]() { return pull(*o); };
                                    }});

}  // namespace
}  // namespace zinc::cli
