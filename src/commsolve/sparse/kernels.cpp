#include "commsolve/sparse/kernels.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

namespace commsolve {

double LocalCsr::spmv_bytes() const {
  return 12.0 * static_cast<double>(nnz()) + 4.0 * static_cast<double>(nrows + 1) +
         8.0 * static_cast<double>(ncols) + 8.0 * static_cast<double>(nrows);
}

namespace {

template <bool Add>
void csr_rows(CsrView A, const double* __restrict x, double* __restrict y) {
  const std::int32_t* __restrict ptr = A.indptr;
  const std::int32_t* __restrict col = A.indices;
  const double* __restrict val = A.data;
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    // Two accumulators break the dependence chain of the inner sum.
    double s0 = 0.0, s1 = 0.0;
    std::int32_t k = ptr[i];
    const std::int32_t end = ptr[i + 1];
    for (; k + 1 < end; k += 2) {
      s0 += val[k] * x[col[k]];
      s1 += val[k + 1] * x[col[k + 1]];
    }
    if (k < end) s0 += val[k] * x[col[k]];
    if constexpr (Add)
      y[i] += s0 + s1;
    else
      y[i] = s0 + s1;
  }
}

}  // namespace

void spmv(CsrView A, const double* x, double* y) { csr_rows<false>(A, x, y); }
void spmv_add(CsrView A, const double* x, double* y) { csr_rows<true>(A, x, y); }

void spmv_transpose_add(CsrView A, const double* __restrict x, double* __restrict y) {
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    const double xi = x[i];
    for (std::int32_t k = A.indptr[i]; k < A.indptr[i + 1]; ++k) y[A.indices[k]] += A.data[k] * xi;
  }
}

std::vector<double> stream_triad_bandwidth(std::int64_t n, int reps) {
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  std::vector<double> out;
  const double s = 3.0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double* __restrict pa = a.get();
    const double* __restrict pb = b.get();
    const double* __restrict pc = c.get();
    for (std::int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    auto t1 = std::chrono::steady_clock::now();
    out.push_back(24.0 * static_cast<double>(n) / std::chrono::duration<double>(t1 - t0).count());
    // Keep the compiler from dropping repetitions.
    b[r % n] = a[(r * 7) % n];
  }
  return out;
}

std::vector<double> stream_read_bandwidth(std::int64_t n, int reps) {
  std::unique_ptr<double[]> a(new double[n]);
  for (std::int64_t i = 0; i < n; ++i) a[i] = 1.0 / static_cast<double>(i + 1);
  std::vector<double> out;
  volatile double sink = 0.0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const double* __restrict p = a.get();
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;  // four chains keep the adds off the critical path
    std::int64_t i = 0;
    for (; i + 3 < n; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
    for (; i < n; ++i) s0 += p[i];
    auto t1 = std::chrono::steady_clock::now();
    sink = sink + s0 + s1 + s2 + s3;
    out.push_back(8.0 * static_cast<double>(n) / std::chrono::duration<double>(t1 - t0).count());
  }
  return out;
}

namespace {

// sum_{j < i} a_ij v_j over row i's entries left of its diagonal (sorted columns).
inline double lower_row_sum(CsrView A, const double* v, std::int64_t i) {
  double s0 = 0.0, s1 = 0.0;
  std::int32_t p = A.indptr[i];
  const std::int32_t e = A.indptr[i + 1];
  for (; p + 2 <= e && A.indices[p + 1] < i; p += 2) {
    s0 += A.data[p] * v[A.indices[p]];
    s1 += A.data[p + 1] * v[A.indices[p + 1]];
  }
  for (; p < e && A.indices[p] < i; ++p) s0 += A.data[p] * v[A.indices[p]];
  return s0 + s1;
}

}  // namespace

void lower_difference_product(CsrView A, const double* x, double* r, double* work) {
  for (std::int64_t i = 0; i < A.nrows; ++i) work[i] = r[i] - x[i];
  for (std::int64_t i = 0; i < A.nrows; ++i) r[i] = lower_row_sum(A, work, i);
}

