// -hf downloads against a hub on 127.0.0.1 (support/fake_hub.h): the cache layout, reuse, resume,
// checks, tokens and offline use.
#include "hub/model_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hub/fetch.h"
#include "support/fake_hub.h"
#include "support/test_data.h"

namespace zinc::hub {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    s[i] = char(seed >> 24);
  }
  return s;
}

class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = test::temp_path(std::string("hub_cache_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("HF_HUB_CACHE", cache_.c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("MODEL_ENDPOINT");
  }
  void use(const test::FakeHub& hub) { setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1); }
  Result<std::string> fetch(const std::string& ref, ModelSource s = {}) {
    s.hf_repo = ref;
    return resolve_model(s, [this](const std::string& line, bool transient) {
      if (!transient) notices_.push_back(line);
    });
  }

  fs::path cache_;
  std::vector<std::string> notices_;
  const std::string q4_ = bytes(300000, 1), q8_ = bytes(5000, 2);
};

TEST_F(HubDownload, FetchesTheQuantIntoTheHubCacheLayout) {
  test::FakeHub hub("owner/model-GGUF", {{"README.md", "hello", false}, {"model-Q8_0.gguf", q8_}, {"model-Q4_K_M.gguf", q4_}});
  use(hub);
  auto path = fetch("owner/model-GGUF:Q8_0");
  ASSERT_TRUE(path.ok()) << path.status().message();
  const fs::path repo_dir = cache_ / "models--owner--model-GGUF";
  EXPECT_EQ(fs::path(*path), repo_dir / "snapshots" / test::FakeHub::kCommit / "model-Q8_0.gguf");
  EXPECT_EQ(slurp(*path), q8_);
  EXPECT_TRUE(fs::is_symlink(*path));
  EXPECT_EQ(slurp(repo_dir / "blobs" / sha256_hex(q8_)), q8_);
  EXPECT_EQ(slurp(repo_dir / "refs" / "main"), test::FakeHub::kCommit);
  EXPECT_FALSE(hub.cdn_saw_authorization);
  // Without a tag: Q4_K_M.
  auto q4 = fetch("owner/model-GGUF");
  ASSERT_TRUE(q4.ok()) << q4.status().message();
  EXPECT_EQ(slurp(*q4), q4_);
  EXPECT_EQ(hub.downloads.load(), 2);
}

TEST_F(HubDownload, APaginatedListingIsReadToItsEnd) {
  test::FakeHub hub("o/m", {{"README.md", "hi", false}, {"m-Q4_K_M.gguf", q4_}, {"m-Q8_0.gguf", q8_}});
  hub.tree_page_size = 1;
  use(hub);
  auto path = fetch("o/m:Q8_0");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(slurp(*path), q8_);
  EXPECT_EQ(hub.api_requests.load(), 4);  // refs and three pages
}

TEST_F(HubDownload, ASplitModelComesWithEveryPart) {
  const std::string a = bytes(7000, 3), b = bytes(9000, 4);
  test::FakeHub hub("o/m", {{"Q8_0/m-Q8_0-00002-of-00002.gguf", b}, {"Q8_0/m-Q8_0-00001-of-00002.gguf", a}});
  use(hub);
  auto path = fetch("o/m:q8_0");
  ASSERT_TRUE(path.ok()) << path.status().message();
  const fs::path snapshot = cache_ / "models--o--m" / "snapshots" / test::FakeHub::kCommit / "Q8_0";
  EXPECT_EQ(fs::path(*path), snapshot / "m-Q8_0-00001-of-00002.gguf");
  EXPECT_EQ(slurp(snapshot / "m-Q8_0-00001-of-00002.gguf"), a);
  EXPECT_EQ(slurp(snapshot / "m-Q8_0-00002-of-00002.gguf"), b);
  EXPECT_EQ(hub.downloads.load(), 2);
}

TEST_F(HubDownload, ACachedFileIsNotDownloadedAgain) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  use(hub);
  ASSERT_TRUE(fetch("o/m").ok());
  auto again = fetch("o/m");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(hub.downloads.load(), 1);
  EXPECT_EQ(slurp(*again), q4_);
}

TEST_F(HubDownload, AStoppedDownloadResumesWhereItStopped) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  use(hub);
  const fs::path blobs = cache_ / "models--o--m" / "blobs";
  fs::create_directories(blobs);
  {
    std::ofstream part(blobs / (sha256_hex(q4_) + ".incomplete"), std::ios::binary);
    part.write(q4_.data(), 123456);
  }
  auto path = fetch("o/m");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(slurp(*path), q4_);
  ASSERT_EQ(hub.ranges.size(), 1u);
  EXPECT_EQ(hub.ranges[0], "bytes=123456-");
  EXPECT_FALSE(fs::exists(blobs / (sha256_hex(q4_) + ".incomplete")));
}

