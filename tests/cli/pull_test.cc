// zinc pull and -hf on a generating command, against a hub on 127.0.0.1 (support/fake_hub.h).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/fake_hub.h"
#include "support/gguf_split.h"
#include "support/test_data.h"

namespace zinc::test {
namespace {

std::string stories_bytes() {
  const auto b = read_file(data_path("models/stories260K.gguf"));
  return std::string(b.begin(), b.end());
}

// HF_ENDPOINT and HF_HUB_CACHE for a child zinc.
std::string hub_env(const FakeHub& hub, const std::string& cache) {
  return "HF_ENDPOINT=" + hub.endpoint() + " HF_HUB_CACHE=" + cache + " HF_TOKEN= ";
}

TEST(PullCommand, DownloadsIntoTheCacheAndPrintsThePath) {
  ZINC_REQUIRE_TEST_DATA();
  FakeHub hub("tiny/stories-GGUF", {{"stories-F32.gguf", stories_bytes()}});
  const std::string cache = temp_path("pull_cache");
  std::string out;
  ASSERT_EQ(run_command("{ " + hub_env(hub, cache) + zinc_binary() + " pull tiny/stories-GGUF:f32 2>/dev/null; }", &out), 0) << out;
  const std::string expected = cache + "/models--tiny--stories-GGUF/snapshots/" + FakeHub::kCommit + "/stories-F32.gguf\n";
  EXPECT_EQ(out, expected);
  EXPECT_EQ(read_file(out.substr(0, out.size() - 1)), read_file(data_path("models/stories260K.gguf")));
  // Errors are one line and exit 1.
  EXPECT_EQ(run_command(hub_env(hub, cache) + zinc_binary() + " pull tiny/stories-GGUF:Q2_K", &out), 1);
  EXPECT_EQ(out, "error: tiny/stories-GGUF has no GGUF model file tagged Q2_K (GGUF files there: stories-F32.gguf)\n");
  EXPECT_EQ(run_command(zinc_binary() + " pull not-a-repo", &out), 1);
  EXPECT_EQ(out, "error: 'not-a-repo' is not a Hugging Face repository: expected OWNER/NAME[:QUANT]\n");
}

// `zinc run -hf` generates what `zinc run -m` of the same file does, and downloads only once.
TEST(PullCommand, RunTakesTheModelFromTheHub) {
  ZINC_REQUIRE_TEST_DATA();
  FakeHub hub("tiny/stories-GGUF", {{"stories-F32.gguf", stories_bytes()}});
  const std::string cache = temp_path("run_hf_cache");
  const std::string args = " --tokens 1,403,407 -n 12 --temp 0 -t 1";
  std::string local, remote, again;
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + args + " 2>/dev/null; }", &local), 0) << local;
  ASSERT_EQ(run_command("{ " + hub_env(hub, cache) + zinc_binary() + " run -hf tiny/stories-GGUF" + args + " 2>/dev/null; }", &remote), 0) << remote;
  EXPECT_EQ(remote, local);
  ASSERT_EQ(run_command("{ " + hub_env(hub, cache) + zinc_binary() + " run --offline --hf-repo tiny/stories-GGUF" + args + " 2>/dev/null; }", &again), 0) << again;
  EXPECT_EQ(again, local);
  EXPECT_EQ(hub.downloads.load(), 1);
  std::string out;
  EXPECT_EQ(run_command(hub_env(hub, cache) + zinc_binary() + " run -m x.gguf -hf tiny/stories-GGUF --tokens 1", &out), 1);
  EXPECT_EQ(out, "error: give the model as a file (-m) or a repository (--hf-repo), not both\n");
}

