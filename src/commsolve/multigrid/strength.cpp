#include "commsolve/multigrid/strength.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "commsolve/comm/record_executor.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

std::vector<std::uint8_t> classical_strength(const LocalRowsView& L, double theta) {
  std::vector<std::uint8_t> strong(L.indptr[L.nrows], 0);
  for (std::int64_t i = 0; i < L.nrows; ++i) {
    const std::int32_t* col = L.indices + L.indptr[i];
    const double* val = L.data + L.indptr[i];
    std::uint8_t* out = strong.data() + L.indptr[i];
    strong_in_row(
        L.indptr[i + 1] - L.indptr[i], [&](std::int64_t p) { return col[p] == i; }, [&](std::int64_t p) { return val[p]; },
        theta, [&](std::int64_t p) { out[p] = 1; });
  }
  return strong;
}

StrengthGraphs strength_graphs(const ParCsr& A, const LocalRowsView& L, const std::uint8_t* strong,
                               const std::string& strategy, MPI_Comm comm) {
  const std::int64_t n = L.nrows, n_owned = A.local_cols();
  require(n == A.local_rows() && n == n_owned, "strength graphs: A must be square with rows and columns distributed "
                                               "alike (rank " + std::to_string(A.rank()) + ")");
  // Everything stays over A's column space [owned | halo] (local indices): S is L's strong
  // entries, its halo the part of A's that they use.
  LocalCsr s;
  s.nrows = n;
  s.indptr.resize(n + 1);
  s.indices.reserve(L.indptr[n]);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
      if (strong[p]) s.indices.push_back(L.indices[p]);
    s.indptr[i + 1] = static_cast<std::int32_t>(s.indices.size());
  }
  s.data.assign(s.indices.size(), 1.0);
  return strength_graphs(
      std::make_unique<ParCsr>(std::move(s), A.col_map(), A.row_dist(), A.col_dist(), A.topology(), comm, strategy),
      strategy, comm);
}

