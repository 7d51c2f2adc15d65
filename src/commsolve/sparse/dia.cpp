#include "commsolve/sparse/dia.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace commsolve {

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
  D.nlower = static_cast<int>(std::lower_bound(offs.begin(), offs.end(), 0) - offs.begin());
  const std::size_t nl = static_cast<std::size_t>(D.nlower), nu = static_cast<std::size_t>(D.nupper());
  D.lower.assign(nl * static_cast<std::size_t>(A.nrows), 0.0);
  D.upper.assign(nu * static_cast<std::size_t>(A.nrows), 0.0);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    std::size_t k = 0;  // the row's columns ascend with the offsets: a merge (sorted or not, found by search)
    for (std::int32_t p = A.indptr[i]; p < A.indptr[i + 1]; ++p) {
      const std::int64_t o = static_cast<std::int64_t>(A.indices[p]) - i;
      if (k >= offs.size() || offs[k] != o) k = std::lower_bound(offs.begin(), offs.end(), o) - offs.begin();
      if (k < nl) D.lower[static_cast<std::size_t>(i) * nl + k] += A.data[p];
      else D.upper[static_cast<std::size_t>(i) * nu + (k - nl)] += A.data[p];
    }
  }
  if (offs.empty()) {
    D.interior_begin = 0;
    D.interior_end = A.nrows;
  } else {
    D.interior_begin = std::clamp<std::int64_t>(-offs.front(), 0, A.nrows);
    D.interior_end = std::clamp<std::int64_t>(ncols - offs.back(), D.interior_begin, A.nrows);
  }
  return D;
}

namespace {

// Row i's sum over the diagonals [k0, k1) of one half (values v, its offsets off, `skip` a
// diagonal left out or -1), unchecked (an interior row) or checked against the columns.
inline double half_sum(const double* __restrict v, const std::int64_t* off, int k0, int k1, int skip,
                       const double* __restrict x, std::int64_t i, std::int64_t ncols, bool inside) {
  double s0 = 0.0, s1 = 0.0;
  for (int k = k0; k < k1; ++k) {
    if (k == skip) continue;
    const std::int64_t j = i + off[k];
    if (inside || (j >= 0 && j < ncols)) ((k & 1) ? s1 : s0) += v[k] * x[j];
  }
  return s0 + s1;
}

// Row i's sum over both halves (the centre, upper diagonal 0, left out when skip_centre).
inline double row_sum(const LocalDia& A, const double* x, std::int64_t i, bool inside, bool lower_only,
                      bool skip_centre) {
  const int nl = A.nlower, nu = A.nupper();
  const std::int64_t* off = A.offsets.data();
  double s = half_sum(A.lower.data() + static_cast<std::size_t>(i) * nl, off, 0, nl, -1, x, i, A.ncols, inside);
  if (!lower_only)
    s += half_sum(A.upper.data() + static_cast<std::size_t>(i) * nu, off + nl, 0, nu, skip_centre ? 0 : -1, x, i,
                  A.ncols, inside);
  return s;
}

enum class Pass { spmv, forward, backward, zero, lower };  // what an interior pass computes

// Interior rows [lo, hi) through one pointer per diagonal: SpMV (y = A x, both halves whole),
// or a Gauss-Seidel sweep in order or reversed (the lower half and the upper half but its
// centre, divided by; from zero, forward, the lower half only), or the lower half's product
// alone. NL and NU > 0 fix the halves' sizes at compile time (the loops unrolled), 0 takes
// them at run time.
template <int NL, int NU, Pass P, bool CHAIN = false>
void interior(const LocalDia& A, const double* inv, const double* b, const double* xin, double* out, std::int64_t lo,
              std::int64_t hi) {
  // CHAIN (sweeps): the diagonal next to the centre on the side already swept (offset -1
  // forward, +1 backward) is taken from the row just computed, held in a register, and added
  // last: the sweep's row-to-row dependence is then one multiply-add and a multiply, not a
  // store, a load and the whole row's sum.
  constexpr bool up = P == Pass::backward;
  const int nl = NL > 0 ? NL : A.nlower, nu = NU > 0 ? NU : A.nupper();
  const int lend = CHAIN && !up ? nl - 1 : nl, ubeg = P == Pass::spmv ? 0 : (CHAIN && up ? 2 : 1);
  std::vector<const double*> xp(static_cast<std::size_t>(nl + nu));
  for (int k = 0; k < nl + nu; ++k) xp[static_cast<std::size_t>(k)] = xin + A.offsets[static_cast<std::size_t>(k)];
  const double* const* pl = xp.data();
  const double* const* pu = xp.data() + nl;
  double prev = CHAIN && lo < hi ? (up ? xin[hi] : xin[lo - 1]) : 0.0;
  for (std::int64_t q = lo; q < hi; ++q) {
    const std::int64_t i = up ? lo + hi - 1 - q : q;
    const double* vl = A.lower.data() + static_cast<std::size_t>(i) * nl;
    const double* vu = A.upper.data() + static_cast<std::size_t>(i) * nu;
    double s[4] = {0.0, 0.0, 0.0, 0.0};
#pragma GCC unroll 32
    for (int k = 0; k < lend; ++k) s[k & 3] += vl[k] * pl[k][i];
    if (P != Pass::zero && P != Pass::lower) {
#pragma GCC unroll 32
      for (int k = ubeg; k < (NU > 0 ? NU : nu); ++k) s[(k + 2) & 3] += vu[k] * pu[k][i];
    }
    // a sweep's update x_i += (b_i - (A x)_i) inv_i takes the centre a_ii x_i (old) in too: with
    // an l1 term in inv the fixed point stays A x = b
    const double old = P == Pass::forward || P == Pass::backward ? out[i] : 0.0;
    if constexpr (P == Pass::forward || P == Pass::backward) s[1] += vu[0] * old;
    const double sum = (s[0] + s[1]) + (s[2] + s[3]);
    if constexpr (P == Pass::spmv || P == Pass::lower) {
      out[i] = sum;
    } else if constexpr (CHAIN) {
      prev = old + (b[i] - sum - (up ? vu[1] : vl[nl - 1]) * prev) * inv[i];
      out[i] = prev;
    } else {
      out[i] = old + (b[i] - sum) * inv[i];
    }
  }
}

// Calls f(NL, NU) with the block's halves as compile-time constants for the common stencils
// (2D 5- and 9-point, 3D 7- and 27-point: their loops unrolled), as 0, 0 (run time) otherwise.
template <class F>
void with_halves(const LocalDia& A, F&& f) {
  using std::integral_constant;
  const int nl = A.nlower, nu = A.nupper();
  if (nl == 2 && nu == 3) return f(integral_constant<int, 2>{}, integral_constant<int, 3>{});
  if (nl == 4 && nu == 5) return f(integral_constant<int, 4>{}, integral_constant<int, 5>{});
  if (nl == 3 && nu == 4) return f(integral_constant<int, 3>{}, integral_constant<int, 4>{});
  if (nl == 13 && nu == 14) return f(integral_constant<int, 13>{}, integral_constant<int, 14>{});
  f(integral_constant<int, 0>{}, integral_constant<int, 0>{});
}

}  // namespace

