// SELL-C-sigma storage (Kreutzer et al., SIAM J. Sci. Comput. 2014) for the kernels that
// stream a matrix: rows sorted by length inside windows of sigma rows, cut into chunks of C
// rows, each chunk stored column by column and padded to its longest row, so that C rows
// advance together (one SIMD lane each). Its special cases: ELL (one chunk of all rows, no
// sorting) and sliced ELL (SELL-C-1: chunks, no sorting; Nakajima's format).
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/sparse/kernels.hpp"

namespace commsolve {

struct LocalSell {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  int C = 1;                              // rows per chunk
  std::int64_t sigma = 1;                 // rows sorted by length within windows of sigma
  std::vector<std::int32_t> perm;         // position p of the sorted order holds row perm[p]
  std::vector<std::int64_t> chunk_ptr{0};  // chunk c's entries: [chunk_ptr[c], chunk_ptr[c + 1])
  std::vector<std::int32_t> chunk_len;    // its longest row
  std::vector<std::int32_t> indices;      // entry j of lane l of chunk c at chunk_ptr[c] + j C + l
  std::vector<double> data;               // padding: value 0 at a column of its row (or 0)

  std::int64_t stored() const { return static_cast<std::int64_t>(data.size()); }
  // Bytes SpMV reads and writes: stored entries (values, columns), the permutation and chunk
  // records, x once, y once.
  double spmv_bytes() const;
};

// From CSR (columns < ncols). C >= 1; sigma >= 1 (1: the rows' order kept; a multiple of C
// keeps chunks inside windows). std::invalid_argument for bad sizes.
LocalSell sell_from_csr(CsrView A, std::int64_t ncols, int C, std::int64_t sigma);

// y = A x (y in the original row order).
void spmv(const LocalSell& A, const double* x, double* y);

// One Gauss-Seidel sweep on a square block in place on x, rows taken in storage order
// (forward) or its reverse: the rows' own order for sigma = 1; with sigma > 1, each window's
// rows longest first (a Gauss-Seidel ordering too, the backward sweep its exact reverse, so
// forward then backward stays symmetric). x_i += (b_i - sum_j a_ij x_j) inv_i (inv: 1 / a_ii,
// or 1 / (a_ii plus an l1 term)). From x = 0 the whole row is read still (what is not yet
// updated is 0).
void gauss_seidel_sweep(const LocalSell& A, const double* inv, const double* b, double* x, bool forward);

}  // namespace commsolve
