// The responses /v1/responses keeps (store, the default) for previous_response_id and for GET and
// DELETE /v1/responses/{id}: each with the conversation it ends (chat messages without the
// instructions, which a later turn does not inherit) and its own input items, in memory. The
// least recently used go once the entries pass a byte budget. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/api.h"

namespace zinc::server {

struct StoredResponse {
  Json response;      // the response object as it was answered
  Json conversation;  // chat messages up to and including its answer
  Json input_items;   // the request's input as items with ids
};

class ResponseStore {
 public:
  ResponseStore() = default;
  explicit ResponseStore(size_t max_bytes) : max_bytes_(max_bytes) {}
  ResponseStore(const ResponseStore&) = delete;
  ResponseStore& operator=(const ResponseStore&) = delete;

  void set_max_bytes(size_t max_bytes);
  bool enabled() const;
  // Keeps `entry` as the most recently used; false where it alone is over the budget.
  bool put(const std::string& id, StoredResponse entry);
  std::optional<StoredResponse> get(const std::string& id);
  bool erase(const std::string& id);
  size_t bytes() const;

 private:
  struct Slot {
    StoredResponse entry;
    size_t bytes = 0;
    std::list<std::string>::iterator age;
  };
  void evict_locked();
  void remove_locked(std::unordered_map<std::string, Slot>::iterator it);

  mutable std::mutex mu_;
  size_t max_bytes_ = size_t(64) << 20, bytes_ = 0;
  std::list<std::string> lru_;  // least recently used first
  std::unordered_map<std::string, Slot> slots_;
};

}  // namespace zinc::server
