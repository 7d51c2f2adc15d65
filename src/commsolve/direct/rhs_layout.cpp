#include "commsolve/direct/rhs_layout.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "commsolve/core/error.hpp"

namespace commsolve {

void RhsMap::check(std::int64_t n, int nranks, const std::string& who) const {
  require(dist.nranks() == nranks && dist.global_size() == n,
          who + ": the row distribution covers " + std::to_string(dist.global_size()) + " rows on " +
              std::to_string(dist.nranks()) + " ranks; need " + std::to_string(n) + " on " + std::to_string(nranks));
  for (const auto* order : {&row_order, &col_order}) {
    require(static_cast<std::int64_t>(order->size()) == n,
            who + ": row and column orders must have one entry per unknown");
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (std::int32_t g : *order) {
      require(g >= 0 && g < n && !seen[g],
              [&] { return who + ": the row and column orders must be permutations"; });
      seen[g] = 1;
    }
  }
}

std::vector<std::int32_t> column_solvers(const SupernodalStructure& sym, const ProcessGrid3D& grid,
                                         const ForestPartition& forests) {
  const std::size_t ns = sym.sn_start.size() - 1;
  require(forests.forest.size() == ns, "column solvers: forests for " + std::to_string(forests.forest.size()) +
                                           " supernodes, the factor has " + std::to_string(ns));
  std::vector<std::int32_t> out(static_cast<std::size_t>(sym.n));
  for (std::size_t k = 0; k < ns; ++k) {
    const int z = forests.lowest_grid(forests.forest[k]);
    const int r = grid.layer(z).diag_owner(static_cast<std::int64_t>(k));
    std::fill(out.begin() + sym.sn_start[k], out.begin() + sym.sn_start[k + 1], r);
  }
  return out;
}

namespace {

struct Move {
  int from, to;
  std::int64_t global;
};

// Fills `p` (rank, nranks, n_owned set) from its moves: receives sorted by (owner, global),
// sends by (destination, global), as HaloPattern orders them.
void fill(HaloPattern& p, std::vector<Move>& in, std::vector<Move>& out, const Distribution& dist) {
  auto by = [](bool recv) {
    return [recv](const Move& a, const Move& b) {
      return std::make_tuple(recv ? a.from : a.to, a.global) < std::make_tuple(recv ? b.from : b.to, b.global);
    };
  };
  std::sort(in.begin(), in.end(), by(true));
  std::sort(out.begin(), out.end(), by(false));
  for (const Move& m : in) {
    if (p.recv_peers.empty() || p.recv_peers.back() != m.from) {
      if (!p.recv_peers.empty()) p.recv_ptr.push_back(static_cast<std::int64_t>(p.halo_globals.size()));
      p.recv_peers.push_back(m.from);
    }
    p.halo_globals.push_back(m.global);
  }
  if (!p.recv_peers.empty()) p.recv_ptr.push_back(static_cast<std::int64_t>(p.halo_globals.size()));
  for (const Move& m : out) {
    if (p.send_peers.empty() || p.send_peers.back() != m.to) {
      if (!p.send_peers.empty()) p.send_ptr.push_back(static_cast<std::int64_t>(p.send_idx.size()));
      p.send_peers.push_back(m.to);
    }
    p.send_idx.push_back(static_cast<std::int32_t>(dist.local_index(m.global)));
  }
  if (!p.send_peers.empty()) p.send_ptr.push_back(static_cast<std::int64_t>(p.send_idx.size()));
}

void check_sizes(const Distribution& dist, const std::vector<std::int32_t>& perm,
                 const std::vector<std::int32_t>& solver) {
  require(static_cast<std::int64_t>(perm.size()) == dist.global_size() && perm.size() == solver.size(),
          "right-hand side layout: distribution of " + std::to_string(dist.global_size()) + " rows for " +
              std::to_string(perm.size()) + " unknowns");
}

HaloPattern empty_pattern(int rank, const Distribution& dist) {
  HaloPattern p;
  p.rank = rank;
  p.nranks = dist.nranks();
  p.n_owned = dist.local_size(rank);
  return p;
}

// Calls move(owner, solver, global) for every row of b that must travel.
template <class F>
void for_each_move(const Distribution& dist, const std::vector<std::int32_t>& perm,
                   const std::vector<std::int32_t>& solver, F&& move) {
  check_sizes(dist, perm, solver);
  for (std::size_t j = 0; j < perm.size(); ++j) {
    const int owner = dist.owner(perm[j]);
    if (owner != solver[j]) move(owner, solver[j], perm[j]);
  }
}

}  // namespace

HaloPattern rhs_pattern(int rank, const Distribution& dist, const std::vector<std::int32_t>& perm,
                        const std::vector<std::int32_t>& solver) {
  std::vector<Move> in, out;
  for_each_move(dist, perm, solver, [&](int owner, int to, std::int64_t g) {
    if (to == rank) in.push_back({owner, to, g});
    if (owner == rank) out.push_back({owner, to, g});
  });
  HaloPattern p = empty_pattern(rank, dist);
  fill(p, in, out, dist);
  return p;
}

std::vector<HaloPattern> rhs_patterns(const Distribution& dist, const std::vector<std::int32_t>& perm,
                                      const std::vector<std::int32_t>& solver) {
  const int P = dist.nranks();
  std::vector<std::vector<Move>> in(P), out(P);
  for_each_move(dist, perm, solver, [&](int owner, int to, std::int64_t g) {
    in[to].push_back({owner, to, g});
    out[owner].push_back({owner, to, g});
  });
  std::vector<HaloPattern> all;
  for (int r = 0; r < P; ++r) {
    all.push_back(empty_pattern(r, dist));
    fill(all.back(), in[r], out[r], dist);
  }
  return all;
}

}  // namespace commsolve
