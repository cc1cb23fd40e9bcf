// Which GGUF file of a Hugging Face repository a reference `owner/name[:quant]` means, picked as
// llama.cpp's -hf picks it: the quantization named in the tag (Q4_K_M, q8_0, ...), matched
// case-insensitively where the name has it before a '.' or '-'; without a tag Q4_K_M, then Q8_0,
// then the first model file. Projector (mmproj), importance-matrix and MTP files are never models.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace zinc::hub {

struct RepoRef {
  std::string repo;  // owner/name
  std::string tag;   // "" when the reference has none
};

// Letters, digits and _ . - with exactly one '/', no '.', '-' or '/' next to another or at an end.
bool valid_repo_id(std::string_view repo);
Result<RepoRef> parse_repo_ref(std::string_view ref);

struct RepoFile {
  std::string path;  // inside the repository, '/'-separated
  std::string oid;   // LFS files: the content's sha256 (64 hex digits); others: the git blob id
  int64_t size = 0;  // -1: unknown (a file found in the cache offline)
  bool lfs = false;
};

// The files of the hub API's tree listing (GET /api/models/REPO/tree/COMMIT?recursive=true).
// Entries that are not files are skipped; a path that could leave the snapshot folder or a
// malformed oid is an error.
Result<std::vector<RepoFile>> parse_tree(const nlohmann::json& listing);

// "name-00001-of-00003.gguf" -> {index 1, count 3, "name"}; {1, 1, ""} for a file that is not split.
struct SplitInfo {
  int index = 1, count = 1;
  std::string prefix;
};
SplitInfo split_info(std::string_view path);

// Whether a path names a model GGUF (not a projector, importance matrix or MTP head).
bool is_model_gguf(std::string_view path);
// The quantization a model file's name ends with ("Qwen3-8B-Q4_K_M-00001-of-00002.gguf" -> "Q4_K_M"), or "".
std::string quant_tag(std::string_view path);

// The files of the model `file` (an exact path) or, when that is empty, `tag` names: the file,
// or a split model's parts in order (its first part is the one named or tagged). The error lists
// the GGUF files there are.
Result<std::vector<RepoFile>> pick_model_files(const std::vector<RepoFile>& files, const RepoRef& ref, const std::string& file);

}  // namespace zinc::hub
