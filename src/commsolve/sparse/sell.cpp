#include "commsolve/sparse/sell.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace commsolve {

double LocalSell::spmv_bytes() const {
  const double chunks = static_cast<double>(chunk_len.size());
  return 12.0 * static_cast<double>(stored()) + 4.0 * static_cast<double>(nrows) + 12.0 * chunks +
         8.0 * static_cast<double>(ncols) + 8.0 * static_cast<double>(nrows);
}

LocalSell sell_from_csr(CsrView A, std::int64_t ncols, int C, std::int64_t sigma) {
  if (C < 1 || sigma < 1 || A.nrows < 0 || ncols < 0)
    throw std::invalid_argument("SELL-C-sigma: C and sigma must be >= 1 and the sizes >= 0, got C = " +
                                std::to_string(C) + ", sigma = " + std::to_string(sigma));
  for (std::int64_t r = 0; r < A.nrows; ++r) {
    if (A.indptr[r + 1] < A.indptr[r])
      throw std::invalid_argument("SELL-C-sigma: indptr decreases at row " + std::to_string(r));
    for (std::int32_t k = A.indptr[r]; k < A.indptr[r + 1]; ++k)
      if (A.indices[k] < 0 || A.indices[k] >= ncols)
        throw std::invalid_argument("SELL-C-sigma: row " + std::to_string(r) + " has column " +
                                    std::to_string(A.indices[k]) + ", outside [0, " + std::to_string(ncols) + ")");
  }
  LocalSell S;
  S.nrows = A.nrows;
  S.ncols = ncols;
  S.nnz = A.nrows > 0 ? A.indptr[A.nrows] - A.indptr[0] : 0;
  S.C = C;
  S.sigma = sigma;
  const auto len = [&](std::int32_t r) { return A.indptr[r + 1] - A.indptr[r]; };
  S.perm.resize(static_cast<std::size_t>(A.nrows));
  std::iota(S.perm.begin(), S.perm.end(), 0);
  if (sigma > 1)
    for (std::int64_t w = 0; w < A.nrows; w += sigma)  // longest first inside each window, stable
      std::stable_sort(S.perm.begin() + w, S.perm.begin() + std::min(A.nrows, w + sigma),
                       [&](std::int32_t a, std::int32_t b) { return len(a) > len(b); });
  const std::int64_t nchunks = (A.nrows + C - 1) / C;
  S.chunk_len.resize(static_cast<std::size_t>(nchunks));
  for (std::int64_t c = 0; c < nchunks; ++c) {
    std::int32_t longest = 0;
    for (std::int64_t p = c * C; p < std::min(A.nrows, (c + 1) * C); ++p)
      longest = std::max(longest, len(S.perm[static_cast<std::size_t>(p)]));
    S.chunk_len[static_cast<std::size_t>(c)] = longest;
    S.chunk_ptr.push_back(S.chunk_ptr.back() + static_cast<std::int64_t>(longest) * C);
  }
  S.indices.assign(static_cast<std::size_t>(S.chunk_ptr.back()), 0);
  S.data.assign(static_cast<std::size_t>(S.chunk_ptr.back()), 0.0);
  for (std::int64_t c = 0; c < nchunks; ++c)
    for (std::int64_t p = c * C; p < std::min(A.nrows, (c + 1) * C); ++p) {
      const std::int32_t r = S.perm[static_cast<std::size_t>(p)];
      const std::int64_t lane = p - c * C, base = S.chunk_ptr[static_cast<std::size_t>(c)];
      std::int32_t j = 0, last = 0;
      for (std::int32_t k = A.indptr[r]; k < A.indptr[r + 1]; ++k, ++j) {
        const std::size_t at = static_cast<std::size_t>(base + static_cast<std::int64_t>(j) * C + lane);
        S.indices[at] = last = A.indices[k];
        S.data[at] = A.data[k];
      }
      for (; j < S.chunk_len[static_cast<std::size_t>(c)]; ++j)  // padding reads a column the row reads anyway
        S.indices[static_cast<std::size_t>(base + static_cast<std::int64_t>(j) * C + lane)] = last;
    }
  return S;
}

