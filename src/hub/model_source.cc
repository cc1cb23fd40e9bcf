#include "hub/model_source.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "core/human_bytes.h"
#include "hub/cache.h"
#include "hub/fetch.h"
#include "hub/repo_files.h"

namespace zinc::hub {
namespace fs = std::filesystem;
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string endpoint() {
  std::string e = env_or("HF_ENDPOINT", env_or("MODEL_ENDPOINT", "https://huggingface.co"));
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

bool offline(const ModelSource& s) {
  const std::string v = env_or("HF_HUB_OFFLINE", "");
  return s.offline || v == "1" || v == "true" || v == "TRUE" || v == "yes";
}

// Percent-encodes what a URL path may not hold as it is ('/' stays).
std::string url_path(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') out += char(c);
    else out += format("%%%02X", c);
  }
  return out;
}

// Reports a download's progress at most four times a second, and when it ends.
Progress throttled(const Notice& notice, const std::string& name) {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [notice, name, last](int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - *last < std::chrono::milliseconds(250)) return;
    *last = now;
    if (total > 0) notice(format("downloading %s: %3d%% (%s of %s)", name.c_str(), int(100 * done / total), human_bytes(uint64_t(done)).c_str(), human_bytes(uint64_t(total)).c_str()), true);
    else notice(format("downloading %s: %s", name.c_str(), human_bytes(uint64_t(done)).c_str()), true);
  };
}

constexpr int kMaxTreePages = 100;

struct Listing {
  std::string commit;
  std::vector<RepoFile> files;
};

