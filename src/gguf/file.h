// A GGUF file (versions 2 and 3), memory-mapped and validated when opened. Every check in
// docs/model-spec.md §1 runs in open(); afterwards every tensor lies inside the data section
// and every string inside the file. Read-only and thread-compatible after construction.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/value.h"

namespace zinc::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF"
constexpr uint32_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorName = 63;    // bytes, as ggml (64 with the terminator)
constexpr int kMaxDims = 4;

struct TensorInfo {
  std::string_view name;
  TensorType type = TensorType::F32;
  uint32_t n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // ne[0] contiguous; missing dims are 1
  uint64_t offset = 0;      // from the start of the data section
  uint64_t size_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping
  uint32_t part = 0;              // a split model's file that holds it (File::part_bytes)

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return zinc::row_bytes(type, ne[0]); }
  std::string shape_string() const;  // "[4096, 32000]"
};

struct KeyValue {
  std::string_view key;
  ValueView value;
};

class File {
 public:
  // Maps and validates `path`. Errors read "<what>" (the caller adds the file name). The first
  // file of a split model (llama-gguf-split's NAME-00001-of-0000N.gguf, split.count N) opens
  // its other parts too: the File then lists every part's tensors, with the first's metadata.
  static Result<std::unique_ptr<File>> open(const std::string& path);
  // Validates bytes owned by the caller (fuzzing, tests); they must outlive the File.
  static Result<std::unique_ptr<File>> from_memory(std::span<const uint8_t> bytes);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }  // this file's (a split model's first part)
  uint64_t model_bytes() const;                          // every part's
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute start of the data section

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const ValueView* find(std::string_view key) const;

  // Typed look-ups with the strict type rules of model-spec §1.2: a key that exists with another
  // type is an error naming the key and both types; a missing key is nullopt (or an error for get_*).
  Result<std::optional<std::string_view>> find_string(std::string_view key) const;
  Result<std::optional<uint32_t>> find_u32(std::string_view key) const;
  Result<std::optional<float>> find_f32(std::string_view key) const;
  Result<std::optional<bool>> find_bool(std::string_view key) const;
  // Any integer type that fits in uint64 (for keys whose writers disagree on width).
  Result<std::optional<uint64_t>> find_uint(std::string_view key) const;
  Result<const ValueView*> find_array(std::string_view key, ValueType elem) const;  // nullptr if absent
  std::string architecture() const;  // general.architecture, or "" when absent

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_bytes(const TensorInfo& t) const { return {t.data, t.size_bytes}; }

  // Files of a split model (1 for one file), each one's path ("" from memory) and mapped bytes.
  uint32_t n_parts() const { return uint32_t(1 + parts_.size()); }
  const std::string& part_path(uint32_t i) const { return i == 0 ? path_ : parts_[i - 1]->path_; }
  std::span<const uint8_t> part_bytes(uint32_t i) const { return i == 0 ? bytes_ : parts_[i - 1]->bytes_; }

 private:
  File() = default;
  Status parse();
  static Result<std::unique_ptr<File>> open_one(const std::string& path);  // this file alone
  Status join_parts();  // file_split.cc

  std::span<const uint8_t> bytes_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  std::string path_;
  std::vector<std::unique_ptr<File>> parts_;  // a split model's files after this one
};

// Opens `path`; on failure the message reads "<path>: <what>".
Result<std::unique_ptr<File>> open_file(const std::string& path);

}  // namespace zinc::gguf
