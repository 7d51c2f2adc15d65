#include "sparse/dia.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace commsolve {

int LocalDia::nlower() const {
  return static_cast<int>(std::lower_bound(offsets.begin(), offsets.end(), 0) - offsets.begin());
}

LocalDia dia_from_csr(CsrView A, std::int64_t ncols, int max_diagonals, double max_fill) {
  LocalDia D;
  D.nrows = A.nrows;
  D.ncols = ncols;
  D.nnz = A.nrows > 0 ? A.indptr[A.nrows] - A.indptr[0] : 0;
  std::vector<std::int64_t> offs;
  for (std::int64_t i = 0; i < A.nrows; ++i)
    for (std::int32_t p = A.indptr[i]; p < A.indptr[i + 1]; ++p) {
      if (A.indices[p] < 0 || A.indices[p] >= ncols)
        throw std::invalid_argument("DIA: row " + std::to_string(i) + " has column " + std::to_string(A.indices[p]) +
                                    ", outside [0, " + std::to_string(ncols) + ")");
      offs.push_back(static_cast<std::int64_t>(A.indices[p]) - i);
    }
  std::sort(offs.begin(), offs.end());
  offs.erase(std::unique(offs.begin(), offs.end()), offs.end());
  if (static_cast<std::int64_t>(offs.size()) > max_diagonals)
    throw std::invalid_argument("DIA: the block has " + std::to_string(offs.size()) + " distinct diagonals, more than " +
                                std::to_string(max_diagonals) + " (not a banded or stencil matrix: use csr or sell)");
  const double stored = static_cast<double>(offs.size()) * static_cast<double>(A.nrows);
  if (D.nnz > 0 && stored > max_fill * static_cast<double>(D.nnz))
    throw std::invalid_argument("DIA: its " + std::to_string(offs.size()) + " diagonals would store " +
                                std::to_string(static_cast<std::int64_t>(stored)) + " values for " +
                                std::to_string(D.nnz) + " entries (more than " + std::to_string(max_fill) +
                                " times: use csr or sell)");
  D.offsets = offs;
  const int nd = D.ndiag();
  D.data.assign(static_cast<std::size_t>(nd) * static_cast<std::size_t>(A.nrows), 0.0);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    std::size_t k = 0;  // the row's columns ascend with the offsets: a merge (sorted or not, found by search)
    for (std::int32_t p = A.indptr[i]; p < A.indptr[i + 1]; ++p) {
      const std::int64_t o = static_cast<std::int64_t>(A.indices[p]) - i;
      if (k >= offs.size() || offs[k] != o) k = std::lower_bound(offs.begin(), offs.end(), o) - offs.begin();
      D.data[static_cast<std::size_t>(i) * nd + k] += A.data[p];
    }
  }
  if (nd == 0) {
    D.interior_begin = 0;
    D.interior_end = A.nrows;
  } else {
    D.interior_begin = std::clamp<std::int64_t>(-offs.front(), 0, A.nrows);
    D.interior_end = std::clamp<std::int64_t>(ncols - offs.back(), D.interior_begin, A.nrows);
  }
  return D;
}

namespace {

// Row i's sum over diagonals [k0, k1): unchecked inside the interior, checked at the edges.
inline double row_sum(const LocalDia& A, const double* __restrict x, std::int64_t i, int k0, int k1, bool inside) {
  const int nd = A.ndiag();
  const double* __restrict v = A.data.data() + static_cast<std::size_t>(i) * nd;
  const std::int64_t* off = A.offsets.data();
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int k = k0;
  if (inside) {
    for (; k + 4 <= k1; k += 4) {
      s0 += v[k] * x[i + off[k]];
      s1 += v[k + 1] * x[i + off[k + 1]];
      s2 += v[k + 2] * x[i + off[k + 2]];
      s3 += v[k + 3] * x[i + off[k + 3]];
    }
    for (; k < k1; ++k) s0 += v[k] * x[i + off[k]];
  } else {
    for (; k < k1; ++k) {
      const std::int64_t j = i + off[k];
      if (j >= 0 && j < A.ncols) s0 += v[k] * x[j];
    }
  }
  return (s0 + s1) + (s2 + s3);
}

inline bool inside(const LocalDia& A, std::int64_t i) { return i >= A.interior_begin && i < A.interior_end; }

}  // namespace

void spmv(const LocalDia& A, const double* x, double* y) {
  const int nd = A.ndiag();
  for (std::int64_t i = 0; i < A.interior_begin; ++i) y[i] = row_sum(A, x, i, 0, nd, false);
  for (std::int64_t i = A.interior_begin; i < A.interior_end; ++i) y[i] = row_sum(A, x, i, 0, nd, true);
  for (std::int64_t i = A.interior_end; i < A.nrows; ++i) y[i] = row_sum(A, x, i, 0, nd, false);
}

void gauss_seidel_sweep(const LocalDia& A, const double* inv, const double* own, const double* b, double* x,
                        bool forward, bool zero) {
  const std::int64_t n = A.nrows;
  const int nd = A.ndiag();
  if (zero) {  // x = 0 ahead of row i: the lower diagonals only
    const int nl = A.nlower();
    for (std::int64_t i = 0; i < n; ++i) x[i] = (b[i] - row_sum(A, x, i, 0, nl, inside(A, i))) * inv[i];
    return;
  }
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = forward ? k : n - 1 - k;
    x[i] = (b[i] - row_sum(A, x, i, 0, nd, inside(A, i)) + own[i] * x[i]) * inv[i];
  }
}

}  // namespace commsolve
