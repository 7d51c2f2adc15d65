// A row permutation that puts large entries on the diagonal, with the scaling that goes with
// it: the job MC64 does for SuperLU_DIST (RowPerm = LargeDiag_MC64; Duff and Koster, "On
// algorithms for permuting large entries to the diagonal of a sparse matrix", SIMAX 2001,
// job 5). The permutation maximises the product of the diagonal's magnitudes, a minimum-cost
// perfect matching of the bipartite row/column graph with costs c_ij = log max_k |a_ik| -
// log |a_ij| >= 0, found by successive shortest augmenting paths (Dijkstra on reduced costs)
// after a greedy start. The optimal dual variables u (rows), v (columns) give the scaling
// Dr_i = exp(u_i) / max_k |a_ik|, Dc_j = exp(v_j), under which every matched entry has
// magnitude 1 and every other entry at most 1.
#pragma once

#include <cstdint>
#include <vector>

namespace commsolve {

struct LargeDiagonal {
  std::vector<std::int32_t> row_of_col;  // the row matched to each column: B = A[row_of_col, :]
  std::vector<double> row_scale, col_scale;  // Dr, Dc (in A's own row and column order)
  double log_product = 0.0;              // sum over columns of log |a(row_of_col[j], j)|
};

// `indptr`/`indices`/`data`: CSR of a square n x n matrix. Entries equal to zero do not count.
// Throws std::invalid_argument for a structurally singular matrix (no perfect matching:
// names a row that cannot be matched) or a non-finite entry (names it).
LargeDiagonal large_diagonal_matching(std::int64_t n, const std::int64_t* indptr, const std::int32_t* indices,
                                      const double* data);

}  // namespace commsolve
