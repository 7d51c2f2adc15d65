// IndexMap: open-addressing hash map from non-negative int64 keys (global indices) to int32
// values (positions). Plan builders look up every halo value this way, millions of times in
// virtual-world builds, where std::unordered_map's node allocations dominate.
#pragma once

#include <cstdint>
#include <vector>

namespace commsolve {

class IndexMap {
 public:
  explicit IndexMap(std::size_t expected = 0) { rehash(capacity_for(expected)); }

  // Inserts `key` or overwrites its value.
  void set(std::int64_t key, std::int32_t value) {
    if (2 * (size_ + 1) > keys_.size()) rehash(2 * keys_.size());
    std::size_t i = slot(key);
    if (keys_[i] < 0) {
      keys_[i] = key;
      ++size_;
    }
    vals_[i] = value;
  }
  // The value of `key`, or -1.
  std::int32_t get(std::int64_t key) const {
    std::size_t i = slot(key);
    return keys_[i] < 0 ? -1 : vals_[i];
  }
  std::size_t size() const { return size_; }

 private:
  static std::size_t capacity_for(std::size_t n) {
    std::size_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
  }
  std::size_t slot(std::int64_t key) const {
    std::uint64_t h = static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    std::size_t i = static_cast<std::size_t>(h ^ (h >> 29)) & (keys_.size() - 1);
    while (keys_[i] >= 0 && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    return i;
  }
  void rehash(std::size_t capacity) {
    std::vector<std::int64_t> old_keys(capacity, -1);
    std::vector<std::int32_t> old_vals(capacity, 0);
    old_keys.swap(keys_);
    old_vals.swap(vals_);
    for (std::size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] < 0) continue;
      std::size_t j = slot(old_keys[i]);
      keys_[j] = old_keys[i];
      vals_[j] = old_vals[i];
    }
  }

  std::vector<std::int64_t> keys_;
  std::vector<std::int32_t> vals_;
  std::size_t size_ = 0;
};

}  // namespace commsolve