namespace {

// One chunk of width W (compile-time: the lanes' loop vectorizes), `rows` of its lanes real.
template <int W>
void chunks(const LocalSell& A, const double* __restrict x, double* __restrict y) {
  const std::int64_t nchunks = static_cast<std::int64_t>(A.chunk_len.size());
  const std::int32_t* __restrict col = A.indices.data();
  const double* __restrict val = A.data.data();
  for (std::int64_t c = 0; c < nchunks; ++c) {
    double acc[W] = {};
    const std::int64_t base = A.chunk_ptr[static_cast<std::size_t>(c)];
    const std::int32_t len = A.chunk_len[static_cast<std::size_t>(c)];
    for (std::int32_t j = 0; j < len; ++j) {
      const std::int64_t at = base + static_cast<std::int64_t>(j) * W;
      for (int l = 0; l < W; ++l) acc[l] += val[at + l] * x[col[at + l]];
    }
    const std::int64_t p0 = c * W, rows = std::min<std::int64_t>(W, A.nrows - p0);
    if (A.sigma == 1)  // the rows' own order: contiguous stores
      for (std::int64_t l = 0; l < rows; ++l) y[p0 + l] = acc[l];
    else
      for (std::int64_t l = 0; l < rows; ++l) y[A.perm[static_cast<std::size_t>(p0 + l)]] = acc[l];
  }
}

// Any C (ELL: C = nrows): the chunk's accumulators in a buffer.
void chunks_any(const LocalSell& A, const double* __restrict x, double* __restrict y) {
  const std::int64_t C = A.C, nchunks = static_cast<std::int64_t>(A.chunk_len.size());
  std::vector<double> acc(static_cast<std::size_t>(C));
  for (std::int64_t c = 0; c < nchunks; ++c) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const std::int64_t base = A.chunk_ptr[static_cast<std::size_t>(c)], p0 = c * C;
    const std::int64_t rows = std::min<std::int64_t>(C, A.nrows - p0);
    for (std::int32_t j = 0; j < A.chunk_len[static_cast<std::size_t>(c)]; ++j) {
      const std::int64_t at = base + static_cast<std::int64_t>(j) * C;
      for (std::int64_t l = 0; l < rows; ++l)
        acc[static_cast<std::size_t>(l)] += A.data[static_cast<std::size_t>(at + l)] * x[A.indices[static_cast<std::size_t>(at + l)]];
    }
    for (std::int64_t l = 0; l < rows; ++l) y[A.perm[static_cast<std::size_t>(p0 + l)]] = acc[static_cast<std::size_t>(l)];
  }
}

}  // namespace

namespace {

// Row i of a chunk of width W at `base` (its lane's first entry), `len` entries a lane.
template <int W>
inline double lane_sum(const std::int32_t* __restrict col, const double* __restrict val, const double* x,
                       std::int64_t base, std::int32_t len, std::int64_t width) {
  const std::int64_t C = W > 0 ? W : width;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::int32_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const std::int64_t a = base + j * C;
    s0 += val[a] * x[col[a]];
    s1 += val[a + C] * x[col[a + C]];
    s2 += val[a + 2 * C] * x[col[a + 2 * C]];
    s3 += val[a + 3 * C] * x[col[a + 3 * C]];
  }
  for (; j < len; ++j) s0 += val[base + j * C] * x[col[base + j * C]];
  return (s0 + s1) + (s2 + s3);
}

template <int W>
void sweep(const LocalSell& A, const double* inv, const double* b, double* x, bool forward) {
  const std::int64_t n = A.nrows, C = W > 0 ? W : A.C;
  for (std::int64_t q = 0; q < n; ++q) {
    const std::int64_t p = forward ? q : n - 1 - q, c = p / C;
    const std::int64_t i = A.perm[static_cast<std::size_t>(p)];
    const double s = lane_sum<W>(A.indices.data(), A.data.data(), x, A.chunk_ptr[static_cast<std::size_t>(c)] + (p - c * C),
                                 A.chunk_len[static_cast<std::size_t>(c)], C);
    x[i] += (b[i] - s) * inv[i];
  }
}

}  // namespace

void gauss_seidel_sweep(const LocalSell& A, const double* inv, const double* b, double* x,
                        bool forward) {
  switch (A.C) {
    case 4: return sweep<4>(A, inv, b, x, forward);
    case 8: return sweep<8>(A, inv, b, x, forward);
    case 16: return sweep<16>(A, inv, b, x, forward);
    default: return sweep<0>(A, inv, b, x, forward);
  }
}

void spmv(const LocalSell& A, const double* x, double* y) {
  switch (A.C) {
    case 4: return chunks<4>(A, x, y);
    case 8: return chunks<8>(A, x, y);
    case 16: return chunks<16>(A, x, y);
    case 32: return chunks<32>(A, x, y);
    default: return chunks_any(A, x, y);
  }
}

}  // namespace commsolve
