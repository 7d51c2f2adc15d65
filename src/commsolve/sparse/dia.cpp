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

namespace {

// Rows [lo, hi) of the interior (every offset inside), in order (FWD) or reversed: the sum
// over the diagonals but the centre c, or (ZERO) over those below it only, through one pointer
// per diagonal; ND > 0 fixes the diagonal count at compile time (the loop unrolled), 0 takes
// it at run time.
template <int ND, bool FWD, bool ZERO>
void interior(const LocalDia& A, int c, const double* inv, const double* b, double* x, std::int64_t lo,
              std::int64_t hi) {
  const int nd = ND > 0 ? ND : A.ndiag();
  std::vector<const double*> xp(static_cast<std::size_t>(nd));
  for (int k = 0; k < nd; ++k) xp[static_cast<std::size_t>(k)] = x + A.offsets[static_cast<std::size_t>(k)];
  const double* const* p = xp.data();
  const double* val = A.data.data();
  const int k1 = ZERO ? c : nd;
  for (std::int64_t q = lo; q < hi; ++q) {
    const std::int64_t i = FWD ? q : lo + hi - 1 - q;
    const double* v = val + static_cast<std::size_t>(i) * nd;
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    if (ND > 0) {
#pragma GCC unroll 32
      for (int k = 0; k < ND; ++k)
        if (ZERO ? k < c : k != c) s[k & 3] += v[k] * p[k][i];
    } else {
      for (int k = 0; k < k1; ++k)
        if (k != c) s[k & 3] += v[k] * p[k][i];
    }
    x[i] = (b[i] - ((s[0] + s[1]) + (s[2] + s[3]))) * inv[i];
  }
}

template <int ND>
void interior_any(const LocalDia& A, int c, const double* inv, const double* b, double* x, std::int64_t lo,
                  std::int64_t hi, bool forward, bool zero) {
  if (zero) return interior<ND, true, true>(A, c, inv, b, x, lo, hi);
  if (forward) return interior<ND, true, false>(A, c, inv, b, x, lo, hi);
  return interior<ND, false, false>(A, c, inv, b, x, lo, hi);
}

// An edge row (some offsets outside): checked, the same sum.
inline void edge(const LocalDia& A, int c, int k1, const double* inv, const double* b, double* x, std::int64_t i) {
  const int nd = A.ndiag();
  const double* v = A.data.data() + static_cast<std::size_t>(i) * nd;
  double s = 0.0;
  for (int k = 0; k < k1; ++k) {
    const std::int64_t j = i + A.offsets[static_cast<std::size_t>(k)];
    if (k != c && j >= 0 && j < A.ncols) s += v[k] * x[j];
  }
  x[i] = (b[i] - s) * inv[i];
}

}  // namespace

void gauss_seidel_sweep(const LocalDia& A, const double* inv, const double* b, double* x, bool forward, bool zero) {
  // The centre diagonal (offset 0) holds a_ii: skipped, divided by instead (inv: 1 / a_ii,
  // or with an l1 term). From x = 0 forward only the lower diagonals are read.
  const std::int64_t n = A.nrows, lo = A.interior_begin, hi = A.interior_end;
  const int nl = A.nlower();
  const int c = nl < A.ndiag() && A.offsets[static_cast<std::size_t>(nl)] == 0 ? nl : -1;
  if (c < 0 && n > 0) throw std::invalid_argument("DIA Gauss-Seidel: the block has no diagonal entries");
  const int k1 = zero ? nl : A.ndiag();
  const auto middle = [&](std::int64_t a, std::int64_t z) {
    switch (A.ndiag()) {
      case 7: return interior_any<7>(A, c, inv, b, x, a, z, forward, zero);
      case 27: return interior_any<27>(A, c, inv, b, x, a, z, forward, zero);
      default: return interior_any<0>(A, c, inv, b, x, a, z, forward, zero);
    }
  };
  if (forward) {
    for (std::int64_t i = 0; i < lo; ++i) edge(A, c, k1, inv, b, x, i);
    middle(lo, hi);
    for (std::int64_t i = hi; i < n; ++i) edge(A, c, k1, inv, b, x, i);
  } else {
    for (std::int64_t i = n - 1; i >= hi; --i) edge(A, c, k1, inv, b, x, i);
    middle(lo, hi);
    for (std::int64_t i = lo - 1; i >= 0; --i) edge(A, c, k1, inv, b, x, i);
  }
}

}  // namespace commsolve
