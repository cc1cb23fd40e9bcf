// Weight matrices on the device, repacked for the GPU kernels, split by rows into buffers that
// each fit one storage-buffer binding.
//
// Device layout of one chunk (one Buffer): three planes, each 256-byte aligned, row-major:
//   Q: per 32-element group, `q_bytes` of codes;   H: per group, `h_bytes` of extra code bits;
//   M: per block (32 or 256 elements), `m_bytes` of scales.
// Codes of a group are packed so that 32-bit word j of its "code words" holds elements
// 4j..4j+3 as bytes (what an int8 dot product wants): a 4-bit plane keeps element i in the low
// nibble of byte i and element i+16 in the high nibble; a 2-bit plane keeps element i+8s in
// bits 2s of byte i (i < 8); a 1-bit plane keeps element 4s+i in bit s of byte i (i < 4).
// F16, BF16 and F32 rows are copied as they are, padded with zeros to a multiple of 32.
// src/vulkan/shaders/quant.glsl reads this layout; the two must change together.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/tensor_type.h"
#include "vulkan/buffer.h"

namespace zinc::vulkan {

struct WeightFormat {
  TensorType type = TensorType::F32;
  uint32_t block_elems = 32;  // elements per M record: 32, 256 (K-quants, IQ4_XS), or 32 for floats
  uint32_t q_bytes = 0;       // per 32-element group
  uint32_t h_bytes = 0;       // per group
  uint32_t m_bytes = 0;       // per block
};

// The device format of `t`; error for types no GPU kernel handles.
Result<WeightFormat> weight_format(TensorType t);
// Writes the planes of one row: `src` holds row_bytes(t, cols) bytes as stored; q, h, m receive
// ceil(cols/32) groups of q_bytes / h_bytes and the row's blocks of m_bytes.
void repack_row(const WeightFormat& f, const uint8_t* src, int64_t cols, uint8_t* q, uint8_t* h, uint8_t* m);

// A reusable host-visible staging buffer and command buffer for uploads. Borrows the Device.
class Uploader {
 public:
  static Result<std::unique_ptr<Uploader>> create(const Device& device, uint64_t staging_bytes = 64ull << 20);
  uint8_t* staging() const { return static_cast<uint8_t*>(staging_->mapped()); }
  uint64_t staging_bytes() const { return staging_->size_bytes(); }
  struct Region {
    uint64_t staging_offset, dst_offset, size_bytes;
  };
  // Copies the regions of the staging buffer into dst and waits for the copy.
  Status flush(const Buffer& dst, std::span<const Region> regions);
  // Copies `bytes` to dst at dst_offset, through staging in pieces.
  Status upload(const Buffer& dst, uint64_t dst_offset, std::span<const uint8_t> bytes);

 private:
  std::unique_ptr<Buffer> staging_;
  std::unique_ptr<class Commands> commands_;
};

// Rows [row_begin, row_begin + rows) of a weight matrix in one device buffer.
struct WeightChunk {
  std::unique_ptr<Buffer> buffer;
  uint32_t row_begin = 0;
  uint32_t rows = 0;
  uint32_t q_word = 0, h_word = 0, m_word = 0;  // plane offsets in 4-byte words
};

class WeightBuffer {
 public:
  // `data`: rows * row_bytes(type, cols) bytes as stored in GGUF (ggml ne = [cols, rows]).
  // Chunks hold at most max_chunk_bytes (0: the device's binding and allocation limits).
  static Result<std::unique_ptr<WeightBuffer>> upload(const Device& device, Uploader& uploader, TensorType type,
                                                      int64_t rows, int64_t cols, std::span<const uint8_t> data,
                                                      uint64_t max_chunk_bytes = 0);
  TensorType type() const { return format_.type; }
  const WeightFormat& format() const { return format_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  uint32_t groups_per_row() const { return uint32_t((cols_ + 31) / 32); }
  const std::vector<WeightChunk>& chunks() const { return chunks_; }
  uint64_t size_bytes() const;

 private:
  WeightBuffer() = default;
  WeightFormat format_;
  int64_t rows_ = 0, cols_ = 0;
  std::vector<WeightChunk> chunks_;
};

}  // namespace zinc::vulkan
