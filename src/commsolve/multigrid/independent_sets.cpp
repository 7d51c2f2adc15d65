#include "commsolve/multigrid/independent_sets.hpp"

#include <algorithm>

#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// Calls f(k) for every entry of row i, k its column-space index ([owned | halo]).
template <class F>
void for_each_column(const ParCsr& A, std::int64_t i, F&& f) {
  A.for_each_in_row(i, [&](std::int64_t k, double) { f(k); });
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

// max(own_i, full_k over row i's entries k [where through[k]]), `full` = [own | halo].
std::vector<double> max_over_row(const ParCsr& G, const std::vector<double>& own, const std::vector<double>& full,
                                 const std::vector<double>* through) {
  std::vector<double> out(own);
  for (std::int64_t i = 0; i < G.local_rows(); ++i)
    for_each_column(G, i, [&](std::int64_t k) {
      if ((through == nullptr || (*through)[k] > 0) && full[k] > out[i]) out[i] = full[k];
    });
  return out;
}

bool anywhere(bool local, MPI_Comm comm) {
  int mine = local ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
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
  // Undecided points with a strong connection to a coarse point become fine: after each
  // round's winners, and first of all for coarse points given in `state` (HMIS; as hypre's
  // first round there, only the rank's own coarse points count: nothing is exchanged yet).
  auto fine_next_to_coarse = [&](bool own_only) {
    if (own_only) {
      sfull.assign(state.begin(), state.end());
      sfull.resize(n + S.col_map().size(), kUndecided);
    } else {
      exchange_into(S, state, sfull);
    }
    for (std::int64_t i = 0; i < n; ++i) {
      if (state[i] != kUndecided) continue;
      bool to_fine = false;
      for_each_column(S, i, [&](std::int64_t k) { to_fine = to_fine || sfull[k] == kCoarse; });
      if (to_fine) state[i] = kFine;
    }
  };
  if (anywhere(std::find(state.begin(), state.end(), kCoarse) != state.end(), comm)) fine_next_to_coarse(true);
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
    fine_next_to_coarse(false);
  }
  return state;
}

std::vector<char> rs_first_pass(const ParCsr& S) {
  const LocalCsr& s = S.diag();
  const std::int64_t n = s.nrows;
  require(S.local_cols() == n, "rs_first_pass: S's diagonal block must be square (rows and columns distributed alike)");
  // S^T over the rank's own points: who depends on each point.
  std::vector<std::int32_t> tptr(n + 1, 0), trow(s.indptr[n]);
  for (std::int32_t k = 0; k < s.indptr[n]; ++k) ++tptr[s.indices[k] + 1];
  for (std::int64_t j = 0; j < n; ++j) tptr[j + 1] += tptr[j];
  {
    std::vector<std::int32_t> fill(tptr.begin(), tptr.end() - 1);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int32_t k = s.indptr[i]; k < s.indptr[i + 1]; ++k) trow[fill[s.indices[k]]++] = static_cast<std::int32_t>(i);
  }
  // Undecided points in buckets by measure, each bucket a FIFO (doubly linked: a point whose
  // measure changes goes to the back of its new bucket); a measure grows by at most one per
  // dependant, so 2 max|S^T_i| + 1 buckets suffice.
  enum : std::int32_t { kU = 0, kC = 1, kF = 2 };
  // A point's state, measure and links side by side, 32-bit (n < 2^31 local rows): the
  // lists' random accesses touch one cache line per point.
  struct Point {
    std::int32_t state, measure, next, prev;
  };
  std::vector<Point> pt(n);
  std::int32_t top = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    pt[i] = {kU, tptr[i + 1] - tptr[i], -1, -1};
    top = std::max(top, pt[i].measure);
  }
  std::vector<std::int32_t> head(2 * static_cast<std::size_t>(top) + 2, -1), tail(head);
  auto unlink = [&](std::int32_t i) {
    const Point& p = pt[i];
    (p.prev >= 0 ? pt[p.prev].next : head[p.measure]) = p.next;
    (p.next >= 0 ? pt[p.next].prev : tail[p.measure]) = p.prev;
  };
  auto link = [&](std::int32_t i) {
    Point& p = pt[i];
    p.next = -1;
    p.prev = tail[p.measure];
    (p.prev >= 0 ? pt[p.prev].next : head[p.measure]) = i;
    tail[p.measure] = i;
    top = std::max(top, p.measure);
  };
  // Fine: each undecided point `i` depends on gains one (it has one more fine dependant to
  // interpolate), moved to the back of its bucket once `linked`.
  auto make_fine = [&](std::int32_t i, bool linked) {
    pt[i].state = kF;
    for (std::int32_t k = s.indptr[i]; k < s.indptr[i + 1]; ++k) {
      const std::int32_t c = s.indices[k];
      if (pt[c].state != kU) continue;
      if (linked) unlink(c);
      ++pt[c].measure;
      if (linked) link(c);
    }
  };
  for (std::int32_t i = 0; i < n; ++i)  // nobody depends on it: fine (hypre's Ruge, in index order)
    if (pt[i].measure == 0) make_fine(i, false);
  for (std::int32_t i = 0; i < n; ++i)
    if (pt[i].state == kU) link(i);
  while (true) {
    while (top > 0 && head[top] < 0) --top;
    if (top == 0) break;
    const std::int32_t i = head[top];  // the largest measure, the longest in its bucket
    unlink(i);
    pt[i].state = kC;
    for (std::int32_t q = tptr[i]; q < tptr[i + 1]; ++q) {  // its dependants become fine
      const std::int32_t j = trow[q];
      if (pt[j].state != kU) continue;
      unlink(j);
      make_fine(j, true);
    }
    for (std::int32_t k = s.indptr[i]; k < s.indptr[i + 1]; ++k) {  // what i depends on loses i
      const std::int32_t c = s.indices[k];
      if (pt[c].state != kU) continue;
      unlink(c);
      if (--pt[c].measure > 0) link(c);
      else make_fine(c, true);  // nobody left depends on it
    }
  }
  std::vector<char> coarse(n);
  for (std::int64_t i = 0; i < n; ++i) coarse[i] = pt[i].state == kC;
  return coarse;
}

