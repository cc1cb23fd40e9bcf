// `zinc info` on every malformed corpus file: exit 1 with exactly one line "error: FILE: ...",
// within 10 s (a hang guard, not a speed test) and with the address space limited to ~1 GB.
#include <gtest/gtest.h>

#include <string>

#include "gguf/malformed_corpus.h"
#include "support/test_data.h"

namespace zinc {
namespace {

TEST(InfoMalformed, EveryFileIsOneErrorLine) {
  const auto entries = test::malformed_manifest();
  ASSERT_FALSE(entries.empty());
  for (const auto& e : entries) {
    SCOPED_TRACE(e.file);
    const std::string path = test::malformed_dir() + "/" + e.file;
    std::string out;
    const int rc = test::run_command(
        "sh -c 'ulimit -v 1000000; exec timeout 10 \"$0\" info \"$1\"' '" + test::zinc_binary() + "' '" + path + "'",
        &out);
    EXPECT_EQ(rc, 1) << out;
    const std::string prefix = "error: " + path + ": ";
    EXPECT_EQ(out.rfind(prefix, 0), 0u) << out;
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back(), '\n');
    EXPECT_EQ(out.find('\n'), out.size() - 1) << "more than one line: " << out;
    EXPECT_NE(out.find(e.fragment), std::string::npos) << out;
  }
}

TEST(InfoMalformed, MissingFileIsOneErrorLine) {
  std::string out;
  const std::string path = test::temp_path("does-not-exist.gguf");
  EXPECT_EQ(test::run_command(test::zinc_binary() + " info '" + path + "'", &out), 1);
  EXPECT_EQ(out, "error: " + path + ": cannot open: No such file or directory\n");
}

}  // namespace
}  // namespace zinc
