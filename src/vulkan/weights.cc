#include "vulkan/weights.h"

#include <algorithm>
#include <cstring>

#include "vulkan/commands.h"

namespace zinc::vulkan {
namespace {

constexpr uint64_t kPlaneAlign = 256;
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct PlaneBytes {
  uint64_t q, h, m;  // per row
  uint64_t total() const { return q + h + m; }
};

PlaneBytes plane_bytes(const WeightFormat& f, int64_t cols) {
  const uint64_t groups = uint64_t((cols + 31) / 32);
  const uint64_t blocks = f.q_bytes && f.m_bytes ? uint64_t(cols) / f.block_elems : 0;
  return {groups * f.q_bytes, groups * f.h_bytes, blocks * f.m_bytes};
}

}  // namespace

Result<std::unique_ptr<Uploader>> Uploader::create(const Device& device, uint64_t staging_bytes) {
  std::unique_ptr<Uploader> u(new Uploader());
  ZINC_ASSIGN_OR_RETURN(u->staging_, Buffer::create(device, staging_bytes, MemoryKind::kHostVisible));
  ZINC_ASSIGN_OR_RETURN(u->commands_, Commands::create(device));
  return u;
}

Status Uploader::flush(const Buffer& dst, std::span<const Region> regions) {
  ZINC_RETURN_IF_ERROR(commands_->begin());
  for (const Region& r : regions)
    if (r.size_bytes) commands_->copy(*staging_, r.staging_offset, dst, r.dst_offset, r.size_bytes);
  commands_->barrier();
  ZINC_RETURN_IF_ERROR(commands_->end());
  return commands_->submit_and_wait();
}

Status Uploader::upload(const Buffer& dst, uint64_t dst_offset, std::span<const uint8_t> bytes) {
  for (uint64_t done = 0; done < bytes.size();) {
    const uint64_t n = std::min<uint64_t>(bytes.size() - done, staging_bytes());
    std::memcpy(staging(), bytes.data() + done, n);
    const Region r{0, dst_offset + done, n};
    ZINC_RETURN_IF_ERROR(flush(dst, {&r, 1}));
    done += n;
  }
  return Status();
}

Result<std::unique_ptr<WeightBuffer>> WeightBuffer::upload(const Device& device, Uploader& uploader, TensorType type,
                                                           int64_t rows, int64_t cols, std::span<const uint8_t> data,
                                                           uint64_t max_chunk_bytes) {
  ZINC_ASSIGN_OR_RETURN(const WeightFormat f, weight_format(type));
  const std::string name(type_name(type));
  if (rows <= 0 || cols <= 0) return error("weight matrix %s of %lld x %lld is empty", name.c_str(), (long long)rows,
                                           (long long)cols);
  if (cols % type_info(type).block_elems != 0)
    return error("weight matrix %s has %lld columns, not a multiple of its block of %u", name.c_str(), (long long)cols,
                 type_info(type).block_elems);
  const size_t src_row = row_bytes(type, cols);
  if (data.size() != src_row * size_t(rows))
    return error("weight matrix %s of %lld x %lld needs %zu bytes, got %zu", name.c_str(), (long long)rows,
                 (long long)cols, src_row * size_t(rows), data.size());

  const PlaneBytes per_row = plane_bytes(f, cols);
  uint64_t limit = std::min(device.caps().max_storage_buffer_range, device.caps().max_allocation_bytes);
  if (max_chunk_bytes) limit = std::min(limit, max_chunk_bytes);
  limit = std::min<uint64_t>(limit, uint64_t(1) << 32);  // word offsets are 32-bit
  if (limit <= 3 * kPlaneAlign || (limit - 3 * kPlaneAlign) / per_row.total() == 0)
    return error("one row of weight matrix %s (%llu bytes) exceeds the buffer limit of %llu bytes", name.c_str(),
                 (unsigned long long)per_row.total(), (unsigned long long)limit);
  uint64_t chunk_rows = (limit - 3 * kPlaneAlign) / per_row.total();
  if (chunk_rows >= 64) chunk_rows = chunk_rows / 64 * 64;
  const uint64_t pass_rows = uploader.staging_bytes() / per_row.total();
  if (pass_rows == 0)
    return error("one row of weight matrix %s (%llu bytes) exceeds the staging buffer", name.c_str(),
                 (unsigned long long)per_row.total());

  std::unique_ptr<WeightBuffer> w(new WeightBuffer());
  w->format_ = f;
  w->rows_ = rows;
  w->cols_ = cols;
  for (int64_t begin = 0; begin < rows; begin += int64_t(chunk_rows)) {
    WeightChunk c;
    c.row_begin = uint32_t(begin);
    c.rows = uint32_t(std::min<int64_t>(rows - begin, int64_t(chunk_rows)));
    const uint64_t q_size = align_up(per_row.q * c.rows, kPlaneAlign);
    const uint64_t h_size = align_up(per_row.h * c.rows, kPlaneAlign);
    const uint64_t m_size = align_up(per_row.m * c.rows, kPlaneAlign);
    c.q_word = 0;
    c.h_word = uint32_t(q_size / 4);
    c.m_word = uint32_t((q_size + h_size) / 4);
    ZINC_ASSIGN_OR_RETURN(c.buffer, Buffer::create(device, q_size + h_size + m_size, MemoryKind::kDeviceLocal));
    for (uint32_t r0 = 0; r0 < c.rows; r0 += uint32_t(pass_rows)) {
      const uint32_t n = uint32_t(std::min<uint64_t>(c.rows - r0, pass_rows));
      uint8_t* st = uploader.staging();
      uint8_t* q = st;
      uint8_t* h = q + per_row.q * n;
      uint8_t* m = h + per_row.h * n;
      const uint8_t* src = data.data() + (size_t(c.row_begin) + r0) * src_row;
      for (uint32_t r = 0; r < n; ++r)
        repack_row(f, src + size_t(r) * src_row, cols, q + per_row.q * r, h + per_row.h * r, m + per_row.m * r);
      const Uploader::Region regions[3] = {{0, per_row.q * r0, per_row.q * n},
                                 {uint64_t(h - st), uint64_t(c.h_word) * 4 + per_row.h * r0, per_row.h * n},
                                 {uint64_t(m - st), uint64_t(c.m_word) * 4 + per_row.m * r0, per_row.m * n}};
      ZINC_RETURN_IF_ERROR(uploader.flush(*c.buffer, regions));
    }
    w->chunks_.push_back(std::move(c));
  }
  return w;
}

uint64_t WeightBuffer::size_bytes() const {
  uint64_t n = 0;
  for (const auto& c : chunks_) n += c.buffer->size_bytes();
  return n;
}

}  // namespace zinc::vulkan
