#include "hub/repo_files.h"

#include <algorithm>
#include <cctype>

namespace zinc::hub {
namespace {

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

bool ends_with_gguf(std::string_view path) {
  return path.size() > 5 && std::equal(path.end() - 5, path.end(), ".gguf", [](char a, char b) { return std::tolower(a) == b; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether the path has `tag` (lower case) with no letter or digit before it and '.' or '-' after.
bool has_tag(std::string_view path, const std::string& tag) {
  const std::string p = lower(path);
  for (size_t at = p.find(tag); at != std::string::npos; at = p.find(tag, at + 1)) {
    const bool start = at == 0 || !std::isalnum(static_cast<unsigned char>(p[at - 1]));
    const size_t end = at + tag.size();
    if (start && end < p.size() && (p[end] == '.' || p[end] == '-')) return true;
  }
  return false;
}

// No absolute path, no empty, "." or ".." component: the path stays inside the snapshot.
bool safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\\') != std::string_view::npos) return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

bool is_model_gguf(std::string_view path) {
  if (!ends_with_gguf(path)) return false;
  const std::string name = lower(path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1));
  return name.find("mmproj") == std::string::npos && name.find("imatrix") == std::string::npos &&
         name.find("mtp-") == std::string::npos;
}

std::string quant_tag(std::string_view path) {
  if (!ends_with_gguf(path)) return "";
  const SplitInfo s = split_info(path);
  std::string_view stem = s.count > 1 ? std::string_view(s.prefix) : path.substr(0, path.size() - 5);
  stem = stem.substr(stem.rfind('/') == std::string_view::npos ? 0 : stem.rfind('/') + 1);
  const size_t sep = stem.find_last_of("-.");
  if (sep == std::string_view::npos) return "";
  const std::string_view tag = stem.substr(sep + 1);
  const bool ok = !tag.empty() && std::all_of(tag.begin(), tag.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; }) &&
                  std::any_of(tag.begin(), tag.end(), [](unsigned char c) { return std::isdigit(c); });
  std::string out(ok ? tag : std::string_view());
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool valid_repo_id(std::string_view repo) {
  if (repo.empty() || repo.size() > 256) return false;
  int slashes = 0;
  bool after_special = true;  // at the start, as after a special character
  for (char c : repo) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      after_special = false;
    } else if (c == '/' || c == '.' || c == '-') {
      if (after_special) return false;
      slashes += c == '/';
      after_special = true;
    } else {
      return false;
    }
  }
  return !after_special && slashes == 1;
}

Result<RepoRef> parse_repo_ref(std::string_view ref) {
  RepoRef r;
  const size_t colon = ref.find(':');
  r.repo = std::string(ref.substr(0, colon));
  if (colon != std::string_view::npos) {
    r.tag = std::string(ref.substr(colon + 1));
    if (r.tag.empty() || r.tag.size() > 128 ||
        !std::all_of(r.tag.begin(), r.tag.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; }))
      return error("'%.*s': the tag after ':' must be a quantization such as Q4_K_M", int(ref.size()), ref.data());
  }
  if (!valid_repo_id(r.repo))
    return error("'%.*s' is not a Hugging Face repository: expected OWNER/NAME[:QUANT]", int(ref.size()), ref.data());
  return r;
}

Result<std::vector<RepoFile>> parse_tree(const nlohmann::json& listing) {
  if (!listing.is_array()) return error("the repository listing is not a JSON array");
  std::vector<RepoFile> files;
  for (const auto& item : listing) {
    if (!item.is_object() || item.value("type", "") != "file") continue;
    const auto path = item.find("path");
    if (path == item.end() || !path->is_string()) return error("the repository listing has a file without a path");
    RepoFile f;
    f.path = path->get<std::string>();
    if (!safe_relative_path(f.path)) return error("the repository listing has an unsafe path '%s'", f.path.c_str());
    const auto lfs = item.find("lfs");
    const nlohmann::json& source = lfs != item.end() && lfs->is_object() ? *lfs : item;
    f.lfs = &source != &item;
    if (const auto oid = source.find("oid"); oid != source.end() && oid->is_string()) f.oid = oid->get<std::string>();
    if (const auto size = source.find("size"); size != source.end() && size->is_number_integer()) f.size = size->get<int64_t>();
    const bool oid_ok = f.lfs ? f.oid.size() == 64 : f.oid.size() == 40 || f.oid.size() == 64;
    if (!oid_ok || !is_hex(f.oid) || f.size < 0) return error("the repository listing has a malformed entry for '%s'", f.path.c_str());
    files.push_back(std::move(f));
  }
  return files;
}

SplitInfo split_info(std::string_view path) {
  // NAME-IIIII-of-NNNNN.gguf
  constexpr std::string_view kOf = "-of-";
  if (!ends_with_gguf(path) || path.size() < 5 + 5 + kOf.size() + 5 + 1) return {};
  const std::string_view stem = path.substr(0, path.size() - 5);
  const std::string_view count = stem.substr(stem.size() - 5), of = stem.substr(stem.size() - 9, 4);
  const std::string_view index = stem.substr(stem.size() - 14, 5);
  if (of != kOf || stem[stem.size() - 15] != '-' || !std::all_of(count.begin(), count.end(), ::isdigit) ||
      !std::all_of(index.begin(), index.end(), ::isdigit))
    return {};
  SplitInfo s;
  s.index = std::stoi(std::string(index));
  s.count = std::stoi(std::string(count));
  s.prefix = std::string(stem.substr(0, stem.size() - 15));
  return s.count > 0 && s.index >= 1 && s.index <= s.count ? s : SplitInfo{};
}

Result<std::vector<RepoFile>> pick_model_files(const std::vector<RepoFile>& files, const RepoRef& ref, const std::string& file) {
  const RepoFile* found = nullptr;
  if (!file.empty()) {
    for (const auto& f : files)
      if (f.path == file) found = &f;
  } else {
    std::vector<std::string> tags = {lower(ref.tag)};
    if (ref.tag.empty()) tags = {"q4_k_m", "q8_0", ""};
    for (const auto& tag : tags) {
      for (const auto& f : files) {
        if (!is_model_gguf(f.path) || split_info(f.path).index != 1) continue;
        if (tag.empty() || has_tag(f.path, tag)) {
          found = &f;
          break;
        }
      }
      if (found) break;
    }
  }
  if (!found) {
    std::string available;
    for (const auto& f : files)
      if (ends_with_gguf(f.path)) available += (available.empty() ? "" : ", ") + f.path;
    const std::string what = !file.empty() ? "no file '" + file + "'" : !ref.tag.empty() ? "no GGUF model file tagged " + ref.tag : "no GGUF model file";
    return error("%s has %s (GGUF files there: %s)", ref.repo.c_str(), what.c_str(), available.empty() ? "none" : available.c_str());
  }
  const SplitInfo first = split_info(found->path);
  if (first.count == 1) return std::vector<RepoFile>{*found};
  if (first.index != 1)
    return error("%s: %s is part %d of %d of a split model: name its first part", ref.repo.c_str(), found->path.c_str(), first.index, first.count);
  std::vector<RepoFile> parts(size_t(first.count));
  for (const auto& f : files) {
    const SplitInfo s = split_info(f.path);
    if (s.count == first.count && s.prefix == first.prefix) parts[size_t(s.index - 1)] = f;
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].path.empty())
      return error("%s: part %zu of the %d of %s is not in the repository", ref.repo.c_str(), i + 1, first.count, found->path.c_str());
  return parts;
}

}  // namespace zinc::hub
