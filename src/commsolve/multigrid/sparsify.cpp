#include "commsolve/multigrid/sparsify.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "commsolve/core/error.hpp"
#include "commsolve/parcsr/spgemm.hpp"

namespace commsolve {

namespace {

// Each column-space point's strong neighbours as (global column, |a|), CSR over the space.
struct Neighbours {
  std::vector<std::int64_t> ptr{0}, col;
  std::vector<double> mag;
  template <class IsDiag, class Col, class Value>
  void add_row(std::int64_t n, const IsDiag& is_diag, const Col& column, const Value& value, double theta) {
    strong_in_row(n, is_diag, value, theta, [&](std::int64_t p) {
      col.push_back(column(p));
      mag.push_back(std::abs(value(p)));
    });
    ptr.push_back(static_cast<std::int64_t>(col.size()));
  }
};

}  // namespace

Lumped lump_to_strong_neighbours(const ParCsr& A, const LocalRowsView& L, const std::uint8_t* keep, double theta,
                                 MPI_Comm comm) {
  const std::int64_t n = L.nrows, n_owned = A.local_cols();
  require(n == A.local_rows() && n == n_owned, "sparsify: A must be square with rows and columns distributed alike "
                                               "(rank " + std::to_string(A.rank()) + ")");
  const std::vector<std::int64_t> global = A.space_globals();
  Lumped out;
  const ProductResult halo = halo_rows(A, A, "standard", comm, &A.plan());
  out.recorded = halo.recorded;

  Neighbours nb;
  for (std::int64_t c = 0; c < n; ++c) {
    const std::int32_t* col = L.indices + L.indptr[c];
    const double* val = L.data + L.indptr[c];
    nb.add_row(
        L.indptr[c + 1] - L.indptr[c], [&](std::int64_t p) { return col[p] == c; },
        [&](std::int64_t p) { return global[col[p]]; }, [&](std::int64_t p) { return val[p]; }, theta);
  }
  const GlobalRows& h = halo.rows;
  for (std::int64_t r = 0; r < h.nrows; ++r) {
    const std::int64_t self = global[n_owned + r];
    const std::int64_t* col = h.indices.data() + h.indptr[r];
    const double* val = h.data.data() + h.indptr[r];
    nb.add_row(
        h.indptr[r + 1] - h.indptr[r], [&](std::int64_t p) { return col[p] == self; },
        [&](std::int64_t p) { return col[p]; }, [&](std::int64_t p) { return val[p]; }, theta);
  }

  out.must_keep.assign(L.indptr[n], 0);
  GlobalRows& rows = out.rows;
  rows.nrows = n;
  rows.indptr.assign(n + 1, 0);
  std::vector<std::int64_t> kept;
  std::vector<std::pair<std::int64_t, double>> add;
  for (std::int64_t i = 0; i < n; ++i) {
    kept.clear();
    add.clear();
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
      if (keep[p] && L.indices[p] != i) kept.push_back(global[L.indices[p]]);  // N_i: off-diagonal
    std::sort(kept.begin(), kept.end());
    auto in_row = [&](std::int64_t g) { return std::binary_search(kept.begin(), kept.end(), g); };
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p) {
      if (keep[p]) continue;
      const double a = L.data[p];
      const std::int32_t j = L.indices[p];
      double total = 0.0;
      for (std::int64_t q = nb.ptr[j]; q < nb.ptr[j + 1]; ++q)
        if (in_row(nb.col[q])) total += nb.mag[q];
      if (!(total > 0)) {  // no strong neighbour to take it: the entry must stay
        out.must_keep[p] = 1;
        continue;
      }
      for (std::int64_t q = nb.ptr[j]; q < nb.ptr[j + 1]; ++q)
        if (in_row(nb.col[q])) add.emplace_back(nb.col[q], a * nb.mag[q] / total);
    }
    std::sort(add.begin(), add.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::size_t k = 0; k < add.size(); ++k) {
      if (k > 0 && add[k].first == add[k - 1].first) {
        rows.data.back() += add[k].second;
        continue;
      }
      rows.indices.push_back(add[k].first);
      rows.data.push_back(add[k].second);
    }
    rows.indptr[i + 1] = static_cast<std::int64_t>(rows.indices.size());
  }
  return out;
}

}  // namespace commsolve
