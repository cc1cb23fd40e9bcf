#include "gguf/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/file.h"

namespace zinc::gguf {
namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) {}
  bool ok() const { return ok_; }
  uint64_t pos() const { return pos_; }
  void bytes(const void* p, size_t n) {
    if (n && ok_ && std::fwrite(p, 1, n, f_) != n) ok_ = false;
    pos_ += n;
  }
  template <typename T>
  void pod(T v) { bytes(&v, sizeof(T)); }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void zeros(uint64_t n) {
    static const uint8_t kZero[64] = {};
    while (n) {
      size_t k = n < 64 ? size_t(n) : 64;
      bytes(kZero, k);
      n -= k;
    }
  }

 private:
  std::FILE* f_;
  bool ok_ = true;
  uint64_t pos_ = 0;
};

void write_scalar(Out& o, ValueType t, const Value& v) {
  switch (t) {
    case ValueType::UINT8: o.pod<uint8_t>(uint8_t(std::get<uint64_t>(v.data))); break;
    case ValueType::BOOL: o.pod<uint8_t>(std::get<uint64_t>(v.data) ? 1 : 0); break;
    case ValueType::INT8: o.pod<int8_t>(int8_t(std::get<int64_t>(v.data))); break;
    case ValueType::UINT16: o.pod<uint16_t>(uint16_t(std::get<uint64_t>(v.data))); break;
    case ValueType::INT16: o.pod<int16_t>(int16_t(std::get<int64_t>(v.data))); break;
    case ValueType::UINT32: o.pod<uint32_t>(uint32_t(std::get<uint64_t>(v.data))); break;
    case ValueType::INT32: o.pod<int32_t>(int32_t(std::get<int64_t>(v.data))); break;
    case ValueType::UINT64: o.pod<uint64_t>(std::get<uint64_t>(v.data)); break;
    case ValueType::INT64: o.pod<int64_t>(std::get<int64_t>(v.data)); break;
    case ValueType::FLOAT32: o.pod<float>(float(std::get<double>(v.data))); break;
    case ValueType::FLOAT64: o.pod<double>(std::get<double>(v.data)); break;
    case ValueType::STRING: o.str(std::get<std::string>(v.data)); break;
    case ValueType::ARRAY: break;
  }
}

void write_value(Out& o, const Value& v) {
  o.pod<uint32_t>(uint32_t(v.type));
  if (v.type != ValueType::ARRAY) {
    write_scalar(o, v.type, v);
    return;
  }
  const auto& items = std::get<Value::Array>(v.data);
  o.pod<uint32_t>(uint32_t(v.array_type));
  o.pod<uint64_t>(items.size());
  for (const auto& item : items) write_scalar(o, v.array_type, item);
}

}  // namespace

void Writer::set(const std::string& key, Value value) {
  for (auto& kv : kvs_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  kvs_.emplace_back(key, std::move(value));
}

void Writer::remove(const std::string& key) {
  std::erase_if(kvs_, [&](const auto& kv) { return kv.first == key; });
}

bool Writer::has(const std::string& key) const {
  for (const auto& kv : kvs_)
    if (kv.first == key) return true;
  return false;
}

Status Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, Fill fill) {
  if (name.empty() || name.size() > kMaxTensorName)
    return error("tensor name '%s' must have 1 to %zu bytes", name.c_str(), kMaxTensorName);
  if (ne.empty() || ne.size() > size_t(kMaxDims))
    return error("tensor '%s' must have 1 to %d dimensions", name.c_str(), kMaxDims);
  for (const auto& t : tensors_)
    if (t.name == name) return error("duplicate tensor name '%s'", name.c_str());
  const auto& info = type_info(type);
  if (ne[0] % info.block_elems != 0)
    return error("tensor '%s': ne[0] = %lld is not a multiple of the %s block size %u", name.c_str(),
                 (long long)ne[0], std::string(info.name).c_str(), info.block_elems);
  uint64_t n = 1;
  for (int64_t d : ne) {
    if (d < 0) return error("tensor '%s' has a negative dimension", name.c_str());
    n *= uint64_t(d);
  }
  const uint64_t size = n / info.block_elems * info.block_bytes;
  tensors_.push_back({name, type, ne, size, data_size_, std::move(fill)});
  data_size_ = align_up(data_size_ + size, alignment_);
  return Status();
}

Status Writer::write(const std::string& path) const {
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return error("%s: cannot create: %s", path.c_str(), std::strerror(errno));
  Out o(f);
  auto fail = [&](const std::string& what) {
    std::fclose(f);
    std::remove(tmp.c_str());
    return error("%s: %s", path.c_str(), what.c_str());
  };

  o.pod<uint32_t>(kMagic);
  o.pod<uint32_t>(3);
  o.pod<int64_t>(int64_t(tensors_.size()));
  const bool custom_alignment = alignment_ != kDefaultAlignment;
  o.pod<int64_t>(int64_t(kvs_.size() + (custom_alignment && !has("general.alignment") ? 1 : 0)));
  for (const auto& [key, value] : kvs_) {
    o.str(key);
    if (key == "general.alignment") {
      write_value(o, Value::u32(alignment_));
    } else {
      write_value(o, value);
    }
  }
  if (custom_alignment && !has("general.alignment")) {
    o.str("general.alignment");
    write_value(o, Value::u32(alignment_));
  }
  for (const auto& t : tensors_) {
    o.str(t.name);
    o.pod<uint32_t>(uint32_t(t.ne.size()));
    for (int64_t d : t.ne) o.pod<int64_t>(d);
    o.pod<uint32_t>(uint32_t(t.type));
    o.pod<uint64_t>(t.offset);
  }
  o.zeros(align_up(o.pos(), alignment_) - o.pos());
  const uint64_t data_start = o.pos();

  std::vector<uint8_t> buf;
  for (const auto& t : tensors_) {
    buf.assign(t.size_bytes, 0);
    Status s = t.fill(std::span<uint8_t>(buf));
    if (!s.ok()) return fail("tensor '" + t.name + "': " + s.message());
    o.zeros(data_start + t.offset - o.pos());
    o.bytes(buf.data(), buf.size());
    if (!o.ok()) return fail(std::string("write failed: ") + std::strerror(errno));
  }
  o.zeros(data_start + data_size_ - o.pos());
  if (!o.ok() || std::fclose(f) != 0) {
    std::remove(tmp.c_str());
    return error("%s: write failed: %s", path.c_str(), std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return error("%s: cannot rename the finished file: %s", path.c_str(), std::strerror(errno));
  }
  return Status();
}

}  // namespace zinc::gguf
