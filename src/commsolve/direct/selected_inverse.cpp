#include "commsolve/direct/selected_inverse.hpp"

#include <cblas.h>

#include <algorithm>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/block_store.hpp"

namespace commsolve {

namespace {

// Z's blocks per supernode, as the factors lie: diagonal (w x w), below (r x w: Z(C,K)) and
// right (w x r: Z(K,C)), column-major.
struct Blocks {
  std::vector<std::int64_t> diag, low, right;
  std::vector<double> z;
};

Blocks layout(const SupernodalStructure& s) {
  Blocks b;
  const std::int64_t ns = s.nsuper();
  std::int64_t at = 0;
  for (std::int64_t k = 0; k < ns; ++k) {
    const std::int64_t w = s.sn_start[k + 1] - s.sn_start[k], r = s.rows_ptr[k + 1] - s.rows_ptr[k];
    b.diag.push_back(at);
    b.low.push_back(at += w * w);
    b.right.push_back(at += r * w);
    at += w * r;
  }
  b.z.assign(static_cast<std::size_t>(at), 0.0);
  return b;
}

}  // namespace

SelectedEntries selected_inverse(const SupernodalLU& lu) {
  const SupernodalStructure& s = lu.structure();
  const std::int64_t ns = s.nsuper(), n = s.n;
  Blocks z = layout(s);
  std::vector<std::int32_t> sup(static_cast<std::size_t>(n));  // column -> supernode
  for (std::int64_t k = 0; k < ns; ++k)
    for (std::int64_t c = s.sn_start[k]; c < s.sn_start[k + 1]; ++c) sup[c] = static_cast<std::int32_t>(k);
  std::vector<std::int64_t> idx;  // positions in one supernode's rows
  std::vector<double> lhat, uhat, G, inv11;

  for (std::int64_t K = ns; K-- > 0;) {
    const std::int64_t f = s.sn_start[K], w = s.sn_start[K + 1] - f, r = s.rows_ptr[K + 1] - s.rows_ptr[K];
    const std::int32_t* C = s.rows.data() + s.rows_ptr[K];
    const int iw = static_cast<int>(w), ir = static_cast<int>(r);
    double* zd = z.z.data() + z.diag[K];
    double* zl = z.z.data() + z.low[K];
    double* zr = z.z.data() + z.right[K];
    // (L11 U11)^-1 = U11^-1 L11^-1, from the triangles' inverses
    if (w > 0) {
      inv11.resize(static_cast<std::size_t>(2 * w * w));
      invert_diagonal_block(w, lu.diag(K), inv11.data());  // L11^-1, then U11^-1
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, iw, iw, iw, 1.0, inv11.data() + w * w, iw, inv11.data(),
                  iw, 0.0, zd, iw);
    }
    if (r == 0) continue;
    // L^ = L21 L11^-1 (r x w), U^ = U11^-1 U12 (w x r)
    lhat.assign(lu.l21(K), lu.l21(K) + r * w);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasUnit, ir, iw, 1.0, lu.diag(K), iw,
                lhat.data(), ir);
    uhat.assign(lu.u12(K), lu.u12(K) + w * r);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, iw, ir, 1.0, lu.diag(K), iw,
                uhat.data(), iw);
    // G = Z(C,C), r x r, from the ancestors' blocks. C's entries come in groups, one per
    // supernode J whose columns they are: the group's columns of G (its rows in J and below)
    // lie in J's diagonal and lower blocks, its rows right of it in J's right block, at the
    // positions in J's rows of the entries of C beyond J (which J's rows hold: the structure
    // is closed), found once per group by a merge of the two ascending lists.
    G.assign(static_cast<std::size_t>(r * r), 0.0);
    for (std::int64_t a = 0; a < r;) {
      const std::int64_t J = sup[C[a]], fJ = s.sn_start[J], wJ = s.sn_start[J + 1] - fJ;
      const std::int64_t rJ = s.rows_ptr[J + 1] - s.rows_ptr[J];
      const std::int32_t* RJ = s.rows.data() + s.rows_ptr[J];
      std::int64_t end = a;
      while (end < r && sup[C[end]] == J) ++end;
      idx.resize(static_cast<std::size_t>(r - end));
      for (std::int64_t t = end, p = 0; t < r; ++t) {
        while (p < rJ && RJ[p] < C[t]) ++p;
        require(p < rJ && RJ[p] == C[t],
                [&] {
                  return "selected inversion: the structure is not closed (row " + std::to_string(C[t]) +
                         " missing below supernode " + std::to_string(J) + ")";
                });
        idx[t - end] = p;
      }
      const double* zdJ = z.z.data() + z.diag[J];
      const double* zlJ = z.z.data() + z.low[J];
      const double* zrJ = z.z.data() + z.right[J];
      for (std::int64_t j = a; j < end; ++j) {
        const std::int64_t cj = C[j] - fJ;
        double* g = G.data() + r * j;
        for (std::int64_t i = a; i < end; ++i) g[i] = zdJ[(C[i] - fJ) + wJ * cj];
        const double* col = zlJ + rJ * cj;
        for (std::int64_t t = end; t < r; ++t) g[t] = col[idx[t - end]];
      }
      for (std::int64_t t = end; t < r; ++t) {
        const double* col = zrJ + wJ * idx[t - end];
        double* g = G.data() + r * t;
        for (std::int64_t i = a; i < end; ++i) g[i] = col[C[i] - fJ];
      }
      a = end;
    }
    // Z(C,K) = -G L^, Z(K,C) = -U^ G, Z(K,K) -= U^ Z(C,K)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, ir, iw, ir, -1.0, G.data(), ir, lhat.data(), ir, 0.0, zl,
                ir);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, iw, ir, ir, -1.0, uhat.data(), iw, G.data(), ir, 0.0, zr,
                iw);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, iw, iw, ir, -1.0, uhat.data(), iw, zl, ir, 1.0, zd, iw);
  }

  SelectedEntries out;
  out.row.reserve(z.z.size());
  out.col.reserve(z.z.size());
  out.value.reserve(z.z.size());
  auto put = [&](std::int64_t i, std::int64_t j, double v) {
    out.row.push_back(static_cast<std::int32_t>(i));
    out.col.push_back(static_cast<std::int32_t>(j));
    out.value.push_back(v);
  };
  for (std::int64_t K = 0; K < ns; ++K) {
    const std::int64_t f = s.sn_start[K], w = s.sn_start[K + 1] - f, r = s.rows_ptr[K + 1] - s.rows_ptr[K];
    const std::int32_t* C = s.rows.data() + s.rows_ptr[K];
    for (std::int64_t j = 0; j < w; ++j)
      for (std::int64_t i = 0; i < w; ++i) put(f + i, f + j, z.z[z.diag[K] + i + w * j]);
    for (std::int64_t j = 0; j < w; ++j)
      for (std::int64_t i = 0; i < r; ++i) put(C[i], f + j, z.z[z.low[K] + i + r * j]);
    for (std::int64_t j = 0; j < r; ++j)
      for (std::int64_t i = 0; i < w; ++i) put(f + i, C[j], z.z[z.right[K] + i + w * j]);
  }
  return out;
}

