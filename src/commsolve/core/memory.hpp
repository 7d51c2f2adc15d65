// Freed memory kept in the process. A multigrid setup allocates and frees arrays of hundreds
// of megabytes level after level (products, interpolation, plans, and numpy's arrays around
// them); glibc hands every block above its mmap threshold back to the kernel when freed, so
// the next one is mapped and zeroed anew, page by page: a fifth of a 1M-row AMG setup went to
// page faults. With the policy, such blocks come from the heap and freed memory stays there
// for the next allocation (the resident size stays at its high-water mark, as with hypre's and
// PETSc's own pools).
#pragma once

#include <cstdint>

namespace commsolve {

// Applies the policy: glibc's mmap threshold raised to 1 GiB (32 MiB where an older glibc
// refuses more: larger blocks are then still mapped anew) and its heap never trimmed.
// Returns whether both took effect (false off glibc).
bool keep_freed_memory();

// This process's minor page faults so far (getrusage).
std::int64_t minor_page_faults();

}  // namespace commsolve
