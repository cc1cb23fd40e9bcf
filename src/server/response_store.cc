#include "server/response_store.h"

namespace zinc::server {

void ResponseStore::set_max_bytes(size_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  max_bytes_ = max_bytes;
  evict_locked();
}

bool ResponseStore::enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_bytes_ > 0;
}

bool ResponseStore::put(const std::string& id, StoredResponse entry) {
  const size_t n = id.size() + dump(entry.response).size() + dump(entry.conversation).size() + dump(entry.input_items).size();
  std::lock_guard<std::mutex> lock(mu_);
  if (n > max_bytes_) return false;
  if (auto it = slots_.find(id); it != slots_.end()) remove_locked(it);
  lru_.push_back(id);
  slots_[id] = Slot{std::move(entry), n, std::prev(lru_.end())};
  bytes_ += n;
  evict_locked();
  return true;
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  lru_.splice(lru_.end(), lru_, it->second.age);
  return it->second.entry;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return false;
  remove_locked(it);
  return true;
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void ResponseStore::evict_locked() {
  while (bytes_ > max_bytes_ && !lru_.empty()) remove_locked(slots_.find(lru_.front()));
}

void ResponseStore::remove_locked(std::unordered_map<std::string, Slot>::iterator it) {
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.age);
  slots_.erase(it);
}

}  // namespace zinc::server