void gauss_seidel_sweep(CsrView A, const double* inv, const double* b, double* x, bool forward, bool zero) {
  // x_i += (b_i - sum_j a_ij x_j) / d_i, the sum over the whole row (four partial sums: a
  // row's products do not wait on one another, only on x_{i-1}); from x = 0 (forward), only
  // the row's entries left of its diagonal (sorted columns) are read.
  const std::int64_t n = A.nrows;
  const std::int32_t* ptr = A.indptr;
  const std::int32_t* col = A.indices;
  const double* val = A.data;
  if (zero) {
    for (std::int64_t i = 0; i < n; ++i) x[i] = (b[i] - lower_row_sum(A, x, i)) * inv[i];
    return;
  }
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = forward ? k : n - 1 - k;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    std::int32_t p = ptr[i];
    const std::int32_t e = ptr[i + 1];
    for (; p + 4 <= e; p += 4) {
      s0 += val[p] * x[col[p]];
      s1 += val[p + 1] * x[col[p + 1]];
      s2 += val[p + 2] * x[col[p + 2]];
      s3 += val[p + 3] * x[col[p + 3]];
    }
    for (; p < e; ++p) s0 += val[p] * x[col[p]];
    x[i] += (b[i] - ((s0 + s1) + (s2 + s3))) * inv[i];
  }
}

std::int64_t ilu0_factor(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices, double* lu) {
  std::vector<std::int32_t> diag(static_cast<std::size_t>(n), -1);
  std::vector<std::int32_t> where(static_cast<std::size_t>(n), -1);  // row i's position of each column
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int32_t p = indptr[i]; p < indptr[i + 1]; ++p) where[indices[p]] = p;
    for (std::int32_t p = indptr[i]; p < indptr[i + 1] && indices[p] < i; ++p) {
      const std::int32_t k = indices[p];
      lu[p] /= lu[diag[k]];
      for (std::int32_t q = diag[k] + 1; q < indptr[k + 1]; ++q)  // row k of U, right of its diagonal
        if (where[indices[q]] >= 0) lu[where[indices[q]]] -= lu[p] * lu[q];
    }
    for (std::int32_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      if (indices[p] == i) diag[i] = p;
      where[indices[p]] = -1;
    }
    if (diag[i] < 0 || lu[diag[i]] == 0.0 || !std::isfinite(lu[diag[i]])) return i;
  }
  return -1;
}

void ilu0_solve(CsrView LU, const double* b, double* x) {
  const std::int64_t n = LU.nrows;
  for (std::int64_t i = 0; i < n; ++i) {  // L y = b, unit diagonal
    double r = b[i];
    for (std::int32_t p = LU.indptr[i]; p < LU.indptr[i + 1] && LU.indices[p] < i; ++p) r -= LU.data[p] * x[LU.indices[p]];
    x[i] = r;
  }
  for (std::int64_t i = n - 1; i >= 0; --i) {  // U x = y
    double r = x[i], d = 0.0;
    for (std::int32_t p = LU.indptr[i + 1] - 1; p >= LU.indptr[i] && LU.indices[p] >= i; --p) {
      if (LU.indices[p] == i) d = LU.data[p];
      else r -= LU.data[p] * x[LU.indices[p]];
    }
    x[i] = r / d;
  }
}

namespace {
constexpr double kTieTolerance = 1e-12;  // relative: magnitudes this close count as equal
}  // namespace

std::int64_t truncate_rows(std::int64_t nrows, std::int64_t* indptr, std::int64_t* indices, double* data,
                           double factor, int max_elements) {
  std::int64_t out = 0;
  std::vector<double> mags;
  for (std::int64_t i = 0; i < nrows; ++i) {
    const std::int64_t b = indptr[i], e = indptr[i + 1];
    double big = 0.0, total = 0.0;
    for (std::int64_t p = b; p < e; ++p) {
      big = std::max(big, std::abs(data[p]));
      total += data[p];
    }
    double cut = factor * big;
    if (max_elements > 0 && e - b > max_elements) {  // the max_elements-th largest magnitude
      mags.clear();
      for (std::int64_t p = b; p < e; ++p) mags.push_back(std::abs(data[p]));
      std::nth_element(mags.begin(), mags.begin() + (max_elements - 1), mags.end(), std::greater<double>());
      // entries equal to it up to rounding stay too: no arbitrary choice among equals
      cut = std::max(cut, mags[max_elements - 1] * (1.0 - kTieTolerance));
    }
    const std::int64_t start = out;
    double kept = 0.0;
    for (std::int64_t p = b; p < e; ++p)
      if (std::abs(data[p]) >= cut && data[p] != 0.0) {  // explicit zeros never kept
        indices[out] = indices[p];
        data[out] = data[p];
        kept += data[p];
        ++out;
      }
    const double scale = kept != 0.0 ? total / kept : 1.0;
    for (std::int64_t p = start; p < out; ++p) data[p] *= scale;
    indptr[i] = start;
  }
  indptr[nrows] = out;
  return out;
}

}  // namespace commsolve
