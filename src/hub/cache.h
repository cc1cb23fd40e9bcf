// The Hugging Face hub cache on disk, the layout huggingface-cli and llama.cpp share, so a model
// any of them fetched is found by the others:
//   ROOT/models--OWNER--NAME/refs/main                 the commit the branch pointed at
//   ROOT/models--OWNER--NAME/blobs/OID                 file contents, by LFS sha256 or git blob id
//   ROOT/models--OWNER--NAME/snapshots/COMMIT/PATH     links to the blobs, by repository path
// ROOT is $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub or
// ~/.cache/huggingface/hub, the first that is set.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "hub/repo_files.h"

namespace zinc::hub {

Result<std::filesystem::path> cache_root();

// A model in the cache: its repository, the file (a split model's first part) at the cached
// commit, its quantization tag ("" if the name has none) and its bytes (every part's).
struct CachedModel {
  std::string repo, path, tag;
  std::filesystem::path local;
  int64_t bytes = 0;
  std::string reference() const { return tag.empty() ? repo : repo + ":" + tag; }  // as -hf takes it
};
std::vector<CachedModel> cached_models(const std::filesystem::path& root);

class RepoCache {
 public:
  RepoCache(std::filesystem::path root, const std::string& repo);

  std::filesystem::path blob(const std::string& oid) const { return dir_ / "blobs" / oid; }
  std::filesystem::path snapshot(const std::string& commit, const std::string& path) const {
    return dir_ / "snapshots" / commit / path;
  }
  // The commit refs/main (else any ref) names; "" when nothing of the repository is cached.
  std::string cached_commit() const;
  Status write_ref(const std::string& branch, const std::string& commit) const;
  // The files of a cached snapshot (sizes from disk, no oids).
  std::vector<RepoFile> snapshot_files(const std::string& commit) const;
  // Makes snapshot(commit, path) name blob(oid): a relative symbolic link, or where links cannot
  // be made, the blob itself moved there.
  Status link(const std::string& commit, const std::string& path, const std::string& oid) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace zinc::hub