std::vector<std::int8_t> aggregate_roots(ParCsr& G, const std::vector<double>& weight, int min_left_neighbours,
                                         MPI_Comm comm) {
  const std::int64_t n = G.local_rows();
  require(G.local_cols() == n && static_cast<std::int64_t>(weight.size()) == n,
          "aggregate_roots: G and the weights must cover the same points");
  auto degree = [&](std::int64_t i) {
    std::int64_t d = 0;
    for_each_column(G, i, [&](std::int64_t) { ++d; });
    return d;
  };
  std::vector<std::int8_t> root(n, kNotRoot);
  std::vector<double> full, m, near;
  // Distance-2 maximal independent set: 1 undecided, 0 out (isolated points start out).
  std::vector<char> undecided(n);
  for (std::int64_t i = 0; i < n; ++i) undecided[i] = degree(i) > 0;
  auto hop2 = [&](std::vector<double> own) {  // max over the closed distance-2 neighbourhood
    exchange_into(G, own, full);
    own = max_over_row(G, own, full, nullptr);
    exchange_into(G, own, full);
    return max_over_row(G, own, full, nullptr);
  };
  while (anywhere(std::find(undecided.begin(), undecided.end(), 1) != undecided.end(), comm)) {
    std::vector<double> live(n, -1.0);
    for (std::int64_t i = 0; i < n; ++i)
      if (undecided[i]) live[i] = weight[i];
    m = hop2(live);
    std::vector<double> fresh(n, 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      if (undecided[i] && weight[i] == m[i]) {
        root[i] = kFirstRoot;
        fresh[i] = 1.0;
      }
    near = hop2(fresh);
    for (std::int64_t i = 0; i < n; ++i)
      if (near[i] > 0) undecided[i] = 0;
  }
  // Left-over points: with neighbours, none of them (nor themselves) a first root.
  std::vector<double> first(n, 0.0), left(n, 0.0), left_full;
  for (std::int64_t i = 0; i < n; ++i) first[i] = root[i] == kFirstRoot ? 1.0 : 0.0;
  exchange_into(G, first, full);
  near = max_over_row(G, first, full, nullptr);
  for (std::int64_t i = 0; i < n; ++i) left[i] = degree(i) > 0 && near[i] == 0 ? 1.0 : 0.0;
  while (true) {
    exchange_into(G, left, left_full);
    std::vector<double> cand(n, -1.0);
    bool any = false;
    for (std::int64_t i = 0; i < n; ++i) {
      if (left[i] == 0) continue;
      int count = 0;
      for_each_column(G, i, [&](std::int64_t k) { count += left_full[k] > 0; });
      if (count >= min_left_neighbours) {
        cand[i] = weight[i];
        any = true;
      }
    }
    if (!anywhere(any, comm)) break;
    exchange_into(G, cand, full);
    m = max_over_row(G, cand, full, &left_full);
    for (std::int64_t i = 0; i < n; ++i)
      if (left[i] == 0) m[i] = -1.0;
    exchange_into(G, m, full);
    m = max_over_row(G, m, full, &left_full);
    std::vector<double> fresh(n, 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      if (cand[i] >= 0 && weight[i] == m[i]) {
        root[i] = kLaterRoot;
        fresh[i] = 1.0;
      }
    exchange_into(G, fresh, full);
    near = max_over_row(G, fresh, full, &left_full);
    for (std::int64_t i = 0; i < n; ++i)
      if (near[i] > 0) left[i] = 0.0;
  }
  return root;
}

}  // namespace commsolve
