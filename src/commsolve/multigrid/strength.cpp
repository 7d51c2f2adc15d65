#include "multigrid/strength.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "parcsr/spgemm.hpp"

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
  const std::vector<std::int64_t> global = A.space_globals();

  GlobalRows s;
  s.nrows = n;
  s.indptr.resize(n + 1);
  s.indices.reserve(L.indptr[n]);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
      if (strong[p]) s.indices.push_back(global[L.indices[p]]);
    if (!std::is_sorted(s.indices.begin() + s.indptr[i], s.indices.end()))  // it is unless a halo column
      std::sort(s.indices.begin() + s.indptr[i], s.indices.end());       // lies below an owned one
    s.indptr[i + 1] = static_cast<std::int64_t>(s.indices.size());
  }
  auto pattern = [&](const GlobalRows& r) {  // a ParCsr of ones (collective)
    const std::vector<double> ones(std::max<std::size_t>(r.indices.size(), 1), 1.0);
    return std::make_unique<ParCsr>(GlobalRowsView<std::int64_t>{r.nrows, r.indptr.data(), r.indices.data()},
                                    ones.data(), A.row_dist(), A.col_dist(), A.topology(), comm, strategy);
  };
  StrengthGraphs out;
  out.S = pattern(s);
  // S^T's rows (who depends on each point), along S's own halo plan.
  const GlobalRows t = transpose_rows(*out.S, strategy, comm, &out.S->plan()).rows;

  GlobalRows g;  // row i of S + S^T: the two sorted rows merged, each column once
  g.nrows = n;
  g.indptr.resize(n + 1);
  g.indices.resize(s.indices.size() + t.indices.size());
  out.depends_on_me.resize(n);
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    out.depends_on_me[i] = static_cast<double>(t.indptr[i + 1] - t.indptr[i]);
    std::int64_t a = s.indptr[i], b = t.indptr[i];
    const std::int64_t ae = s.indptr[i + 1], be = t.indptr[i + 1];
    while (a < ae || b < be) {
      const std::int64_t c = b == be || (a < ae && s.indices[a] <= t.indices[b]) ? s.indices[a] : t.indices[b];
      while (a < ae && s.indices[a] == c) ++a;
      while (b < be && t.indices[b] == c) ++b;
      g.indices[at++] = c;
    }
    g.indptr[i + 1] = at;
  }
  g.indices.resize(at);
  out.G = pattern(g);
  return out;
}

}  // namespace commsolve
