#include "support/test_data.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace zinc::test {

std::string data_dir() {
  const char* env = std::getenv("ZINC_TEST_DATA");
  return env && *env ? env : ZINC_DEFAULT_TEST_DATA;
}

bool data_available() {
  struct stat st {};
  return stat((data_dir() + "/README.md").c_str(), &st) == 0;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::string data_path(const std::string& rel) { return data_dir() + "/" + rel; }

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(n));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string temp_path(const std::string& name) {
  static std::string dir = [] {
    std::string d = "/tmp/zinc-test-" + std::to_string(getpid());
    mkdir(d.c_str(), 0755);
    return d;
  }();
  return dir + "/" + name;
}

std::string zinc_binary() {
  const char* env = std::getenv("ZINC_BIN");
  return env && *env ? env : "zinc";
}

int run_command(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  if (output) *output = out;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace zinc::test
