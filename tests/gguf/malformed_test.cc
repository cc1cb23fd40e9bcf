// The malformed GGUF corpus (tests/gguf/malformed, made by make_malformed.py): every file must be
// rejected with the message fragment its manifest line names, from a path and from memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/malformed_corpus.h"
#include "support/test_data.h"

namespace zinc::gguf {
namespace {

TEST(GgufMalformed, ManifestCoversEveryFile) {
  const auto entries = test::malformed_manifest();
  ASSERT_GT(entries.size(), 60u);
  std::set<std::string> listed;
  for (const auto& e : entries) EXPECT_TRUE(listed.insert(e.file).second) << "listed twice: " << e.file;
  for (const auto& de : std::filesystem::directory_iterator(test::malformed_dir())) {
    if (de.path().extension() != ".gguf") continue;
    EXPECT_TRUE(listed.count(de.path().filename().string())) << "not in manifest.txt: " << de.path();
  }
}

TEST(GgufMalformed, EveryFileFailsWithItsMessage) {
  for (const auto& e : test::malformed_manifest()) {
    SCOPED_TRACE(e.file);
    const std::string path = test::malformed_dir() + "/" + e.file;
    auto f = open_file(path);
    ASSERT_FALSE(f.ok()) << "accepted";
    const std::string msg = f.status().message();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(e.fragment), std::string::npos) << "message: " << msg << "\nexpected: " << e.fragment;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;

    // The same bytes from memory give the same message, without the path.
    const std::vector<char> bytes = test::read_file(path);
    auto m = File::from_memory({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(path + ": " + m.status().message(), msg);
  }
}

// Every strict prefix of a valid file is rejected (never accepted, never a crash).
TEST(GgufMalformed, EveryTruncationOfAValidFileFails) {
  const std::vector<char> bytes = test::read_file(test::malformed_dir() + "/valid/base.gguf");
  ASSERT_TRUE(File::from_memory({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = File::from_memory({reinterpret_cast<const uint8_t*>(bytes.data()), n});
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes accepted";
  }
}

// The committed corpus is what make_malformed.py writes (regenerate it after editing the script).
TEST(GgufMalformed, CorpusIsUpToDate) {
  if (test::run_command("python3 --version", nullptr) != 0) GTEST_SKIP() << "python3 not installed";
  const std::string out = test::temp_path("malformed-regenerated");
  std::string log;
  ASSERT_EQ(test::run_command("python3 '" + test::malformed_dir() + "/../make_malformed.py' '" + out + "'", &log), 0)
      << log;
  ASSERT_EQ(test::run_command("diff -r '" + out + "' '" + test::malformed_dir() + "'", &log), 0)
      << "run python3 tests/gguf/make_malformed.py:\n" << log;
}

}  // namespace
}  // namespace zinc::gguf
