#include "hub/cache.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <tuple>

namespace zinc::hub {
namespace fs = std::filesystem;
namespace {

bool is_commit(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

Result<fs::path> cache_root() {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("HF_HUB_CACHE")) return fs::path(v);
  if (const char* v = env("HUGGINGFACE_HUB_CACHE")) return fs::path(v);
  if (const char* v = env("HF_HOME")) return fs::path(v) / "hub";
  if (const char* v = env("XDG_CACHE_HOME")) return fs::path(v) / "huggingface" / "hub";
  if (const char* v = env("HOME")) return fs::path(v) / ".cache" / "huggingface" / "hub";
  return error("no place for the model cache: set HF_HUB_CACHE or HOME");
}

std::vector<CachedModel> cached_models(const fs::path& root) {
  std::vector<CachedModel> out;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(root, ec)) {
    const std::string folder = dir.path().filename().string();
    if (folder.rfind("models--", 0) != 0) continue;
    const size_t sep = folder.find("--", 8);
    if (sep == std::string::npos) continue;
    const std::string repo = folder.substr(8, sep - 8) + "/" + folder.substr(sep + 2);
    if (!valid_repo_id(repo)) continue;
    const RepoCache cache(root, repo);
    const std::string commit = cache.cached_commit();
    if (commit.empty()) continue;
    const std::vector<RepoFile> files = cache.snapshot_files(commit);
    for (const RepoFile& f : files) {
      const SplitInfo s = split_info(f.path);
      if (!is_model_gguf(f.path) || s.index != 1) continue;
      CachedModel m{repo, f.path, quant_tag(f.path), cache.snapshot(commit, f.path), 0};
      for (const RepoFile& part : files) {
        const SplitInfo p = split_info(part.path);
        if (part.path == f.path || (s.count > 1 && p.count == s.count && p.prefix == s.prefix)) m.bytes += part.size;
      }
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) { return std::tie(a.repo, a.path) < std::tie(b.repo, b.path); });
  return out;
}

RepoCache::RepoCache(fs::path root, const std::string& repo) {
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  dir_ = std::move(root) / folder;
}

std::string RepoCache::cached_commit() const {
  std::error_code ec;
  std::string any;
  for (const auto& entry : fs::directory_iterator(dir_ / "refs", ec)) {
    std::ifstream in(entry.path());
    std::string commit;
    if (!std::getline(in, commit) || !is_commit(commit) || !fs::is_directory(dir_ / "snapshots" / commit)) continue;
    if (entry.path().filename() == "main") return commit;
    if (any.empty()) any = commit;
  }
  return any;
}

Status RepoCache::write_ref(const std::string& branch, const std::string& commit) const {
  std::error_code ec;
  fs::create_directories(dir_ / "refs", ec);
  const fs::path path = dir_ / "refs" / branch, tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit;
    if (!out) return error("%s: cannot write", tmp.c_str());
  }
  fs::rename(tmp, path, ec);
  if (ec) return error("%s: %s", path.c_str(), ec.message().c_str());
  return ok_status();
}

std::vector<RepoFile> RepoCache::snapshot_files(const std::string& commit) const {
  std::vector<RepoFile> files;
  const fs::path base = dir_ / "snapshots" / commit;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    const auto size = fs::file_size(it->path(), size_ec);  // follows the link to the blob
    if (size_ec || !fs::is_regular_file(it->path())) continue;
    RepoFile f;
    f.path = it->path().lexically_relative(base).generic_string();
    f.size = int64_t(size);
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  return files;
}

Status RepoCache::link(const std::string& commit, const std::string& path, const std::string& oid) const {
  const fs::path target = snapshot(commit, path), blob_path = blob(oid);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return error("%s: %s", target.parent_path().c_str(), ec.message().c_str());
  fs::remove(target, ec);
  fs::create_symlink(fs::relative(blob_path, target.parent_path()), target, ec);
  if (!ec) return ok_status();
  fs::rename(blob_path, target, ec);  // a file system without links
  if (ec) return error("%s: %s", target.c_str(), ec.message().c_str());
  return ok_status();
}

}  // namespace zinc::hub
