#include "multigrid/pmis.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace commsolve {

namespace {

// Calls f(k) for every entry of row i, k its column-space index ([owned | halo]).
template <class F>
void for_each_column(const ParCsr& A, std::int64_t i, F&& f) {
  const LocalCsr& d = A.diag();
  for (std::int32_t k = d.indptr[i]; k < d.indptr[i + 1]; ++k) f(static_cast<std::int64_t>(d.indices[k]));
  const std::int64_t n_owned = A.local_cols();
  for (const LocalCsr* o : {&A.offd_on_node(), &A.offd_off_node()})
    for (std::int32_t k = o->indptr[i]; k < o->indptr[i + 1]; ++k) f(n_owned + o->indices[k]);
}

// `full` = [owned values | their halo along A's plan].
void exchange_into(ParCsr& A, const std::vector<double>& owned, std::vector<double>& full) {
  const std::size_t n = owned.size(), nh = A.col_map().size();
  full.resize(n + nh);
  std::copy(owned.begin(), owned.end(), full.begin());
  A.executor().begin(owned.data());
  const double* h = A.executor().end();
  std::copy(h, h + nh, full.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

std::vector<double> pmis_split(ParCsr& G, ParCsr& S, const std::vector<double>& weight,
                               std::vector<double> state, MPI_Comm comm) {
  const std::int64_t n = G.local_rows();
  require(S.local_rows() == n && G.local_cols() == n && S.local_cols() == n &&
              static_cast<std::int64_t>(weight.size()) == n && static_cast<std::int64_t>(state.size()) == n,
          "pmis_split: G, S, the weights and the states must cover the same points");
  std::vector<double> wfull, gfull, sfull;
  exchange_into(G, weight, wfull);
  std::vector<std::int64_t> winners;
  while (true) {
    long long undecided = std::count(state.begin(), state.end(), kUndecided), total = 0;
    MPI_Allreduce(&undecided, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
    if (total == 0) break;
    exchange_into(G, state, gfull);
    winners.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      if (state[i] != kUndecided) continue;
      bool wins = true;
      for_each_column(G, i, [&](std::int64_t k) { wins = wins && !(gfull[k] == kUndecided && wfull[k] > weight[i]); });
      if (wins) winners.push_back(i);
    }
    for (std::int64_t i : winners) state[i] = kCoarse;
    exchange_into(S, state, sfull);
    for (std::int64_t i = 0; i < n; ++i) {
      if (state[i] != kUndecided) continue;
      bool to_fine = false;
      for_each_column(S, i, [&](std::int64_t k) { to_fine = to_fine || sfull[k] == kCoarse; });
      if (to_fine) state[i] = kFine;
    }
  }
  return state;
}

}  // namespace commsolve
