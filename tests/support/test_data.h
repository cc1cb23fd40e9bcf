// Where tests find ../shared (ZINC_TEST_DATA overrides), and small file helpers.
#pragma once

#include <string>
#include <vector>

namespace zinc::test {

// The shared test-data folder. When it is missing the calling test is skipped with a loud
// message, except under CI (CI=true), where that is a failure.
std::string data_dir();
#define ZINC_REQUIRE_TEST_DATA()                                                      \
  do {                                                                                \
    if (!::zinc::test::data_available()) {                                            \
      if (::zinc::test::in_ci()) FAIL() << "test data missing: " << ::zinc::test::data_dir(); \
      GTEST_SKIP() << "TEST DATA MISSING at " << ::zinc::test::data_dir() << ": set ZINC_TEST_DATA"; \
    }                                                                                 \
  } while (0)
bool data_available();
bool in_ci();

std::string data_path(const std::string& rel);     // data_dir() + "/" + rel
std::vector<char> read_file(const std::string& path);
void write_file(const std::string& path, const void* data, size_t n);
std::string temp_path(const std::string& name);   // a fresh path in a per-process temp folder

// The zinc binary under test (from ZINC_BIN, set by ctest).
std::string zinc_binary();
// Runs a shell command; returns its exit status and fills `output` with stdout+stderr.
int run_command(const std::string& cmd, std::string* output);

}  // namespace zinc::test
