#include "model/resident_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace zinc::model {
namespace {

constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr size_t kReadChunkBytes = size_t(64) << 20;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::unique_ptr<ResidentBytes>> ResidentBytes::read(const std::string& path, uint64_t offset, size_t size_bytes) {
  std::unique_ptr<ResidentBytes> r(new ResidentBytes());
  if (size_bytes == 0) return r;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return error("%s: cannot open to read the weights: %s", path.c_str(), std::strerror(errno));
  // Over-allocate by one huge page so that the data can start on a huge-page boundary.
  const size_t rounded = (size_bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  r->mapping_bytes_ = rounded + kHugePageBytes;
  void* m = mmap(nullptr, r->mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    return error("%s: cannot allocate %zu bytes for the weights: %s", path.c_str(), r->mapping_bytes_,
                 std::strerror(errno));
  r->mapping_ = m;
  const uintptr_t base = (reinterpret_cast<uintptr_t>(m) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  r->data_ = reinterpret_cast<uint8_t*>(base);
  r->size_bytes_ = size_bytes;
  madvise(r->data_, rounded, MADV_HUGEPAGE);  // advice only: without THP the copy still helps
  posix_fadvise(f.fd, off_t(offset), off_t(size_bytes), POSIX_FADV_SEQUENTIAL);
  for (size_t done = 0; done < size_bytes;) {
    const size_t want = std::min(kReadChunkBytes, size_bytes - done);
    const ssize_t got = ::pread(f.fd, r->data_ + done, want, off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return error("%s: reading the weights at byte %llu: %s", path.c_str(),
                              (unsigned long long)(offset + done), std::strerror(errno));
    if (got == 0) return error("%s: file ends at byte %llu, expected %llu", path.c_str(),
                               (unsigned long long)(offset + done), (unsigned long long)(offset + size_bytes));
    done += size_t(got);
  }
  mprotect(r->data_, rounded, PROT_READ);
  return r;
}

ResidentBytes::~ResidentBytes() {
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

}  // namespace zinc::model
