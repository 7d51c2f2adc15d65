// Graph partitioning of a matrix's rows (METIS k-way).
#pragma once

#include <cstdint>
#include <vector>

namespace commsolve {

// Owner rank of every row: METIS_PartGraphKway on the symmetric adjacency graph given in
// CSR form (no self loops; the caller symmetrises A + A^T). Deterministic for a fixed seed.
// Parts left empty by METIS on tiny graphs are legal (a rank may own no rows).
std::vector<std::int32_t> metis_kway(std::int64_t n, const std::int32_t* xadj,
                                     const std::int32_t* adjncy, int nparts, int seed);

}  // namespace commsolve
