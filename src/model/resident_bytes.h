// A file range copied into anonymous memory (advised for transparent huge pages): weights read
// from here cost no page-cache faults and far fewer TLB misses than the file mapping. Filled with
// pread(), so the file's pages never enter this process's resident set beside the copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace zinc::model {

class ResidentBytes {
 public:
  // Bytes [offset, offset + size_bytes) of `path`, read-only once filled; 2 MiB aligned.
  static Result<std::unique_ptr<ResidentBytes>> read(const std::string& path, uint64_t offset, size_t size_bytes);
  ~ResidentBytes();
  ResidentBytes(const ResidentBytes&) = delete;
  ResidentBytes& operator=(const ResidentBytes&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }

 private:
  ResidentBytes() = default;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace zinc::model
