// The malformed GGUF corpus committed in tests/gguf/malformed (written by make_malformed.py):
// where it is and what its manifest expects. Shared by the gguf and cli tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace zinc::test {

struct MalformedEntry {
  std::string file;      // name inside malformed_dir()
  std::string fragment;  // must appear in the error message
};

// The folder beside this header (found from __FILE__, so it needs no test-data setting).
inline std::string malformed_dir() {
  return (std::filesystem::path(__FILE__).parent_path() / "malformed").string();
}

inline std::vector<MalformedEntry> malformed_manifest() {
  std::ifstream in(malformed_dir() + "/manifest.txt");
  if (!in) throw std::runtime_error("cannot read " + malformed_dir() + "/manifest.txt");
  std::vector<MalformedEntry> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find('|');
    if (bar == std::string::npos) throw std::runtime_error("bad manifest line: " + line);
    out.push_back({line.substr(0, bar), line.substr(bar + 1)});
  }
  return out;
}

}  // namespace zinc::test
