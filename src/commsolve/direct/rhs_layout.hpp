// Where b and x meet a distributed triangular solve. b and x are distributed by rows (a
// Distribution over the user's row order, as ParCSR's, SuperLU_DIST's B and X); the solve
// works on the permuted columns, each held by the rank that solves it: the diagonal owner of
// its supernode on the lowest grid sharing the supernode's forest (the other grids start
// that supernode from zero, SC'23 Algorithm 1, line 4). Moving b there is a halo pattern
// (the solving rank needs those rows), run as a CommPlan by the halo executor; x comes back
// by the same plan in reverse.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/sparse/distribution.hpp"

namespace commsolve {

// How b and x meet a solve: their distribution by rows, the row of b that factor row k reads
// (row_order[k]) and the row of x that factor column k gives (col_order[k]). The orders are
// the ordering's permutation, and differ when rows were permuted for a large diagonal.
struct RhsMap {
  Distribution dist;
  std::vector<std::int32_t> row_order, col_order;
  // Throws std::invalid_argument unless the distribution covers n rows on nranks ranks and
  // both orders are permutations of n (`who` names the caller).
  void check(std::int64_t n, int nranks, const std::string& who) const;
};

// The rank that solves every permuted column.
std::vector<std::int32_t> column_solvers(const SupernodalStructure& sym, const ProcessGrid3D& grid,
                                         const ForestPartition& forests);

// `perm[k]`: the original row of permuted column k. One rank's pattern (receive and send
// sides, no communication: every rank knows where every row goes). O(n).
HaloPattern rhs_pattern(int rank, const Distribution& dist, const std::vector<std::int32_t>& perm,
                        const std::vector<std::int32_t>& solver);
// Every rank's pattern in one pass (the virtual world).
std::vector<HaloPattern> rhs_patterns(const Distribution& dist, const std::vector<std::int32_t>& perm,
                                      const std::vector<std::int32_t>& solver);

}  // namespace commsolve