TEST_F(HubDownload, ADroppedConnectionIsRetriedFromWhereItDropped) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  hub.cut_first_download_at = 70000;
  use(hub);
  auto path = fetch("o/m");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(slurp(*path), q4_);
  ASSERT_EQ(hub.ranges.size(), 2u);
  EXPECT_EQ(hub.ranges[1], "bytes=70000-");
}

TEST_F(HubDownload, BytesThatDoNotMatchTheListedHashAreDiscarded) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_, true, sha256_hex("something else")}});
  use(hub);
  auto path = fetch("o/m");
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("sha256"), std::string::npos) << path.status().message();
  EXPECT_FALSE(fs::exists(cache_ / "models--o--m" / "snapshots" / test::FakeHub::kCommit / "m-Q4_K_M.gguf"));
  EXPECT_FALSE(fs::exists(cache_ / "models--o--m" / "blobs" / (sha256_hex("something else") + ".incomplete")));
}

TEST_F(HubDownload, ATokenGoesToTheHubButNotToTheHostItRedirectsTo) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  hub.required_token = "hf_secret";
  use(hub);
  auto denied = fetch("o/m");
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("--hf-token"), std::string::npos) << denied.status().message();
  ModelSource s;
  s.hf_token = "hf_secret";
  auto path = fetch("o/m", s);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(slurp(*path), q4_);
  EXPECT_FALSE(hub.cdn_saw_authorization);
  setenv("HF_TOKEN", "hf_secret", 1);  // the environment's token, as huggingface-cli's
  EXPECT_TRUE(fetch("o/m").ok());
}

TEST_F(HubDownload, OfflineOrUnreachableTheCacheAnswers) {
  {
    test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}, {"m-Q8_0.gguf", q8_}});
    use(hub);
    ASSERT_TRUE(fetch("o/m").ok());
    ModelSource offline;
    offline.offline = true;
    const int before = hub.api_requests.load();
    auto cached = fetch("o/m", offline);
    ASSERT_TRUE(cached.ok()) << cached.status().message();
    EXPECT_EQ(slurp(*cached), q4_);
    EXPECT_EQ(hub.api_requests.load(), before);  // not asked
    auto missing = fetch("o/m:Q8_0", offline);   // listed there, never downloaded
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find("no GGUF model file tagged Q8_0"), std::string::npos) << missing.status().message();
  }
  // The hub is gone: the cached copy, with a notice.
  auto cached = fetch("o/m");
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  EXPECT_EQ(slurp(*cached), q4_);
  ASSERT_FALSE(notices_.empty());
  EXPECT_NE(notices_.back().find("using the cached copy"), std::string::npos) << notices_.back();
  // Nothing cached and nothing to ask: a clear error.
  auto other = fetch("o/other");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("o/other: cannot list the repository"), std::string::npos) << other.status().message();
}

TEST_F(HubDownload, MissingRepositoriesAndFilesAreNamed) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  use(hub);
  auto nope = fetch("o/nope");
  ASSERT_FALSE(nope.ok());
  EXPECT_NE(nope.status().message().find("o/nope: no such repository"), std::string::npos) << nope.status().message();
  auto tag = fetch("o/m:Q2_K");
  ASSERT_FALSE(tag.ok());
  EXPECT_NE(tag.status().message().find("GGUF files there: m-Q4_K_M.gguf"), std::string::npos) << tag.status().message();
  EXPECT_EQ(hub.downloads.load(), 0);
}

TEST_F(HubDownload, AUrlDownloadsOnceToItsPath) {
  test::FakeHub hub("o/m", {{"m-Q4_K_M.gguf", q4_}});
  ModelSource s;
  s.url = hub.endpoint() + "/o/m/resolve/" + test::FakeHub::kCommit + "/m-Q4_K_M.gguf";
  s.path = test::temp_path("url_model.gguf");
  auto path = resolve_model(s, [](const std::string&, bool) {});
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, s.path);
  EXPECT_EQ(slurp(*path), q4_);
  ASSERT_TRUE(resolve_model(s, [](const std::string&, bool) {}).ok());
  EXPECT_EQ(hub.downloads.load(), 1);
  s.url = hub.endpoint() + "/o/m/resolve/" + test::FakeHub::kCommit + "/missing.gguf";
  s.path = test::temp_path("url_missing.gguf");
  auto missing = resolve_model(s, [](const std::string&, bool) {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos) << missing.status().message();
  EXPECT_FALSE(fs::exists(s.path));
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace zinc::hub