StrengthGraphs strength_graphs(std::unique_ptr<ParCsr> strength, const std::string& strategy, MPI_Comm comm) {
  StrengthGraphs out;
  out.S = std::move(strength);
  const ParCsr& S = *out.S;
  const std::int64_t n = S.local_rows(), n_owned = S.local_cols();
  require(n == n_owned, "strength graphs: S must be square with rows and columns distributed alike (rank " +
                            std::to_string(S.rank()) + ")");
  // S^T's rows (who depends on each owned point): the owned columns' entries transposed in
  // place, the halo columns' sent to their owners (the global row) along S's plan in reverse.
  const LocalCsr& sd = S.diag();
  std::vector<std::int32_t> tptr(n + 1, 0), trow(sd.indices.size());
  for (const std::int32_t c : sd.indices) ++tptr[c + 1];
  for (std::int64_t j = 0; j < n; ++j) tptr[j + 1] += tptr[j];
  {
    std::vector<std::int32_t> fill(tptr.begin(), tptr.end() - 1);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int32_t k = sd.indptr[i]; k < sd.indptr[i + 1]; ++k)
        trow[fill[sd.indices[k]]++] = static_cast<std::int32_t>(i);
  }
  const std::int64_t nh = static_cast<std::int64_t>(S.col_map().size());
  RecordSet halo;  // per halo column of S: the global rows of the rank's entries in it
  halo.ptr.assign(nh + 1, 0);
  for (const LocalCsr* o : {&S.offd_on_node(), &S.offd_off_node()})
    for (std::int32_t k = 0; k < o->indptr[n]; ++k) ++halo.ptr[o->indices[k] + 1];
  for (std::int64_t h = 0; h < nh; ++h) halo.ptr[h + 1] += halo.ptr[h];
  halo.data.resize(halo.ptr[nh] * sizeof(std::int64_t));
  {
    auto* rec = reinterpret_cast<std::int64_t*>(halo.data.data());
    std::vector<std::int64_t> fill(halo.ptr.begin(), halo.ptr.end() - 1);
    for (std::int64_t i = 0; i < n; ++i)
      for (const LocalCsr* o : {&S.offd_on_node(), &S.offd_off_node()})
        for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k)
          rec[fill[o->indices[k]]++] = S.row_dist().global_index(S.rank(), i);
  }
  RecordExecutor exec(S.plan(), S.topology(), comm, sizeof(std::int64_t));
  const RecordSet arrived = exec.reverse(view(halo));
  const auto* from = reinterpret_cast<const std::int64_t*>(arrived.data.data());

  // G's column space: S's, then the rows that arrived from outside S's halo (a nonsymmetric
  // pattern's), each once.
  std::vector<std::int64_t> g_halo = S.col_map();
  std::vector<std::pair<std::int64_t, std::int32_t>> known;  // (global, space index), sorted
  known.reserve(g_halo.size());
  for (std::size_t h = 0; h < g_halo.size(); ++h)
    known.emplace_back(g_halo[h], static_cast<std::int32_t>(n_owned + static_cast<std::int64_t>(h)));
  std::sort(known.begin(), known.end());
  std::vector<std::int32_t> arrived_col(arrived.ptr.back());
  std::vector<std::pair<std::int64_t, std::int64_t>> outside;  // (global, arrival) of rows outside S's halo
  for (std::int64_t q = 0; q < arrived.ptr.back(); ++q) {
    const auto at = std::lower_bound(known.begin(), known.end(), std::make_pair(from[q], std::int32_t(-1)));
    if (at != known.end() && at->first == from[q]) arrived_col[q] = at->second;
    else outside.emplace_back(from[q], q);
  }
  std::sort(outside.begin(), outside.end());  // each new global once, a column after S's halo
  for (std::size_t k = 0; k < outside.size(); ++k) {
    if (k == 0 || outside[k].first != outside[k - 1].first) g_halo.push_back(outside[k].first);
    arrived_col[outside[k].second] = static_cast<std::int32_t>(n_owned + static_cast<std::int64_t>(g_halo.size()) - 1);
  }

  // Row i of S + S^T: S's sorted owned row and the sorted local S^T row merged, then the halo
  // columns (S's own and the arrived entries), sorted; each column once.
  LocalCsr g;
  g.nrows = n;
  g.indptr.resize(n + 1);
  g.indices.resize(static_cast<std::size_t>(S.local_nnz()) + trow.size() + arrived_col.size());
  out.depends_on_me.resize(n);
  std::int32_t at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    out.depends_on_me[i] = static_cast<double>(tptr[i + 1] - tptr[i] + arrived.ptr[i + 1] - arrived.ptr[i]);
    std::int32_t a = sd.indptr[i], b = tptr[i];
    const std::int32_t ae = sd.indptr[i + 1], be = tptr[i + 1];
    while (a < ae || b < be) {
      const std::int32_t c = b == be || (a < ae && sd.indices[a] <= trow[b]) ? sd.indices[a] : trow[b];
      while (a < ae && sd.indices[a] == c) ++a;
      while (b < be && trow[b] == c) ++b;
      g.indices[at++] = c;
    }
    const std::int32_t halo_first = at;
    for (const LocalCsr* o : {&S.offd_on_node(), &S.offd_off_node()})
      for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k)
        g.indices[at++] = static_cast<std::int32_t>(n_owned + o->indices[k]);
    for (std::int64_t q = arrived.ptr[i]; q < arrived.ptr[i + 1]; ++q) g.indices[at++] = arrived_col[q];
    if (at - halo_first > 1) {
      std::sort(g.indices.begin() + halo_first, g.indices.begin() + at);
      at = static_cast<std::int32_t>(std::unique(g.indices.begin() + halo_first, g.indices.begin() + at) -
                                     g.indices.begin());
    }
    g.indptr[i + 1] = at;
  }
  g.indices.resize(at);
  g.data.assign(at, 1.0);
  out.G = std::make_unique<ParCsr>(std::move(g), g_halo, S.row_dist(), S.col_dist(), S.topology(), comm, strategy);
  return out;
}

}  // namespace commsolve
