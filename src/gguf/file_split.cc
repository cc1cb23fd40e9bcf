// Split models: llama-gguf-split writes a model as NAME-00001-of-0000N.gguf ... with split.no
// (0-based), split.count and, in the first, split.tensors.count; every part is a whole GGUF
// file holding some of the tensors. Opening the first part opens the others beside it.
#include <cstdio>
#include <string>

#include "gguf/file.h"

namespace zinc::gguf {
namespace {

// "PREFIX-00001-of-00003.gguf" -> "PREFIX"; "" when the name is not of that form for (no, count).
std::string split_prefix(const std::string& path, uint64_t no, uint64_t count) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.gguf", (unsigned long long)(no + 1), (unsigned long long)count);
  const std::string s(suffix);
  if (path.size() <= s.size() || path.compare(path.size() - s.size(), s.size(), s) != 0) return "";
  return path.substr(0, path.size() - s.size());
}

std::string part_name(const std::string& prefix, uint64_t no, uint64_t count) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.gguf", (unsigned long long)(no + 1), (unsigned long long)count);
  return prefix + suffix;
}

}  // namespace

uint64_t File::model_bytes() const {
  uint64_t n = bytes_.size();
  for (const auto& part : parts_) n += part->bytes_.size();
  return n;
}

Status File::join_parts() {
  ZINC_ASSIGN_OR_RETURN(const auto count, find_uint("split.count"));
  if (!count || *count <= 1) return ok_status();
  ZINC_ASSIGN_OR_RETURN(const auto no, find_uint("split.no"));
  constexpr uint64_t kMaxParts = 9999;
  if (*count > kMaxParts) return error("split.count %llu is over %llu", (unsigned long long)*count, (unsigned long long)kMaxParts);
  if (no.value_or(0) != 0)
    return error("this is part %llu of %llu of a split model: open the first part (its name ends -00001-of-%05llu.gguf)",
                 (unsigned long long)(no.value_or(0) + 1), (unsigned long long)*count, (unsigned long long)*count);
  if (path_.empty()) return error("a split model (%llu parts) cannot be read from memory", (unsigned long long)*count);
  const std::string prefix = split_prefix(path_, 0, *count);
  if (prefix.empty())
    return error("a split model of %llu parts must be named NAME-00001-of-%05llu.gguf to find its other parts", (unsigned long long)*count,
                 (unsigned long long)*count);
  for (uint64_t i = 1; i < *count; ++i) {
    const std::string name = part_name(prefix, i, *count);
    auto part = File::open_one(name);
    if (!part.ok()) return part.status().with_context(name);
    ZINC_ASSIGN_OR_RETURN(const auto part_no, (*part)->find_uint("split.no"));
    ZINC_ASSIGN_OR_RETURN(const auto part_count, (*part)->find_uint("split.count"));
    if (part_no.value_or(0) != i || part_count.value_or(0) != *count)
      return error("%s: its split.no and split.count say part %llu of %llu, not part %llu of %llu", name.c_str(),
                   (unsigned long long)(part_no.value_or(0) + 1), (unsigned long long)part_count.value_or(0), (unsigned long long)(i + 1),
                   (unsigned long long)*count);
    for (TensorInfo t : (*part)->tensors()) {
      t.part = uint32_t(i);
      if (tensor_index_.count(t.name)) return error("%s: tensor '%.*s' is in an earlier part too", name.c_str(), int(t.name.size()), t.name.data());
      tensor_index_.emplace(t.name, tensors_.size());
      tensors_.push_back(t);
    }
    parts_.push_back(std::move(*part));
  }
  ZINC_ASSIGN_OR_RETURN(const auto total, find_uint("split.tensors.count"));
  if (total && *total != tensors_.size())
    return error("split.tensors.count says %llu tensors, but the %llu parts hold %zu", (unsigned long long)*total, (unsigned long long)*count,
                 tensors_.size());
  return ok_status();
}

}  // namespace zinc::gguf
