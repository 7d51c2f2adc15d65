// DIA storage (diagonals) for banded and stencil matrices: the distinct offsets (column - row)
// of the block, and each row's values at them stored row by row, 0 where the row has no entry,
// the lower diagonals (offset < 0) in one array and the rest (the centre first) in another, so
// that a sweep from x = 0 streams only the lower half. No column indices travel: 8 bytes per
// stored entry against CSR's 12, which is what a memory-bound SpMV or Gauss-Seidel sweep pays
// for a stencil (27-point: 216 bytes a row against 328). Rows whose every offset lands inside
// the columns (the interior) run without bounds checks.
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/sparse/kernels.hpp"

namespace commsolve {

struct LocalDia {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::vector<std::int64_t> offsets;  // ascending: the lower diagonals (offset < 0) first
  int nlower = 0;                     // offsets below 0
  std::vector<double> lower;          // row i's value at offsets[k], k < nlower: lower[i * nlower + k] (0: none)
  std::vector<double> upper;          // and at offsets[nlower + k]: upper[i * nupper() + k]
  std::int64_t interior_begin = 0, interior_end = 0;  // rows whose every offset lands in [0, ncols)

  int ndiag() const { return static_cast<int>(offsets.size()); }
  int nupper() const { return ndiag() - nlower; }
  std::int64_t stored() const { return static_cast<std::int64_t>(lower.size() + upper.size()); }
  // Bytes SpMV reads and writes: the stored values, x once, y once.
  double spmv_bytes() const { return 8.0 * static_cast<double>(stored()) + 8.0 * static_cast<double>(ncols + nrows); }
};

// From CSR (columns < ncols). std::invalid_argument when the block has more than
// max_diagonals distinct offsets, or when DIA would store more than max_fill times its
// entries (padding): such a matrix is not banded enough for the format.
LocalDia dia_from_csr(CsrView A, std::int64_t ncols, int max_diagonals = 64, double max_fill = 2.0);

// y = A x.
void spmv(const LocalDia& A, const double* x, double* y);

// One Gauss-Seidel sweep on a square block in place on x (forward or backward): x_i += (b_i -
// sum_j a_ij x_j) inv_i (the diagonal, offset 0, must exist; inv: 1 / a_ii, or with an l1
// term); `zero` (forward): x is 0 on entry, so only the lower diagonals are read.
void gauss_seidel_sweep(const LocalDia& A, const double* inv, const double* b, double* x, bool forward, bool zero);

// r_i = sum over the lower diagonals of a_ij (r_j - x_j) (work: nrows doubles of scratch):
// the block's residual after a symmetric Gauss-Seidel step from x = 0, as the CSR
// lower_difference_product (kernels.hpp) computes it.
void lower_difference_product(const LocalDia& A, const double* x, double* r, double* work);

}  // namespace commsolve
