#include "commsolve/direct/supernodal_lu.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"

namespace commsolve {

// Recursive halves (Toledo's), so nearly all the work is in TRSM and GEMM; each pivot meets
// the rule when it is final, exactly as in a right-looking elimination.
void dense_lu(int n, double* A, int lda, std::int64_t column, PivotRule& rule) {
  if (n <= 16) {
    for (int k = 0; k < n; ++k) {
      double& piv = A[k * lda + k];
      rule.apply(piv, column + k);
      const double inv = 1.0 / piv;
      for (int i = k + 1; i < n; ++i) A[k * lda + i] *= inv;
      for (int j = k + 1; j < n; ++j) {
        const double ukj = A[j * lda + k];
        if (ukj == 0.0) continue;
        double* col = A + j * lda;
        const double* lk = A + k * lda;
        for (int i = k + 1; i < n; ++i) col[i] -= lk[i] * ukj;
      }
    }
    return;
  }
  const int n1 = n / 2, n2 = n - n1;
  double *A12 = A + n1 * lda, *A21 = A + n1, *A22 = A + n1 * lda + n1;
  dense_lu(n1, A, lda, column, rule);
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, n1, n2, 1.0, A, lda, A12, lda);
  cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, n2, n1, 1.0, A, lda, A21, lda);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n2, n2, n1, -1.0, A21, lda, A12, lda, 1.0, A22, lda);
  dense_lu(n2, A22, lda, column + n1, rule);
}

void PivotRule::apply(double& piv, std::int64_t column) {
  if (!std::isfinite(piv))
    throw std::runtime_error("non-finite pivot " + std::to_string(piv) + " at permuted column " +
                             std::to_string(column) + " (the factorization overflowed)");
  if (std::abs(piv) > zero_tol && !(replace && std::abs(piv) < tiny)) return;
  if (!replace) {
    char what[160];
    if (piv == 0.0)
      std::snprintf(what, sizeof what, "zero pivot at permuted column %lld", static_cast<long long>(column));
    else
      std::snprintf(what, sizeof what, "tiny pivot %.3g (at most %.3g = zero_pivot x ||A||_1) at permuted column %lld",
                    piv, zero_tol, static_cast<long long>(column));
    // Options named as the library spells them: the commands offer different subsets of them.
    throw std::runtime_error(std::string(what) +
                             " (static pivoting: the matrix is singular, or needs the large-diagonal row permutation "
                             "row_perm='mc64'; replace_tiny=True perturbs such pivots instead)");
  }
  piv = piv < 0 ? -tiny : tiny;
  ++replaced;
}

PivotRule PivotRule::scaled(double anorm, const LUOptions& opts) {
  return PivotRule{opts.zero_pivot * anorm, std::sqrt(std::numeric_limits<double>::epsilon()) * anorm,
                   opts.replace_tiny};
}

SupernodalLU::SupernodalLU(const SupernodalStructure& sym, const LUEntries& a, const LUOptions& opts)
    : sym_(sym), parent_(supernodal_etree(sym_)) {
  sym.require_whole("the serial factorization");
  const std::size_t ns = sym_.sn_start.size() - 1;
  // Storage: diagonal block w*w, L21 r*w, U12 w*r, all column-major, one supernode after the
  // other. The fronts are assembled in place there (zeros from the kernel); only each
  // front's Schur complement F22 (r x r) lives apart, on the update stack, until its parent
  // adds it in.
  std::int64_t total = 0;
  diag_off_.resize(ns);
  l_off_.resize(ns);
  u_off_.resize(ns);
  for (std::size_t s = 0; s < ns; ++s) {
    const std::int64_t w = width(s), r = below(s);
    diag_off_[s] = total;
    l_off_[s] = total + w * w;
    u_off_[s] = total + w * w + r * w;
    total += w * w + 2 * r * w;
  }
  const auto t_alloc = std::chrono::steady_clock::now();
  values_ = ZeroedArray<double>(static_cast<std::size_t>(total));
  values_.prefault();
  allocate_seconds_ = seconds_since(t_alloc);
  const auto t_start = std::chrono::steady_clock::now();
  // ||A||_1 (largest column sum: the transpose's rows), the norm SuperLU_DIST scales its
  // pivot thresholds by.
  double anorm = 0.0;
  for (std::int64_t j = 0; j < sym_.n; ++j) {
    double sum = 0.0;
    for (std::int32_t p = a.t_indptr[j]; p < a.t_indptr[j + 1]; ++p) sum += std::abs(a.t_data[p]);
    if (!std::isfinite(sum)) throw std::invalid_argument("supernodal LU: column " + std::to_string(j) +
                                                         " of the permuted matrix holds a non-finite entry");
    anorm = std::max(anorm, sum);
  }
  PivotRule rule = PivotRule::scaled(anorm, opts);
  const std::vector<std::int64_t> order = forest_postorder(parent_);
  const auto t_stack = std::chrono::steady_clock::now();
  ZeroedArray<double> stack(static_cast<std::size_t>(update_stack_size(order)));
  stack.prefault();
  const double stack_seconds = seconds_since(t_stack);
  allocate_seconds_ += stack_seconds;
  factor_supernodes(order, a, rule, stack);
  numeric_seconds_ = seconds_since(t_start) - stack_seconds;
}

