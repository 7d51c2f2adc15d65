// Large arrays and their first touch. On the VMs we run on, first touching a gigabyte of
// 4 KiB pages costs seconds in page faults. HugePageAllocator asks the kernel for transparent
// huge pages (where the system leaves them to madvise). ZeroedArray, the factors' storage,
// backs a whole array in one call instead (prefault); it asks for huge pages only with
// COMMSOLVE_HUGE_PAGES=1: they shorten the numeric factorization (fewer TLB misses, ~10 % on
// poisson2d9:1000) where the kernel has them free, but where it must compact memory first
// the allocation costs seconds more (1.65 GB: 5.7-6.1 s against 2.0-3.2 s here).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace commsolve {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t huge = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < 4 * huge) {
      if (auto* p = static_cast<T*>(std::malloc(bytes ? bytes : 1))) return p;
      throw std::bad_alloc();
    }
    const std::size_t rounded = (bytes + huge - 1) / huge * huge;
    void* p = std::aligned_alloc(huge, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves ordinary pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// Whether COMMSOLVE_HUGE_PAGES=1 asks ZeroedArray for transparent huge pages.
inline bool huge_pages_asked() {
  const char* v = std::getenv("COMMSOLVE_HUGE_PAGES");
  return v != nullptr && v[0] == '1' && v[1] == '\0';
}

// A fixed-size array of zeros straight from the kernel (anonymous mmap; huge pages advised
// above 8 MiB where asked): no user-space fill pass, and pages are only touched where
// written. For the factors, which are assembled by adding into zeros and are as large as
// memory allows.

template <class T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  explicit ZeroedArray(std::size_t n) : n_(n) {
    if (n == 0) return;
    bytes_ = n * sizeof(T);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (bytes_ >= 4 * HugePageAllocator<T>::huge && huge_pages_asked()) madvise(p, bytes_, MADV_HUGEPAGE);  // advice
    data_ = static_cast<T*>(p);
  }
  ZeroedArray(ZeroedArray&& o) noexcept : data_(o.data_), n_(o.n_), bytes_(o.bytes_) { o.forget(); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_, n_ = o.n_, bytes_ = o.bytes_;
      o.forget();
    }
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ~ZeroedArray() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return n_; }

  // Makes the kernel back every page now, so that the first pass of real work does not pay
  // the page faults: in one call (MADV_POPULATE_WRITE, Linux 5.14), 2-4x faster than a
  // fault per page on these VMs (1.3 GB: 0.7-1.0 s against 1.1-3.7 s), else by writing a
  // zero into each page.
  void prefault() {
    if (bytes_ == 0) return;
#ifdef MADV_POPULATE_WRITE
    if (madvise(data_, bytes_, MADV_POPULATE_WRITE) == 0) return;
#endif
    volatile char* p = reinterpret_cast<volatile char*>(data_);
    for (std::size_t b = 0; b < bytes_; b += 4096) p[b] = 0;
  }

 private:
  void release() noexcept {
    if (data_) munmap(data_, bytes_);
    forget();
  }
  void forget() noexcept {
    data_ = nullptr;
    n_ = bytes_ = 0;
  }
  T* data_ = nullptr;
  std::size_t n_ = 0, bytes_ = 0;
};

}  // namespace commsolve
