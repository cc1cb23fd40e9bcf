// zinc run with token ids: greedy decoding reproduces the reference engine's greedy tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_data.h"

namespace zinc::test {
namespace {

TEST(RunCommand, GreedyMatchesTheReferenceOnStories) {
  ZINC_REQUIRE_TEST_DATA();
  std::ifstream f(data_path("reference/manifest.json"));
  const auto manifest = nlohmann::json::parse(f);
  for (const auto& c : manifest["cases"]) {
    if (c["model"] != "models/stories260K.gguf" || c["prompt"] != "p1") continue;
    std::string tokens;
    for (int t : c["tokens"]) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
    const auto greedy = c["greedy"].get<std::vector<int>>();
    std::string out;
    ASSERT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + " --tokens " + tokens +
                              " -n " + std::to_string(greedy.size()) + " --temp 0 --stop 0 -t 1 2>/dev/null",
                          &out),
              0)
        << out;
    std::istringstream in(out);
    std::vector<int> got;
    for (int t; in >> t;) got.push_back(t);
    EXPECT_EQ(got, greedy);
    return;
  }
  FAIL() << "no stories260K p1 case in the manifest";
}

}  // namespace
}  // namespace zinc::test
