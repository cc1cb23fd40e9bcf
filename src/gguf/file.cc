#include "gguf/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace zinc::gguf {
namespace {

constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxArrayElems = uint64_t(1) << 30;

// Bounds-checked little-endian cursor over the file bytes.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return b_.size() - pos_; }
  const uint8_t* here() const { return b_.data() + pos_; }

  template <typename T>
  Status read(T& out, const char* what) {
    if (remaining() < sizeof(T))
      return error("truncated file: %s at offset %llu needs %zu bytes, %llu left", what,
                   (unsigned long long)pos_, sizeof(T), (unsigned long long)remaining());
    std::memcpy(&out, here(), sizeof(T));
    pos_ += sizeof(T);
    return Status();
  }

  Status skip(uint64_t n, const char* what) {
    if (remaining() < n)
      return error("truncated file: %s at offset %llu needs %llu bytes, %llu left", what,
                   (unsigned long long)pos_, (unsigned long long)n, (unsigned long long)remaining());
    pos_ += n;
    return Status();
  }

  Status read_string(std::string_view& out, const char* what) {
    uint64_t len = 0;
    ZINC_RETURN_IF_ERROR(read(len, what));
    if (len > kMaxStringBytes)
      return error("%s: string length %llu exceeds the limit of 2^30 bytes", what, (unsigned long long)len);
    const uint8_t* start = here();
    ZINC_RETURN_IF_ERROR(skip(len, what));
    out = std::string_view(reinterpret_cast<const char*>(start), len);
    return Status();
  }

 private:
  std::span<const uint8_t> b_;
  uint64_t pos_ = 0;
};

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 32 && c < 127) ? c : '?';
  if (s.size() > 80) out += "...";
  return out;
}

Status read_scalar(Reader& r, ValueType t, ValueView& v, const char* what) {
  v.type = t;
  switch (t) {
    case ValueType::UINT8: { uint8_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.u64 = x; break; }
    case ValueType::INT8: { int8_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.i64 = x; break; }
    case ValueType::UINT16: { uint16_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.u64 = x; break; }
    case ValueType::INT16: { int16_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.i64 = x; break; }
    case ValueType::UINT32: { uint32_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.u64 = x; break; }
    case ValueType::INT32: { int32_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.i64 = x; break; }
    case ValueType::UINT64: { uint64_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.u64 = x; break; }
    case ValueType::INT64: { int64_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.i64 = x; break; }
    case ValueType::FLOAT32: { float x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.f64 = x; break; }
    case ValueType::FLOAT64: { double x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.f64 = x; break; }
    case ValueType::BOOL: { uint8_t x{}; ZINC_RETURN_IF_ERROR(r.read(x, what)); v.scalar.u64 = x != 0; break; }
    case ValueType::STRING: return r.read_string(v.str, what);
    case ValueType::ARRAY: return Status::error("internal: read_scalar on ARRAY");
  }
  return Status();
}

