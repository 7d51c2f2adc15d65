#include "commsolve/core/memory.hpp"

#include <sys/resource.h>

#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace commsolve {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // glibc before 2.35 or so refuses a threshold above 32 MiB (the documented maximum on 64-bit)
  const bool heap = mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1 || mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool kept = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  return heap && kept;
#else
  return false;
#endif
}

std::int64_t minor_page_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_minflt);
}

}  // namespace commsolve
