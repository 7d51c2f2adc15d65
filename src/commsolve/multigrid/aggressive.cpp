#include "commsolve/multigrid/aggressive.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"
#include "commsolve/multigrid/classical_level.hpp"
#include "commsolve/multigrid/independent_sets.hpp"
#include "commsolve/multigrid/interpolation.hpp"
#include "commsolve/parcsr/spgemm.hpp"

namespace commsolve {

namespace {

// Rows over global columns as a ParCsr on A's topology.
std::unique_ptr<ParCsr> from_rows(const GlobalRows& r, const Distribution& row_dist, const Distribution& col_dist,
                                  const ParCsr& A, MPI_Comm comm, const std::string& strategy) {
  return std::make_unique<ParCsr>(GlobalRowsView<std::int64_t>{r.nrows, r.indptr.data(), r.indices.data()},
                                  r.data.data(), row_dist, col_dist, A.topology(), comm, strategy);
}

// The product `left` B, its exchange recorded in `exchanges`.
GlobalRows product(const ParCsr& left, const ParCsr& B, const std::string& strategy, MPI_Comm comm,
                   std::vector<ProductExchange>& exchanges) {
  ProductResult r = spgemm(left, B, strategy, comm);
  exchanges.push_back({"A B", std::move(r.plan), std::move(r.recorded), left.col_map()});
  return std::move(r.rows);
}

// The entries `keep(i, p)` picks of each row i of L, over A's column space, as a ParCsr on
// A's distributions (its halo: the columns those entries use).
template <class Keep>
ParCsr picked_rows(const ParCsr& A, const LocalRowsView& L, const Keep& keep, bool ones, MPI_Comm comm,
                   const std::string& strategy) {
  LocalCsr m;
  m.nrows = L.nrows;
  m.indptr.resize(L.nrows + 1);
  for (std::int64_t i = 0; i < L.nrows; ++i) {
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
      if (keep(i, p)) {
        m.indices.push_back(L.indices[p]);
        m.data.push_back(ones ? 1.0 : L.data[p]);
      }
    m.indptr[i + 1] = static_cast<std::int32_t>(m.indices.size());
  }
  return ParCsr(std::move(m), A.col_map(), A.row_dist(), A.col_dist(), A.topology(), comm, strategy);
}

bool strong_edge(const SplitView& v, std::int64_t i, std::int32_t p) {
  return v.strong[p] && v.L.indices[p] != i;
}

}  // namespace

std::vector<double> second_split(const ParCsr& A, const SplitView& first, const Distribution& first_dist,
                                 const std::int64_t* ids, std::uint64_t seed, bool hmis, const std::string& strategy,
                                 MPI_Comm comm, std::vector<ProductExchange>& exchanges) {
  const LocalRowsView& L = first.L;
  const std::int64_t n = L.nrows;
  auto in_c1 = [&](std::int64_t i) { return first.state[i] == kCoarse; };
  // (I + S) Inj: each row's strong C1 neighbours, and itself if in C1 (first coarse indices).
  RowBuilder near;
  for (std::int64_t i = 0; i < n; ++i) {
    if (in_c1(i)) near.push(first.coarse[i], 1.0);
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
      if (strong_edge(first, i, p) && first.coarse[L.indices[p]] >= 0) near.push(first.coarse[L.indices[p]], 1.0);
    near.end_row();
  }
  // S_C: S's rows of the C1 points.
  auto of_c1 = [&](std::int64_t i, std::int32_t p) { return in_c1(i) && strong_edge(first, i, p); };
  const ParCsr SC = picked_rows(A, L, of_c1, true, comm, strategy);
  const std::unique_ptr<ParCsr> nearP = from_rows(near.rows, A.row_dist(), first_dist, A, comm, strategy);
  const GlobalRows paths = product(SC, *nearP, strategy, comm, exchanges);

  // The second strength graph over C1 (rows: the rank's C1 points in local order, as the
  // first numbering counts them): a path to another C1 point is a strong dependency.
  RowBuilder s2;
  s2.reserve(n, static_cast<std::int64_t>(paths.indices.size()));
  std::vector<std::int64_t> c1_ids;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!in_c1(i)) continue;
    for (std::int64_t q = paths.indptr[i]; q < paths.indptr[i + 1]; ++q)
      if (paths.indices[q] != first.coarse[i]) s2.push(paths.indices[q], 1.0);
    s2.end_row();
    c1_ids.push_back(ids[i]);
  }
  StrengthGraphs g =
      strength_graphs(from_rows(s2.rows, first_dist, first_dist, A, comm, strategy), strategy, comm);
  const std::vector<double> second = classical_split(*g.G, *g.S, g.depends_on_me, c1_ids.data(), seed, hmis, comm);
  const ParCsr& G = *g.G;
  std::vector<double> out(n, kFine);
  for (std::int64_t i = 0, r = 0; i < n; ++i) {
    if (!in_c1(i)) continue;
    // a C1 point with no second-graph neighbour either way stays coarse: nothing else would
    // interpolate it
    const bool alone = G.diag().indptr[r] == G.diag().indptr[r + 1] &&
                       G.offd_on_node().indptr[r] == G.offd_on_node().indptr[r + 1] &&
                       G.offd_off_node().indptr[r] == G.offd_off_node().indptr[r + 1];
    if (second[r] == kCoarse || alone) out[i] = kCoarse;
    ++r;
  }
  return out;
}