void map_entries(SelectedEntries& z, const std::int64_t* row_of, const std::int64_t* col_of, const double* row_scale,
                 const double* col_scale) {
  for (std::size_t k = 0; k < z.value.size(); ++k) {
    const std::int64_t i = row_of[z.row[k]], j = col_of[z.col[k]];
    z.row[k] = static_cast<std::int32_t>(i);
    z.col[k] = static_cast<std::int32_t>(j);
    z.value[k] *= row_scale[i] * col_scale[j];
  }
}

SelectedCsr triples_csr(std::int64_t n, const std::int32_t* row, const std::int32_t* col, const double* value,
                        std::int64_t nnz) {
  // by column (stable), then by row (stable): each row's entries come out by ascending column
  std::vector<std::int64_t> count(static_cast<std::size_t>(n + 1), 0);
  for (std::int64_t k = 0; k < nnz; ++k) {
    require(row[k] >= 0 && row[k] < n && col[k] >= 0 && col[k] < n, "triples_csr: an entry outside the matrix");
    ++count[col[k] + 1];
  }
  for (std::int64_t i = 0; i < n; ++i) count[i + 1] += count[i];
  std::vector<std::int64_t> by_col(static_cast<std::size_t>(nnz));
  for (std::int64_t k = 0; k < nnz; ++k) by_col[count[col[k]]++] = k;
  SelectedCsr out;
  out.indptr.assign(static_cast<std::size_t>(n + 1), 0);
  for (std::int64_t k = 0; k < nnz; ++k) ++out.indptr[row[k] + 1];
  for (std::int64_t i = 0; i < n; ++i) out.indptr[i + 1] += out.indptr[i];
  std::vector<std::int64_t> fill(out.indptr.begin(), out.indptr.end() - 1);
  out.indices.resize(static_cast<std::size_t>(nnz));
  out.data.resize(static_cast<std::size_t>(nnz));
  for (std::int64_t k : by_col) {
    const std::int64_t at = fill[row[k]]++;
    out.indices[at] = col[k];
    out.data[at] = value[k];
  }
  return out;
}

SelectedCsr selected_csr(std::int64_t n, SelectedEntries z, const std::int64_t* row_of, const std::int64_t* col_of,
                         const double* row_scale, const double* col_scale) {
  map_entries(z, row_of, col_of, row_scale, col_scale);
  return triples_csr(n, z.row.data(), z.col.data(), z.value.data(), static_cast<std::int64_t>(z.value.size()));
}

}  // namespace commsolve