// A split model on the hub: every part is downloaded and the model runs from the first.
TEST(PullCommand, RunTakesASplitModelFromTheHub) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string prefix = temp_path("hub-split");
  ASSERT_TRUE(write_split(data_path("models/stories260K.gguf"), prefix, 2).ok());
  std::vector<FakeHub::File> files;
  for (int i = 0; i < 2; ++i) {
    const auto b = read_file(split_part_path(prefix, i, 2));
    files.emplace_back(split_part_path("F32/stories-F32", i, 2), std::string(b.begin(), b.end()));
  }
  FakeHub hub("tiny/stories-GGUF", files);
  const std::string args = " --tokens 1,403,407 -n 12 --temp 0 -t 1 2>/dev/null; }";
  std::string local, remote;
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + args, &local), 0) << local;
  ASSERT_EQ(run_command("{ " + hub_env(hub, temp_path("split_cache")) + zinc_binary() + " run -hf tiny/stories-GGUF:F32" + args, &remote), 0) << remote;
  EXPECT_EQ(remote, local);
  EXPECT_EQ(hub.downloads.load(), 2);
}

// zinc list shows what pull fetched, as the -hf references that name it (a split model once).
TEST(PullCommand, ListShowsTheCachedModels) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string prefix = temp_path("list-split");
  ASSERT_TRUE(write_split(data_path("models/stories260K.gguf"), prefix, 2).ok());
  std::vector<FakeHub::File> files = {{"stories-Q8_0.gguf", stories_bytes()}};
  for (int i = 0; i < 2; ++i) {
    const auto b = read_file(split_part_path(prefix, i, 2));
    files.emplace_back(split_part_path("stories-F32", i, 2), std::string(b.begin(), b.end()));
  }
  FakeHub hub("tiny/stories-GGUF", files);
  const std::string cache = temp_path("list_cache");
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " list", &out), 0) << out;  // whatever the machine's cache holds
  ASSERT_EQ(run_command("HF_HUB_CACHE=" + cache + " " + zinc_binary() + " list", &out), 0) << out;
  EXPECT_EQ(out, "no models in " + cache + " (zinc pull OWNER/NAME[:QUANT] downloads one)\n");
  ASSERT_EQ(run_command("{ " + hub_env(hub, cache) + zinc_binary() + " pull tiny/stories-GGUF:Q8_0 >/dev/null 2>&1; }", &out), 0) << out;
  ASSERT_EQ(run_command("{ " + hub_env(hub, cache) + zinc_binary() + " pull tiny/stories-GGUF:F32 >/dev/null 2>&1; }", &out), 0) << out;
  ASSERT_EQ(run_command("HF_HUB_CACHE=" + cache + " " + zinc_binary() + " list --json", &out), 0) << out;
  const auto listed = nlohmann::json::parse(out);
  ASSERT_EQ(listed.size(), 2u) << out;
  EXPECT_EQ(listed[0]["model"], "tiny/stories-GGUF:F32");
  EXPECT_EQ(listed[0]["file"], "stories-F32-00001-of-00002.gguf");
  EXPECT_EQ(listed[0]["bytes"].get<int64_t>(), int64_t(std::filesystem::file_size(split_part_path(prefix, 0, 2)) +
                                                        std::filesystem::file_size(split_part_path(prefix, 1, 2))));
  EXPECT_EQ(listed[1]["model"], "tiny/stories-GGUF:Q8_0");
  EXPECT_EQ(listed[1]["path"], cache + "/models--tiny--stories-GGUF/snapshots/" + FakeHub::kCommit + "/stories-Q8_0.gguf");
}

// zinc serve -hf names the model by its repository reference.
TEST(PullCommand, ServeNamesTheModelByItsRepository) {
  ZINC_REQUIRE_TEST_DATA();
  FakeHub hub("tiny/stories-GGUF", {{"stories-F32.gguf", stories_bytes()}});
  const std::string log = temp_path("serve_hf.log");
  const std::string cmd = hub_env(hub, temp_path("serve_hf_cache")) + zinc_binary() + " serve -hf tiny/stories-GGUF:F32 --port 0 -t 1 >" +
                          log + " 2>&1 & pid=$!; for i in $(seq 300); do grep -q serving " + log +
                          " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; s=$?; cat " + log + "; exit $s";
  std::string out;
  EXPECT_EQ(run_command("sh -c '" + cmd + "'", &out), 0) << out;
  EXPECT_NE(out.find("serving tiny/stories-GGUF:F32 on http://127.0.0.1:"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc::test