std::vector<std::int64_t> multipass_passes(ParCsr& A, const SplitView& split, MPI_Comm comm) {
  const LocalRowsView& L = split.L;
  const std::int64_t n = L.nrows, nh = static_cast<std::int64_t>(A.col_map().size());
  require(A.local_rows() == n && A.local_cols() == n, "multipass: the view must be A's square local block (rank " +
                                                          std::to_string(A.rank()) + ")");
  std::vector<double> which(n), full(n + nh);
  for (std::int64_t i = 0; i < n; ++i) which[i] = split.state[i] == kCoarse ? 0.0 : -1.0;
  for (int k = 1;; ++k) {
    A.executor().begin(which.data());
    const double* halo = A.executor().end();
    std::copy(which.begin(), which.end(), full.begin());
    std::copy(halo, halo + nh, full.begin() + n);
    if (k > kMaxPasses) break;
    long long reached = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (which[i] != -1.0) continue;
      for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
        if (strong_edge(split, i, p) && full[L.indices[p]] == k - 1) {
          which[i] = k;
          ++reached;
          break;
        }
    }
    long long total = 0;
    check_mpi(MPI_Allreduce(&reached, &total, 1, MPI_LONG_LONG, MPI_SUM, comm), "MPI_Allreduce");
    if (total == 0) break;
  }
  return {full.begin(), full.end()};
}

GlobalRows multipass_interpolation(ParCsr& A, const SplitView& split, const Distribution& coarse_dist,
                                   const std::string& strategy, MPI_Comm comm,
                                   std::vector<ProductExchange>& exchanges) {
  const LocalRowsView& L = split.L;
  const std::int64_t n = L.nrows;
  const std::vector<std::int64_t> pass = multipass_passes(A, split, comm);
  std::vector<double> outside(n, 0.0), diag(n, 0.0);  // sum_{j != i} a_ij, a_ii
  long long last = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p) (L.indices[p] == i ? diag : outside)[i] += L.data[p];
    last = std::max<long long>(last, pass[i]);
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &last, 1, MPI_LONG_LONG, MPI_MAX, comm), "MPI_Allreduce");

  RowBuilder unit;  // coarse points interpolate from themselves
  for (std::int64_t i = 0; i < n; ++i) {
    if (split.state[i] == kCoarse) unit.push(split.coarse[i], 1.0);
    unit.end_row();
  }
  GlobalRows P = std::move(unit.rows);
  for (long long k = 1; k <= last; ++k) {
    // a_ij, j in J_i, of the pass-k rows i
    auto in_j = [&](std::int64_t i, std::int32_t p) {
      return pass[i] == k && strong_edge(split, i, p) && pass[L.indices[p]] == k - 1;
    };
    GlobalRows W;
    if (k == 1) {  // onto the strong coarse neighbours: local
      RowBuilder w;
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
          if (in_j(i, p)) w.push(split.coarse[L.indices[p]], L.data[p]);
        w.end_row();
      }
      W = std::move(w.rows);
    } else {  // through the rows of P assigned so far: one product
      const std::unique_ptr<ParCsr> assigned = from_rows(P, A.row_dist(), coarse_dist, A, comm, strategy);
      W = product(picked_rows(A, L, in_j, false, comm, strategy), *assigned, strategy, comm, exchanges);
    }
    GlobalRows next;
    for (std::int64_t i = 0; i < n; ++i) {
      if (pass[i] != k) {
        next.indices.insert(next.indices.end(), P.indices.begin() + P.indptr[i], P.indices.begin() + P.indptr[i + 1]);
        next.data.insert(next.data.end(), P.data.begin() + P.indptr[i], P.data.begin() + P.indptr[i + 1]);
      } else {
        double total = 0.0;  // sum_{j in J_i} a_ij
        for (std::int32_t p = L.indptr[i]; p < L.indptr[i + 1]; ++p)
          if (in_j(i, p)) total += L.data[p];
        const double scale = total != 0.0 ? -outside[i] / (diag[i] * total) : 0.0;
        for (std::int64_t q = W.indptr[i]; q < W.indptr[i + 1]; ++q)
          if (const double v = scale * W.data[q]; v != 0.0) {
            next.indices.push_back(W.indices[q]);
            next.data.push_back(v);
          }
      }
      next.indptr.push_back(static_cast<std::int64_t>(next.indices.size()));
    }
    next.nrows = n;
    P = std::move(next);
  }
  return P;
}

}  // namespace commsolve
