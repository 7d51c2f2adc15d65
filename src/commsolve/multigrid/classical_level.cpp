#include "commsolve/multigrid/classical_level.hpp"

#include <algorithm>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/core/stopwatch.hpp"
#include "commsolve/multigrid/independent_sets.hpp"
#include "commsolve/multigrid/interpolation.hpp"
#include "commsolve/multigrid/strength.hpp"

namespace commsolve {

double hash_uniform(std::int64_t id, std::uint64_t seed) {
  constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = static_cast<std::uint64_t>(id) + seed * kGolden + kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(std::uint64_t(1) << 53);
}

std::vector<double> classical_split(ParCsr& G, ParCsr& S, const std::vector<double>& depends_on_me,
                                    const std::int64_t* ids, std::uint64_t seed, bool hmis, MPI_Comm comm) {
  const std::int64_t n = S.local_rows();
  require(static_cast<std::int64_t>(depends_on_me.size()) == n && G.local_rows() == n,
          "classical split: S, S + S^T and |S^T_i| must cover the same points");
  std::vector<double> weight(n), state(n);
  for (std::int64_t i = 0; i < n; ++i) {
    weight[i] = depends_on_me[i] + hash_uniform(ids[i], seed);
    state[i] = depends_on_me[i] == 0 ? kFine : kUndecided;
  }
  if (hmis) {
    const std::vector<char> first = rs_first_pass(S);
    const LocalCsr &on = S.offd_on_node(), &off = S.offd_off_node();
    for (std::int64_t i = 0; i < n; ++i)
      if (first[i] && on.indptr[i] == on.indptr[i + 1] && off.indptr[i] == off.indptr[i + 1]) state[i] = kCoarse;
  }
  return pmis_split(G, S, weight, std::move(state), comm);
}

CoarseNumbering coarse_numbering(ParCsr& A, const std::vector<double>& state, MPI_Comm comm) {
  const std::int64_t n = A.local_rows(), nh = static_cast<std::int64_t>(A.col_map().size());
  require(static_cast<std::int64_t>(state.size()) == n && A.local_cols() == n,
          "coarse numbering: one state per row of a matrix whose rows and columns are distributed alike");
  CoarseNumbering out;
  std::int64_t mine = std::count(state.begin(), state.end(), kCoarse);
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<std::int64_t> counts(size);
  check_mpi(MPI_Allgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm), "MPI_Allgather");
  out.offsets.assign(size + 1, 0);
  for (int r = 0; r < size; ++r) out.offsets[r + 1] = out.offsets[r] + counts[r];
  std::vector<double> owned(n, -1.0);
  for (std::int64_t i = 0, next = out.offsets[A.rank()]; i < n; ++i)
    if (state[i] == kCoarse) owned[i] = static_cast<double>(next++);
  out.coarse.resize(n + nh);
  for (std::int64_t i = 0; i < n; ++i) out.coarse[i] = static_cast<std::int64_t>(owned[i]);
  A.executor().begin(owned.data());
  const double* halo = A.executor().end();
  for (std::int64_t h = 0; h < nh; ++h) out.coarse[n + h] = static_cast<std::int64_t>(halo[h]);
  return out;
}

ClassicalLevel classical_level(ParCsr& A, const std::int64_t* ids, const ClassicalLevelOptions& o, MPI_Comm comm) {
  const std::int64_t n = A.local_rows();
  require(A.local_cols() == n, "classical AMG level: A's rows and columns must be distributed alike (rank " +
                                   std::to_string(A.rank()) + ")");
  ClassicalLevel res;
  clock_type::time_point t = clock_type::now();
  auto lap = [&](const char* step) {
    res.times.emplace_back(step, seconds_since(t));
    t = clock_type::now();
  };
  const LocalCsr L = A.space_rows();
  const LocalRowsView rows{L.nrows, L.indptr.data(), L.indices.data(), L.data.data()};
  const std::vector<std::uint8_t> strong = classical_strength(rows, o.theta);
  lap("strength");
  StrengthGraphs g = strength_graphs(A, rows, strong.data(), o.strategy, comm);
  lap("graphs");

  res.state = classical_split(*g.G, *g.S, g.depends_on_me, ids, o.seed, o.hmis, comm);
  g = StrengthGraphs{};  // S and S + S^T are done with
  CoarseNumbering numbering = coarse_numbering(A, res.state, comm);
  if (o.aggressive) {
    const SplitView first{rows, strong.data(), numbering.coarse.data(), res.state};
    res.state = second_split(A, first, Distribution::from_offsets(numbering.offsets), ids, o.seed, o.hmis,
                             o.strategy, comm, res.setup_exchanges);
    numbering = coarse_numbering(A, res.state, comm);
  }
  res.coarse_offsets = numbering.offsets;
  const std::int64_t nc = res.coarse_offsets.back();
  lap("split");
  if (nc == 0 || nc >= A.row_dist().global_size()) return res;  // no coarsening: the coarsest level

  const Distribution coarse_dist = Distribution::from_offsets(res.coarse_offsets);
  GlobalRows p;
  if (o.aggressive) {
    const SplitView split{rows, strong.data(), numbering.coarse.data(), res.state};
    p = multipass_interpolation(A, split, coarse_dist, o.strategy, comm, res.setup_exchanges);
  } else if (o.direct) {
    p = direct_interpolation({rows, strong.data(), nullptr, numbering.coarse.data()});
    truncate(p, o.trunc, o.pmax);
  } else {
    const std::vector<std::int64_t> globals = A.space_globals();
    const CoarseningView view{rows, strong.data(), globals.data(), numbering.coarse.data()};
    p = extended_i_interpolation(A, view, comm, o.trunc, o.pmax);
  }
  res.P = std::make_unique<ParCsr>(GlobalRowsView<std::int64_t>{p.nrows, p.indptr.data(), p.indices.data()},
                                   p.data.data(), A.row_dist(), coarse_dist, A.topology(), comm, o.strategy);
  p = GlobalRows{};
  lap("interpolation");
  GalerkinResult r = galerkin(A, *res.P, o.product_strategy, comm);
  res.plan_ap = std::move(r.plan_ap);
  res.plan_rap = std::move(r.plan_rap);
  res.recorded_ap = r.recorded_ap;
  res.recorded_rap = r.recorded_rap;
  res.Ac = std::make_unique<ParCsr>(std::move(r.rows), r.halo, coarse_dist, coarse_dist, A.topology(), comm,
                                    o.result_strategy);
  lap("galerkin");
  return res;
}

}  // namespace commsolve