std::int64_t SupernodalLU::update_stack_size(const std::vector<std::int64_t>& order) const {
  std::vector<std::int64_t> child_area(parent_.size(), 0);
  std::int64_t live = 0, peak = 0;
  for (std::int64_t s : order) {
    const std::int64_t r2 = below(s) * below(s);  // rows below: a parent exists
    peak = std::max(peak, live + r2);             // formed on top of the children's updates
    live += r2 - child_area[s];
    if (parent_[s] >= 0) child_area[parent_[s]] += r2;
  }
  return peak;
}

void SupernodalLU::factor_supernodes(const std::vector<std::int64_t>& order, const LUEntries& a, PivotRule& rule,
                                     ZeroedArray<double>& stack) {
  const std::size_t ns = parent_.size();
  // Each supernode's children, whose updates are on the stack, topmost when it comes
  // (`order` is a postorder).
  std::vector<std::vector<std::int64_t>> children(ns);
  std::vector<std::int64_t> child_area(ns, 0);
  for (std::int64_t s : order)
    if (parent_[s] >= 0) {
      children[parent_[s]].push_back(s);
      child_area[parent_[s]] += below(s) * below(s);
    }
  if (static_cast<std::int64_t>(stack.size()) < update_stack_size(order))
    throw std::logic_error("supernodal LU: update stack too small");
  std::vector<std::int64_t> update_off(ns, -1);  // where each update sits on the stack
  std::int64_t top = 0;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(sym_.n), -1), rel;
  std::vector<std::pair<std::int64_t, const double*>> updates;  // this front's children's
  for (std::int64_t s : order) {
    const std::int64_t f = sym_.sn_start[s], l = sym_.sn_start[s + 1], w = l - f, r = below(s);
    const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[s];
    double* D = values_.data() + diag_off_[s];
    double* L21 = values_.data() + l_off_[s];
    double* U12 = values_.data() + u_off_[s];
    for (std::int64_t j = f; j < l; ++j) pos[j] = j - f;
    for (std::int64_t k = 0; k < r; ++k) pos[rows[k]] = w + k;
    auto outside_structure = [&](std::int64_t i, std::int64_t j) {
      return std::logic_error("supernodal LU: entry (" + std::to_string(i) + ", " + std::to_string(j) +
                              ") outside the symbolic structure (is the pattern symmetric?)");
    };
    for (std::int64_t j = f; j < l; ++j) {
      for (std::int32_t p = a.indptr[j]; p < a.indptr[j + 1]; ++p) {  // row j: A(j, c), c >= f
        const std::int64_t c = a.indices[p];
        if (c < f) continue;
        if (pos[c] < 0) throw outside_structure(j, c);
        if (c < l)
          D[(c - f) * w + (j - f)] += a.data[p];
        else
          U12[(pos[c] - w) * w + (j - f)] += a.data[p];
      }
      for (std::int32_t p = a.t_indptr[j]; p < a.t_indptr[j + 1]; ++p) {  // column j: A(i, j), i past the block
        const std::int64_t i = a.t_indices[p];
        if (i < l) continue;
        if (pos[i] < 0) throw outside_structure(i, j);
        L21[(j - f) * r + pos[i] - w] += a.t_data[p];
      }
    }
    const std::int64_t base = top - child_area[s];
    updates.clear();
    for (std::int64_t c : children[s]) {
      if (update_off[c] < base) throw std::logic_error("supernodal LU: an update is not on top of the stack");
      updates.emplace_back(c, stack.data() + update_off[c]);
    }
    // Extend-add, part 1: the children's entries in the pivot rows and columns. A child's
    // rows are ascending, so their places in this front are too: the first k0 fall in the
    // pivot block, the rest below it.
    for (const auto& [c, U] : updates) {
      const std::int64_t rc = below(c);
      const std::int32_t* crow = sym_.rows.data() + sym_.rows_ptr[c];
      std::int64_t k0 = 0;
      while (k0 < rc && crow[k0] < l) ++k0;
      for (std::int64_t i = 0; i < rc; ++i)
        if (pos[crow[i]] < 0) throw std::logic_error("supernodal LU: a child's rows fall outside its parent's front");
      for (std::int64_t b = 0; b < rc; ++b) {
        const double* ucol = U + b * rc;
        if (b < k0) {
          double* dcol = D + (crow[b] - f) * w;
          for (std::int64_t i = 0; i < k0; ++i) dcol[crow[i] - f] += ucol[i];
          double* lcol = L21 + (crow[b] - f) * r;
          for (std::int64_t i = k0; i < rc; ++i) lcol[pos[crow[i]] - w] += ucol[i];
        } else {
          double* ucol12 = U12 + (pos[crow[b]] - w) * w;
          for (std::int64_t i = 0; i < k0; ++i) ucol12[crow[i] - f] += ucol[i];
        }
      }
    }
    dense_lu(static_cast<int>(w), D, static_cast<int>(w), f, rule);
    flops_ += 2.0 / 3.0 * w * w * w;
    if (r > 0) {
      const int wi = static_cast<int>(w), ri = static_cast<int>(r);
      cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, ri, wi, 1.0, D, wi, L21, ri);
      cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, wi, ri, 1.0, D, wi, U12, wi);
      double* F22 = stack.data() + top;  // above the children's updates, still needed below
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, ri, ri, wi, -1.0, L21, ri, U12, wi, 0.0, F22, ri);
      flops_ += 2.0 * r * w * w + 2.0 * r * r * w;
      // Extend-add, part 2: the children's entries below the pivot block, into F22.
      for (const auto& [c, U] : updates) {
        const std::int64_t rc = below(c);
        const std::int32_t* crow = sym_.rows.data() + sym_.rows_ptr[c];
        std::int64_t k0 = 0;
        while (k0 < rc && crow[k0] < l) ++k0;
        rel.resize(static_cast<std::size_t>(rc));
        for (std::int64_t i = k0; i < rc; ++i) rel[i] = pos[crow[i]] - w;
        for (std::int64_t b = k0; b < rc; ++b) {
          double* fcol = F22 + rel[b] * r;
          const double* ucol = U + b * rc;
          for (std::int64_t i = k0; i < rc; ++i) fcol[rel[i]] += ucol[i];
        }
      }
      // the children's updates are spent: it takes their place (rows below: a parent exists)
      std::memmove(stack.data() + base, F22, static_cast<std::size_t>(r * r) * sizeof(double));
      update_off[s] = base;
      top = base + r * r;
    } else {
      top = base;
    }
    for (std::int64_t j = f; j < l; ++j) pos[j] = -1;
    for (std::int64_t k = 0; k < r; ++k) pos[rows[k]] = -1;
  }
  replaced_ = rule.replaced;
}

