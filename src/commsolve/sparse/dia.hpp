// DIA storage (diagonals) for banded and stencil matrices: the distinct offsets (column - row)
// of the block, and each row's values at them stored row by row, 0 where the row has no entry.
// No column indices travel: 8 bytes per stored entry against CSR's 12, which is what a
// memory-bound SpMV or Gauss-Seidel sweep pays for a stencil (27-point: 216 bytes a row
// against 328). Rows whose every offset lands inside the columns (the interior) run without
// bounds checks.
#pragma once

#include <cstdint>
#include <vector>

#include "sparse/kernels.hpp"

namespace commsolve {

struct LocalDia {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::vector<std::int64_t> offsets;  // ascending: the lower diagonals (offset < 0) first
  std::vector<double> data;           // row i's value at offsets[k]: data[i * ndiag() + k] (0: no entry)
  std::int64_t interior_begin = 0, interior_end = 0;  // rows whose every offset lands in [0, ncols)

  int ndiag() const { return static_cast<int>(offsets.size()); }
  int nlower() const;  // offsets below 0
  std::int64_t stored() const { return static_cast<std::int64_t>(data.size()); }
  // Bytes SpMV reads and writes: the stored values, x once, y once.
  double spmv_bytes() const { return 8.0 * static_cast<double>(stored()) + 8.0 * static_cast<double>(ncols + nrows); }
};

// From CSR (columns < ncols). std::invalid_argument when the block has more than
// max_diagonals distinct offsets, or when DIA would store more than max_fill times its
// entries (padding): such a matrix is not banded enough for the format.
LocalDia dia_from_csr(CsrView A, std::int64_t ncols, int max_diagonals = 64, double max_fill = 2.0);

// y = A x.
void spmv(const LocalDia& A, const double* x, double* y);

// One Gauss-Seidel sweep on a square block in place on x (forward or backward): x_i = (b_i -
// sum_{j != i} a_ij x_j) inv_i, the diagonal (offset 0, which must exist) skipped; `zero`
// (forward): x is 0 on entry, so only the lower diagonals are read.
void gauss_seidel_sweep(const LocalDia& A, const double* inv, const double* b, double* x, bool forward, bool zero);

}  // namespace commsolve
