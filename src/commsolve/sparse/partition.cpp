#include "commsolve/sparse/partition.hpp"

#include <metis.h>

#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

std::vector<std::int32_t> metis_kway(std::int64_t n, const std::int32_t* xadj,
                                     const std::int32_t* adjncy, int nparts, int seed) {
  static_assert(sizeof(idx_t) == sizeof(std::int32_t), "Debian's METIS uses 32-bit idx_t");
  require(nparts >= 1, "metis: nparts must be at least 1");
  require(n >= nparts, "metis: " + std::to_string(nparts) + " parts for " + std::to_string(n) +
                           " rows (more ranks than rows)");
  std::vector<std::int32_t> part(n, 0);
  if (nparts == 1) return part;
  idx_t nvtxs = static_cast<idx_t>(n), ncon = 1, np = nparts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = seed;
  options[METIS_OPTION_NUMBERING] = 0;
  // METIS takes non-const pointers but does not modify the graph.
  int status = METIS_PartGraphKway(&nvtxs, &ncon, const_cast<idx_t*>(xadj), const_cast<idx_t*>(adjncy),
                                   nullptr, nullptr, nullptr, &np, nullptr, nullptr, options,
                                   &objval, part.data());
  if (status != METIS_OK)
    throw std::runtime_error("METIS_PartGraphKway failed with status " + std::to_string(status));
  return part;
}

}  // namespace commsolve