std::int64_t SupernodalLU::nnz_LU() const {
  std::int64_t total = 0;
  for (std::size_t s = 0; s + 1 < sym_.sn_start.size(); ++s) total += width(s) * width(s) + 2 * below(s) * width(s);
  return total;
}

void SupernodalLU::solve(double* b, int nrhs) const {
  const std::int64_t n = sym_.n;
  const std::size_t ns = sym_.sn_start.size() - 1;
  std::vector<double> tmp;
  for (std::size_t s = 0; s < ns; ++s) {  // L y = b: diagonal block, then scatter L21 y_s below
    const std::int64_t f = sym_.sn_start[s], w = width(s), r = below(s);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(w), nrhs, 1.0,
                values_.data() + diag_off_[s], static_cast<int>(w), b + f, static_cast<int>(n));
    if (r == 0) continue;
    tmp.assign(static_cast<std::size_t>(r * nrhs), 0.0);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(r), nrhs, static_cast<int>(w), 1.0,
                values_.data() + l_off_[s], static_cast<int>(r), b + f, static_cast<int>(n), 0.0, tmp.data(),
                static_cast<int>(r));
    const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[s];
    for (int c = 0; c < nrhs; ++c)
      for (std::int64_t k = 0; k < r; ++k) b[c * n + rows[k]] -= tmp[c * r + k];
  }
  for (std::size_t s = ns; s-- > 0;) {  // U x = y: gather U12 x below, then the diagonal block
    const std::int64_t f = sym_.sn_start[s], w = width(s), r = below(s);
    if (r > 0) {
      const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[s];
      tmp.resize(static_cast<std::size_t>(r * nrhs));
      for (int c = 0; c < nrhs; ++c)
        for (std::int64_t k = 0; k < r; ++k) tmp[c * r + k] = b[c * n + rows[k]];
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(w), nrhs, static_cast<int>(r), -1.0,
                  values_.data() + u_off_[s], static_cast<int>(w), tmp.data(), static_cast<int>(r), 1.0, b + f,
                  static_cast<int>(n));
    }
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(w), nrhs, 1.0,
                values_.data() + diag_off_[s], static_cast<int>(w), b + f, static_cast<int>(n));
  }
}

}  // namespace commsolve
