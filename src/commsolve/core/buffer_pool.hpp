// Buffers of doubles kept for reuse. A message engine or a factorization that allocated a
// fresh large vector per message would pay, per message, a new mapping from the kernel, its
// zeroed pages on first touch and the unmapping after (glibc maps blocks of 128 KiB and
// more on their own), and a process reading this one's memory (Open MPI's single-copy
// transfers) holds the lock that mapping needs. Buffers come in power-of-two capacities, one
// free list per size class, 64 MiB kept at most; small ones (under 4 KiB) are left to malloc.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace commsolve {

class BufferPool {
 public:
  // At most `per_class` buffers kept in each size class, and `max_values` doubles in all.
  explicit BufferPool(std::size_t per_class = 32, std::size_t max_values = std::size_t{1} << 23)
      : per_class_(per_class), max_values_(max_values), free_(64) {}

  // A buffer of n values (contents unspecified).
  std::vector<double> take(std::int64_t n) {
    const std::size_t want = static_cast<std::size_t>(n);
    if (want < small) return std::vector<double>(want);
    std::vector<double> buf;
    auto& list = free_[std::bit_width(want - 1)];  // capacity 2^c >= n
    if (!list.empty()) {
      buf = std::move(list.back());
      list.pop_back();
      kept_ -= buf.capacity();
    } else {
      buf.reserve(std::bit_ceil(want));
    }
    buf.resize(want);
    return buf;
  }

  // Keeps `buf` for a later take, if its class has room.
  void give(std::vector<double>&& buf) {
    const std::size_t c = buf.capacity();
    if (c < small || !std::has_single_bit(c)) return;
    auto& list = free_[std::bit_width(c - 1)];
    if (list.size() >= per_class_ || kept_ + c > max_values_) return;
    kept_ += c;
    list.push_back(std::move(buf));
  }

 private:
  static constexpr std::size_t small = 512;
  std::size_t per_class_, max_values_, kept_ = 0;
  std::vector<std::vector<std::vector<double>>> free_;  // by log2(capacity)
};

}  // namespace commsolve