void spmv(const LocalDia& A, const double* x, double* y) {
  for (std::int64_t i = 0; i < A.interior_begin; ++i) y[i] = row_sum(A, x, i, false, false, false);
  for (std::int64_t i = A.interior_end; i < A.nrows; ++i) y[i] = row_sum(A, x, i, false, false, false);
  with_halves(A, [&](auto nl, auto nu) {
    interior<decltype(nl)::value, decltype(nu)::value, Pass::spmv>(A, nullptr, nullptr, x, y, A.interior_begin,
                                                                      A.interior_end);
  });
}

void lower_difference_product(const LocalDia& A, const double* x, double* r, double* work) {
  const std::int64_t n = A.nrows, lo = A.interior_begin, hi = A.interior_end;
  for (std::int64_t i = 0; i < n; ++i) work[i] = r[i] - x[i];
  for (std::int64_t i = 0; i < lo; ++i) r[i] = row_sum(A, work, i, false, true, false);
  with_halves(A, [&](auto nl, auto nu) {
    interior<decltype(nl)::value, decltype(nu)::value, Pass::lower>(A, nullptr, nullptr, work, r, lo, hi);
  });
  for (std::int64_t i = hi; i < n; ++i) r[i] = row_sum(A, work, i, false, true, false);
}

void gauss_seidel_sweep(const LocalDia& A, const double* inv, const double* b, double* x, bool forward, bool zero) {
  // The centre diagonal (offset 0, the upper half's first) holds a_ii: left out, divided by
  // instead (inv: 1 / a_ii, or with an l1 term). From x = 0 forward only the lower half is read.
  const std::int64_t n = A.nrows, lo = A.interior_begin, hi = A.interior_end;
  if (n > 0 && (A.nupper() == 0 || A.offsets[static_cast<std::size_t>(A.nlower)] != 0))
    throw std::invalid_argument("DIA Gauss-Seidel: the block has no diagonal entries");
  const auto edge = [&](std::int64_t i) {
    x[i] = zero ? (b[i] - row_sum(A, x, i, false, true, true)) * inv[i]
                : x[i] + (b[i] - row_sum(A, x, i, false, false, false)) * inv[i];
  };
  // the previous row's diagonal (offset -1 forward, +1 backward), if the block has it
  const int nl = A.nlower;
  const bool chain = forward ? nl > 0 && A.offsets[static_cast<std::size_t>(nl - 1)] == -1
                             : A.nupper() > 1 && A.offsets[static_cast<std::size_t>(nl + 1)] == 1;
  const auto middle = [&]() {
    with_halves(A, [&](auto l, auto u) {
      constexpr int NL = decltype(l)::value, NU = decltype(u)::value;
      const auto run = [&](auto pass) {
        constexpr Pass P = decltype(pass)::value;
        if (chain) interior<NL, NU, P, true>(A, inv, b, x, x, lo, hi);
        else interior<NL, NU, P>(A, inv, b, x, x, lo, hi);
      };
      if (zero) run(std::integral_constant<Pass, Pass::zero>{});
      else if (forward) run(std::integral_constant<Pass, Pass::forward>{});
      else run(std::integral_constant<Pass, Pass::backward>{});
    });
  };
  if (forward) {
    for (std::int64_t i = 0; i < lo; ++i) edge(i);
    middle();
    for (std::int64_t i = hi; i < n; ++i) edge(i);
  } else {
    for (std::int64_t i = n - 1; i >= hi; --i) edge(i);
    middle();
    for (std::int64_t i = lo - 1; i >= 0; --i) edge(i);
  }
}

}  // namespace commsolve