Status read_value(Reader& r, ValueType t, ValueView& v, const std::string& key) {
  const std::string what = "value of key '" + key + "'";
  if (t != ValueType::ARRAY) return read_scalar(r, t, v, what.c_str());
  v.type = ValueType::ARRAY;
  uint32_t elem = 0;
  ZINC_RETURN_IF_ERROR(r.read(elem, what.c_str()));
  if (elem > kMaxValueType)
    return error("key '%s': array element type %u is not a GGUF value type", key.c_str(), elem);
  if (ValueType(elem) == ValueType::ARRAY)
    return error("key '%s': arrays of arrays are not allowed", key.c_str());
  v.array_type = ValueType(elem);
  uint64_t count = 0;
  ZINC_RETURN_IF_ERROR(r.read(count, what.c_str()));
  if (count > kMaxArrayElems)
    return error("key '%s': array of %llu elements exceeds the limit of 2^30", key.c_str(),
                 (unsigned long long)count);
  v.array_count = count;
  if (v.array_type == ValueType::STRING) {
    // Each string takes at least its 8-byte length: bound the count by the bytes left.
    if (count > r.remaining() / 8)
      return error("key '%s': array of %llu strings does not fit in the %llu bytes left in the file",
                   key.c_str(), (unsigned long long)count, (unsigned long long)r.remaining());
    v.array_strings.resize(count);
    for (uint64_t i = 0; i < count; ++i) ZINC_RETURN_IF_ERROR(r.read_string(v.array_strings[i], what.c_str()));
    return Status();
  }
  const uint64_t esize = value_type_size(v.array_type);
  if (count > r.remaining() / esize)
    return error("key '%s': array of %llu %s elements does not fit in the %llu bytes left in the file",
                 key.c_str(), (unsigned long long)count, value_type_name(v.array_type),
                 (unsigned long long)r.remaining());
  v.array_data = r.here();
  return r.skip(count * esize, what.c_str());
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (uint32_t i = 0; i < std::max<uint32_t>(n_dims, 1); ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

File::~File() {
  if (mapping_) munmap(mapping_, mapping_size_);
}

Result<std::unique_ptr<File>> File::open(const std::string& path) {
  ZINC_ASSIGN_OR_RETURN(auto f, open_one(path));
  ZINC_RETURN_IF_ERROR(f->join_parts());
  return f;
}

Result<std::unique_ptr<File>> File::open_one(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error("cannot open: %s", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return error("cannot stat: %s", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error("not a regular file");
  }
  std::unique_ptr<File> f(new File());
  if (st.st_size > 0) {
    void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return error("cannot map: %s", std::strerror(e));
    }
    f->mapping_ = m;
    f->mapping_size_ = size_t(st.st_size);
    f->bytes_ = {static_cast<const uint8_t*>(m), size_t(st.st_size)};
  }
  ::close(fd);
  f->path_ = path;
  ZINC_RETURN_IF_ERROR(f->parse());
  return f;
}

Result<std::unique_ptr<File>> File::from_memory(std::span<const uint8_t> bytes) {
  std::unique_ptr<File> f(new File());
  f->bytes_ = bytes;
  ZINC_RETURN_IF_ERROR(f->parse());
  return f;
}

Status File::parse() {
  Reader r(bytes_);
  uint32_t magic = 0;
  if (bytes_.size() < 4) return error("not a GGUF file: only %zu bytes", bytes_.size());
  ZINC_RETURN_IF_ERROR(r.read(magic, "magic"));
  if (magic != kMagic) return error("not a GGUF file: bad magic 0x%08x", magic);
  ZINC_RETURN_IF_ERROR(r.read(version_, "version"));
  if ((version_ & 0xFFFF) == 0 && version_ != 0)
    return error("GGUF version 0x%08x looks byte-swapped: big-endian files are not supported", version_);
  if (version_ == 1) return Status::error("GGUF version 1 is not supported (only 2 and 3)");
  if (version_ != 2 && version_ != 3) return error("unsupported GGUF version %u (only 2 and 3)", version_);

  int64_t n_tensors = 0, n_kv = 0;
  ZINC_RETURN_IF_ERROR(r.read(n_tensors, "tensor count"));
  ZINC_RETURN_IF_ERROR(r.read(n_kv, "metadata count"));
  // A key-value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at least
  // 8 + 4 + 4 + 8: counts beyond what the file can hold are rejected before any allocation.
  if (n_kv < 0 || uint64_t(n_kv) > r.remaining() / 13)
    return error("metadata count %lld is impossible for a file of %zu bytes", (long long)n_kv, bytes_.size());
  if (n_tensors < 0 || uint64_t(n_tensors) > r.remaining() / 24)
    return error("tensor count %lld is impossible for a file of %zu bytes", (long long)n_tensors, bytes_.size());

  // Counts are only bounded by the file size here: reserve a little and let the vectors grow, so
  // a lying header cannot make us allocate many times the file's size up front.
  constexpr int64_t kMaxReserve = 4096;
  kvs_.reserve(size_t(std::min(n_kv, kMaxReserve)));
  kv_index_.reserve(size_t(std::min(n_kv, kMaxReserve)));
  for (int64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    ZINC_RETURN_IF_ERROR(r.read_string(kv.key, "metadata key"));
    const std::string key = printable(kv.key);  // for messages; a key may be up to 2^30 bytes
    uint32_t type = 0;
    ZINC_RETURN_IF_ERROR(r.read(type, "metadata value type"));
    if (type > kMaxValueType)
      return error("key '%s': value type %u is not a GGUF value type", key.c_str(), type);
    ZINC_RETURN_IF_ERROR(read_value(r, ValueType(type), kv.value, key));
    if (!kv_index_.emplace(kv.key, kvs_.size()).second)
      return error("duplicate metadata key '%s'", key.c_str());
    kvs_.push_back(std::move(kv));
  }

  if (const ValueView* a = find("general.alignment")) {
    if (a->type != ValueType::UINT32)
      return error("general.alignment has type %s, expected UINT32", value_type_name(a->type));
    uint64_t al = a->scalar.u64;
    if (al == 0 || (al & (al - 1)) != 0)
      return error("general.alignment %llu is not a power of two", (unsigned long long)al);
    alignment_ = uint32_t(al);
  }

  tensors_.reserve(size_t(std::min(n_tensors, kMaxReserve)));
  tensor_index_.reserve(size_t(std::min(n_tensors, kMaxReserve)));
  for (int64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    ZINC_RETURN_IF_ERROR(r.read_string(t.name, "tensor name"));
    const std::string name = printable(t.name);
    if (t.name.empty()) return error("tensor %lld has an empty name", (long long)i);
    if (t.name.size() > kMaxTensorName)
      return error("tensor name '%s' is %zu bytes, the limit is %zu", name.c_str(), t.name.size(), kMaxTensorName);
    ZINC_RETURN_IF_ERROR(r.read(t.n_dims, "tensor dimension count"));
    if (t.n_dims > uint32_t(kMaxDims))
      return error("tensor '%s' has %u dimensions, at most %d allowed", name.c_str(), t.n_dims, kMaxDims);
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      ZINC_RETURN_IF_ERROR(r.read(t.ne[d], "tensor dimension"));
      if (t.ne[d] < 0)
        return error("tensor '%s' dimension %u is negative (%lld)", name.c_str(), d, (long long)t.ne[d]);
    }
    uint32_t type = 0;
    ZINC_RETURN_IF_ERROR(r.read(type, "tensor type"));
    auto info = tensor_type_info(type);
    if (!info) return error("tensor '%s' has unknown type id %u", name.c_str(), type);
    t.type = TensorType(type);
    ZINC_RETURN_IF_ERROR(r.read(t.offset, "tensor offset"));

    int64_t n = 1;
    for (int d = 0; d < kMaxDims; ++d)
      if (__builtin_mul_overflow(n, t.ne[d], &n))
        return error("tensor '%s' shape %s overflows the element count", name.c_str(), t.shape_string().c_str());
    if (t.ne[0] % info->block_elems != 0)
      return error("tensor '%s' of type %s: ne[0] = %lld is not a multiple of the block size %u", name.c_str(),
                   std::string(info->name).c_str(), (long long)t.ne[0], info->block_elems);
    uint64_t size = 0;
    if (__builtin_mul_overflow(uint64_t(n / info->block_elems), uint64_t(info->block_bytes), &size))
      return error("tensor '%s' byte size overflows", name.c_str());
    t.size_bytes = size;
    if (t.offset % alignment_ != 0)
      return error("tensor '%s' offset %llu is not a multiple of the alignment %u", name.c_str(),
                   (unsigned long long)t.offset, alignment_);
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      return error("duplicate tensor name '%s'", name.c_str());
    tensors_.push_back(t);
  }

  data_offset_ = align_up(r.pos(), alignment_);
  if (data_offset_ > bytes_.size() && !tensors_.empty())
    return error("truncated file: the data section would start at %llu, past the end (%zu bytes)",
                 (unsigned long long)data_offset_, bytes_.size());
  const uint64_t data_size = bytes_.size() > data_offset_ ? bytes_.size() - data_offset_ : 0;
  for (auto& t : tensors_) {
    uint64_t end = 0;
    if (__builtin_add_overflow(t.offset, t.size_bytes, &end) || end > data_size)
      return error("tensor '%s' (%llu bytes at offset %llu) extends past the end of the data section (%llu bytes); "
                   "the file may be truncated",
                   printable(t.name).c_str(), (unsigned long long)t.size_bytes, (unsigned long long)t.offset,
                   (unsigned long long)data_size);
    t.data = bytes_.data() + data_offset_ + t.offset;
  }
  return Status();
}

const ValueView* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

namespace {
Status type_mismatch(std::string_view key, ValueType got, const char* want) {
  return error("metadata key '%s' has type %s, expected %s", std::string(key).c_str(), value_type_name(got), want);
}
}  // namespace

Result<std::optional<std::string_view>> File::find_string(std::string_view key) const {
  const ValueView* v = find(key);
  if (!v) return std::optional<std::string_view>();
  if (v->type != ValueType::STRING) return type_mismatch(key, v->type, "STRING");
  return std::optional<std::string_view>(v->str);
}

Result<std::optional<uint32_t>> File::find_u32(std::string_view key) const {
  const ValueView* v = find(key);
  if (!v) return std::optional<uint32_t>();
  if (v->type != ValueType::UINT32) return type_mismatch(key, v->type, "UINT32");
  return std::optional<uint32_t>(uint32_t(v->scalar.u64));
}

Result<std::optional<uint64_t>> File::find_uint(std::string_view key) const {
  const ValueView* v = find(key);
  if (!v) return std::optional<uint64_t>();
  switch (v->type) {
    case ValueType::UINT8: case ValueType::UINT16: case ValueType::UINT32: case ValueType::UINT64:
      return std::optional<uint64_t>(v->scalar.u64);
    case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
      if (v->scalar.i64 < 0)
        return error("metadata key '%s' is negative (%lld)", std::string(key).c_str(), (long long)v->scalar.i64);
      return std::optional<uint64_t>(uint64_t(v->scalar.i64));
    default:
      return type_mismatch(key, v->type, "an integer");
  }
}

Result<std::optional<float>> File::find_f32(std::string_view key) const {
  const ValueView* v = find(key);
  if (!v) return std::optional<float>();
  if (v->type != ValueType::FLOAT32) return type_mismatch(key, v->type, "FLOAT32");
  return std::optional<float>(float(v->scalar.f64));
}

Result<std::optional<bool>> File::find_bool(std::string_view key) const {
  const ValueView* v = find(key);
  if (!v) return std::optional<bool>();
  if (v->type != ValueType::BOOL) return type_mismatch(key, v->type, "BOOL");
  return std::optional<bool>(v->scalar.u64 != 0);
}

Result<const ValueView*> File::find_array(std::string_view key, ValueType elem) const {
  const ValueView* v = find(key);
  if (!v) return static_cast<const ValueView*>(nullptr);
  if (v->type != ValueType::ARRAY) return type_mismatch(key, v->type, "ARRAY");
  if (v->array_type != elem)
    return error("metadata key '%s' is an array of %s, expected %s", std::string(key).c_str(),
                 value_type_name(v->array_type), value_type_name(elem));
  return v;
}

std::string File::architecture() const {
  const ValueView* v = find("general.architecture");
  return v && v->type == ValueType::STRING ? std::string(v->str) : std::string();
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<std::unique_ptr<File>> open_file(const std::string& path) {
  auto f = File::open(path);
  if (!f.ok()) return f.status().with_context(path);
  return f;
}

}  // namespace zinc::gguf
