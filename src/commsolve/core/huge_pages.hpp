// An allocator for large arrays that asks the kernel for transparent huge pages (where the
// system leaves them to madvise). On the VMs we run on, first touching a gigabyte of 4 KiB
// pages costs seconds in page faults; with 2 MiB pages it costs a tenth of that.
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

}  // namespace commsolve
