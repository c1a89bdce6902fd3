// The server's pieces that keep no state (server.cc keeps it): error
// answers, the access token, cookies, bind addresses, the captures served,
// and a bounded least-recently-used cache. Internal to serve/.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <utility>

namespace microscope::serve {

// {"error": message}
std::string ErrorJson(const std::string& message);
// Whether the address the server binds is a loopback one.
bool IsLoopback(const std::string& bind);
// 32 hex digits from getrandom (the kernel's CSPRNG); empty if it fails.
std::string RandomToken();
// Compared in time that depends on the length only (which is fixed).
bool SameToken(const std::string& a, const std::string& b);
// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "".
std::string CookieValue(const std::string& header, const std::string& name);

// A small least-recently-used map, bounded by count and by the bytes its
// values are said to take.
template <typename V>
class Lru {
 public:
  explicit Lru(size_t capacity, uint64_t max_bytes = UINT64_MAX)
      : capacity_(capacity), max_bytes_(max_bytes) {}
  uint64_t max_bytes() const { return max_bytes_; }
  void set_max_bytes(uint64_t bytes) { max_bytes_ = bytes; }
  const V* Get(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }
  void Erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    bytes_ -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
  }
  void Clear() {
    order_.clear();
    index_.clear();
    bytes_ = 0;
  }
  // Keeps `value` (unless it alone is over the byte bound), dropping the
  // least recently used past either bound.
  const V& Put(const std::string& key, V value, uint64_t bytes = 0) {
    Erase(key);
    order_.push_front({key, std::move(value), bytes});
    index_[key] = order_.begin();
    bytes_ += bytes;
    while (order_.size() > 1 && (order_.size() > capacity_ || bytes_ > max_bytes_)) {
      bytes_ -= order_.back().bytes;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
    return order_.front().value;
  }

 private:
  struct Entry {
    std::string key;
    V value;
    uint64_t bytes;
  };
  size_t capacity_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  std::list<Entry> order_;
  std::map<std::string, typename std::list<Entry>::iterator> index_;
};

}  // namespace microscope::serve
