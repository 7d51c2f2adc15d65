#include "direct/supernodal_lu.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "core/error.hpp"

namespace commsolve {

SupernodalLU::SupernodalLU(const SupernodalStructure& sym, const std::int32_t* indptr, const std::int32_t* indices,
                           const double* data, const std::int32_t* t_indptr, const std::int32_t* t_indices,
                           const double* t_data, const LUOptions& opts)
    : sym_(sym) {
  const std::int64_t n = sym_.n;
  const std::size_t ns = sym_.sn_start.size() - 1;
  // ||A||_1 (largest column sum: the transpose's rows), the norm SuperLU_DIST scales its
  // pivot thresholds by.
  double anorm = 0.0;
  for (std::int64_t j = 0; j < n; ++j) {
    double sum = 0.0;
    for (std::int32_t p = t_indptr[j]; p < t_indptr[j + 1]; ++p) sum += std::abs(t_data[p]);
    if (!std::isfinite(sum)) throw std::invalid_argument("supernodal LU: column " + std::to_string(j) +
                                                         " of the permuted matrix holds a non-finite entry");
    anorm = std::max(anorm, sum);
  }
  const double zero_tol = opts.zero_pivot * anorm;
  const double tiny = std::sqrt(std::numeric_limits<double>::epsilon()) * anorm;

  std::vector<std::int64_t> sn_of(n);
  for (std::size_t s = 0; s < ns; ++s)
    for (std::int64_t j = sym_.sn_start[s]; j < sym_.sn_start[s + 1]; ++j) sn_of[j] = static_cast<std::int64_t>(s);
  // Storage: diagonal block w*w, L21 r*w, U12 w*r, all column-major.
  std::int64_t total = 0;
  for (std::size_t s = 0; s < ns; ++s) {
    const std::int64_t w = width(s), r = below(s);
    diag_off_.push_back(total);
    l_off_.push_back(total + w * w);
    u_off_.push_back(total + w * w + r * w);
    total += w * w + 2 * r * w;
  }
  values_.assign(static_cast<std::size_t>(total), 0.0);

  std::vector<std::unique_ptr<std::vector<double>>> update(ns);  // children's updates to a parent
  std::vector<std::vector<std::size_t>> children(ns);
  for (std::size_t s = 0; s < ns; ++s) {
    if (below(s) == 0) continue;
    children[sn_of[sym_.rows[sym_.rows_ptr[s]]]].push_back(s);  // first row below is in the parent
  }
  std::vector<std::int64_t> pos(n, -1), rel;
  std::vector<double> F;
  for (std::size_t s = 0; s < ns; ++s) {
    const std::int64_t f = sym_.sn_start[s], l = sym_.sn_start[s + 1], w = l - f, r = below(s), m = w + r;
    const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[s];
    for (std::int64_t j = f; j < l; ++j) pos[j] = j - f;
    for (std::int64_t k = 0; k < r; ++k) pos[rows[k]] = w + k;
    F.assign(static_cast<std::size_t>(m * m), 0.0);
    auto at = [&](std::int64_t i, std::int64_t j) -> double& {
      if (pos[i] < 0 || pos[j] < 0)
        throw std::logic_error("supernodal LU: entry (" + std::to_string(i) + ", " + std::to_string(j) +
                               ") outside the symbolic structure (is the pattern symmetric?)");
      return F[static_cast<std::size_t>(pos[j] * m + pos[i])];
    };
    for (std::int64_t j = f; j < l; ++j) {
      for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p)  // row j: A(j, c), c >= f
        if (indices[p] >= f) at(j, indices[p]) += data[p];
      for (std::int32_t p = t_indptr[j]; p < t_indptr[j + 1]; ++p)  // column j: A(i, j), i past the block
        if (t_indices[p] >= l) at(t_indices[p], j) += t_data[p];
    }
    for (std::size_t c : children[s]) {  // extend-add through the child's relative indices
      const std::int64_t rc = below(c);
      const std::int32_t* crow = sym_.rows.data() + sym_.rows_ptr[c];
      rel.resize(static_cast<std::size_t>(rc));
      for (std::int64_t a = 0; a < rc; ++a) {
        rel[a] = pos[crow[a]];
        if (rel[a] < 0) throw std::logic_error("supernodal LU: a child's rows fall outside its parent's front");
      }
      const double* U = update[c]->data();
      for (std::int64_t b = 0; b < rc; ++b) {
        double* col = F.data() + rel[b] * m;
        const double* ucol = U + b * rc;
        for (std::int64_t a = 0; a < rc; ++a) col[rel[a]] += ucol[a];
      }
      update[c].reset();
    }
    // Diagonal block: unpivoted right-looking LU.
    for (std::int64_t k = 0; k < w; ++k) {
      double& piv = F[static_cast<std::size_t>(k * m + k)];
      if (!std::isfinite(piv))
        throw std::runtime_error("non-finite pivot " + std::to_string(piv) + " at permuted column " +
                                 std::to_string(f + k) + " (the factorization overflowed)");
      if (std::abs(piv) <= zero_tol || (opts.replace_tiny && std::abs(piv) < tiny)) {
        if (!opts.replace_tiny) {
          char what[160];
          if (piv == 0.0)
            std::snprintf(what, sizeof what, "zero pivot at permuted column %lld", static_cast<long long>(f + k));
          else
            std::snprintf(what, sizeof what, "tiny pivot %.3g (at most %.3g = zero_pivot x ||A||_1) at permuted column %lld",
                          piv, zero_tol, static_cast<long long>(f + k));
          throw std::runtime_error(std::string(what) +
                                   " (static pivoting: replace_tiny=True, --replace-tiny on the command line, "
                                   "perturbs it)");
        }
        piv = piv < 0 ? -tiny : tiny;
        ++replaced_;
      }
      const double inv = 1.0 / piv;
      for (std::int64_t i = k + 1; i < w; ++i) F[static_cast<std::size_t>(k * m + i)] *= inv;
      for (std::int64_t j = k + 1; j < w; ++j) {
        const double ukj = F[static_cast<std::size_t>(j * m + k)];
        if (ukj == 0.0) continue;
        for (std::int64_t i = k + 1; i < w; ++i)
          F[static_cast<std::size_t>(j * m + i)] -= F[static_cast<std::size_t>(k * m + i)] * ukj;
      }
    }
    flops_ += 2.0 / 3.0 * w * w * w;
    if (r > 0) {
      double* F11 = F.data();
      double* F21 = F.data() + w;
      double* F12 = F.data() + w * m;
      double* F22 = F.data() + w * m + w;
      cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(r),
                  static_cast<int>(w), 1.0, F11, static_cast<int>(m), F21, static_cast<int>(m));
      cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(w),
                  static_cast<int>(r), 1.0, F11, static_cast<int>(m), F12, static_cast<int>(m));
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(r), static_cast<int>(r),
                  static_cast<int>(w), -1.0, F21, static_cast<int>(m), F12, static_cast<int>(m), 1.0, F22,
                  static_cast<int>(m));
      flops_ += 2.0 * r * w * w + 2.0 * r * r * w;
      auto upd = std::make_unique<std::vector<double>>(static_cast<std::size_t>(r * r));
      for (std::int64_t b = 0; b < r; ++b)
        std::copy(F22 + b * m, F22 + b * m + r, upd->begin() + b * r);
      update[s] = std::move(upd);
    }
    double* D = values_.data() + diag_off_[s];
    double* L21 = values_.data() + l_off_[s];
    double* U12 = values_.data() + u_off_[s];
    for (std::int64_t j = 0; j < w; ++j) {
      std::copy(F.begin() + j * m, F.begin() + j * m + w, D + j * w);
      std::copy(F.begin() + j * m + w, F.begin() + j * m + m, L21 + j * r);
    }
    for (std::int64_t j = 0; j < r; ++j) std::copy(F.begin() + (w + j) * m, F.begin() + (w + j) * m + w, U12 + j * w);
    for (std::int64_t j = f; j < l; ++j) pos[j] = -1;
    for (std::int64_t k = 0; k < r; ++k) pos[rows[k]] = -1;
  }
  invert_diagonal_blocks();
}

void SupernodalLU::invert_diagonal_blocks() {
  const std::size_t ns = sym_.sn_start.size() - 1;
  std::int64_t total = 0;
  for (std::size_t s = 0; s < ns; ++s) {
    inv_off_.push_back(total);
    total += 2 * width(s) * width(s);
  }
  inverses_.assign(static_cast<std::size_t>(total), 0.0);
  for (std::size_t s = 0; s < ns; ++s) {
    const int w = static_cast<int>(width(s));
    double* il = inverses_.data() + inv_off_[s];
    double* iu = il + static_cast<std::int64_t>(w) * w;
    for (int j = 0; j < w; ++j) il[j * w + j] = iu[j * w + j] = 1.0;
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, w, w, 1.0, diag(s), w, il, w);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, w, w, 1.0, diag(s), w, iu, w);
  }
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