// The repository's files at its main branch. `unreachable` is set where the hub could not be asked
// (no connection, or a server error), so that a cached copy may stand in.
Result<Listing> list_online(const std::string& repo, const std::string& token, bool* unreachable) {
  const std::string base = endpoint() + "/api/models/" + repo;
  auto explain = [&](const JsonReply& r) -> Status {
    *unreachable = r.status == 0 || r.status >= 500;
    if (r.status == 401 || r.status == 403)
      return error("%s: access denied (HTTP %d): a private or gated repository needs --hf-token or $HF_TOKEN", repo.c_str(), r.status);
    if (r.status == 404) return error("%s: no such repository at %s", repo.c_str(), endpoint().c_str());
    return error("%s: cannot list the repository at %s: %s", repo.c_str(), endpoint().c_str(), r.error.c_str());
  };
  const JsonReply refs = get_json(base + "/refs", token);
  if (refs.status != 200 || !refs.error.empty()) return explain(refs);
  Listing listing;
  const auto branches = refs.body.is_object() ? refs.body.find("branches") : refs.body.end();
  if (branches != refs.body.end() && branches->is_array()) {
    for (const auto& b : *branches) {
      if (!b.is_object() || !b.contains("targetCommit") || !b["targetCommit"].is_string()) continue;
      const std::string commit = b["targetCommit"].get<std::string>();
      if (commit.size() != 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
      if (b.value("name", "") == "main" || listing.commit.empty()) listing.commit = commit;
    }
  }
  if (listing.commit.empty()) return error("%s: the repository has no branch to download from", repo.c_str());
  std::string page = base + "/tree/" + listing.commit + "?recursive=true";
  for (int pages = 0; !page.empty(); ++pages) {  // the hub lists large trees a page at a time
    if (pages == kMaxTreePages) return error("%s: the repository lists more than %d pages of files", repo.c_str(), kMaxTreePages);
    const JsonReply tree = get_json(page, token);
    if (tree.status != 200 || !tree.error.empty()) return explain(tree);
    ZINC_ASSIGN_OR_RETURN(auto files, parse_tree(tree.body));
    listing.files.insert(listing.files.end(), files.begin(), files.end());
    page = tree.next;
  }
  return listing;
}

// Makes the snapshot's `file` whole: downloads its blob unless the cache has it, and links it.
Status fetch_file(const RepoCache& cache, const std::string& commit, const RepoRef& ref, const RepoFile& file, const std::string& token,
                  const Notice& notice) {
  std::error_code ec;
  const auto cached_size = fs::file_size(cache.snapshot(commit, file.path), ec);  // follows the link to the blob
  if (!ec && int64_t(cached_size) == file.size) return ok_status();
  const fs::path blob = cache.blob(file.oid);
  const auto blob_size = fs::file_size(blob, ec);
  if (ec || int64_t(blob_size) != file.size) {
    const std::string url = endpoint() + "/" + ref.repo + "/resolve/" + commit + "/" + url_path(file.path);
    notice(format("downloading %s from %s (%s)", file.path.c_str(), ref.repo.c_str(), human_bytes(uint64_t(file.size)).c_str()), false);
    FileCheck check;
    check.size = file.size;
    if (file.lfs) check.sha256 = file.oid;  // a git blob id is not a hash of the bytes alone
    ZINC_RETURN_IF_ERROR(download_file(url, token, blob, check, throttled(notice, file.path)));
    notice(format("downloaded %s", file.path.c_str()), false);
  }
  return cache.link(commit, file.path, file.oid);
}

Result<std::string> resolve_repo(const ModelSource& s, const Notice& notice) {
  ZINC_ASSIGN_OR_RETURN(const RepoRef ref, parse_repo_ref(s.hf_repo));
  ZINC_ASSIGN_OR_RETURN(const fs::path root, cache_root());
  const RepoCache cache(root, ref.repo);
  const std::string token = s.hf_token.empty() ? env_or("HF_TOKEN", "") : s.hf_token;
  Listing listing;
  bool from_cache = offline(s);
  if (!from_cache) {
    bool unreachable = false;
    auto online = list_online(ref.repo, token, &unreachable);
    if (online.ok()) {
      listing = std::move(*online);
    } else if (unreachable && !cache.cached_commit().empty()) {
      notice(online.status().message() + "; using the cached copy", false);
      from_cache = true;
    } else {
      return online.status();
    }
  }
  if (from_cache) {
    listing.commit = cache.cached_commit();
    if (listing.commit.empty()) return error("%s is not in the model cache (%s), and the hub is not asked offline", ref.repo.c_str(), root.c_str());
    listing.files = cache.snapshot_files(listing.commit);
  }
  ZINC_ASSIGN_OR_RETURN(const std::vector<RepoFile> parts, pick_model_files(listing.files, ref, s.hf_file));
  const fs::path first = cache.snapshot(listing.commit, parts.front().path);
  if (from_cache) return first.string();
  for (const RepoFile& file : parts) ZINC_RETURN_IF_ERROR(fetch_file(cache, listing.commit, ref, file, token, notice));
  ZINC_RETURN_IF_ERROR(cache.write_ref("main", listing.commit));
  return first.string();
}

// A URL's download goes to `path` when given, else to $XDG_CACHE_HOME/zinc (~/.cache/zinc) under
// the URL's last path segment; a file already there is used as it is.
Result<std::string> resolve_url(const ModelSource& s, const Notice& notice) {
  ZINC_ASSIGN_OR_RETURN(const Url url, split_url(s.url));
  fs::path dest = s.path;
  if (dest.empty()) {
    std::string name = url.target.substr(0, url.target.find_first_of("?#"));
    name = name.substr(name.rfind('/') + 1);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    if (name.empty() || name == "." || name == "..") name = "model.gguf";
    const std::string xdg = env_or("XDG_CACHE_HOME", "");
    const std::string home = env_or("HOME", "");
    if (xdg.empty() && home.empty()) return error("no place for the download: give -m PATH, or set HOME");
    dest = (xdg.empty() ? fs::path(home) / ".cache" : fs::path(xdg)) / "zinc" / name;
  }
  if (fs::exists(dest)) return dest.string();
  if (offline(s)) return error("%s is not downloaded yet, and nothing is downloaded offline", dest.c_str());
  notice(format("downloading %s into %s", s.url.c_str(), dest.c_str()), false);
  ZINC_RETURN_IF_ERROR(download_file(s.url, s.hf_token, dest, FileCheck{}, throttled(notice, dest.filename().string())));
  notice(format("downloaded %s", dest.filename().c_str()), false);
  return dest.string();
}

}  // namespace

Result<std::string> resolve_model(const ModelSource& source, const Notice& notice) {
  const int given = !source.hf_repo.empty() + !source.url.empty();
  if (given > 1) return error("give the model by one of --hf-repo and --model-url");
  if (!source.hf_file.empty() && source.hf_repo.empty()) return error("--hf-file needs --hf-repo");
  if (!source.hf_repo.empty()) {
    if (!source.path.empty()) return error("give the model as a file (-m) or a repository (--hf-repo), not both");
    return resolve_repo(source, notice);
  }
  if (!source.url.empty()) return resolve_url(source, notice);
  if (source.path.empty()) return error("no model: give -m FILE, --hf-repo OWNER/NAME[:QUANT] or --model-url URL");
  return source.path;
}

std::string model_display_name(const ModelSource& source, const std::string& path) {
  if (!source.hf_repo.empty()) return source.hf_repo;
  return fs::path(path).stem().string();
}

}  // namespace zinc::hub
