#include "commsolve/dense/dense_plan.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace commsolve {

const std::vector<std::string>& matmul_role_names() {
  static const std::vector<std::string> names = {"replicate_a", "replicate_b", "panel_a", "panel_b", "reduce_c"};
  return names;
}

const std::vector<std::string>& lu_role_names() {
  static const std::vector<std::string> names = {"reduce_col", "reduce_row", "diag",       "panel_l",
                                                  "panel_u",    "tournament", "pivots", "swap"};
  return names;
}

std::int64_t DensePlan::index_of(std::int64_t id) const {
  auto it = std::lower_bound(set.id.begin(), set.id.end(), id);
  if (it == set.id.end() || *it != id) throw std::logic_error("dense: no collective " + std::to_string(id) + " here");
  return it - set.id.begin();
}

std::int64_t DensePlan::max_count() const {
  std::int64_t m = 0;
  for (std::int64_t n : set.count) m = std::max(m, n);
  return m;
}

void MatmulShape::validate() const {
  if (m < 0 || n < 0 || k < 0 || nb < 1 || panel < 1 || piece < 1)
    throw std::invalid_argument("matrix multiply of " + std::to_string(m) + " x " + std::to_string(k) + " by " +
                                std::to_string(k) + " x " + std::to_string(n) + " in blocks of " +
                                std::to_string(nb) + " (panels of " + std::to_string(panel) +
                                ", pieces of " + std::to_string(piece) +
                                "): extents must be >= 0, the block, panel and piece sizes >= 1");
}

MatmulLayout::MatmulLayout(const MatmulShape& s, const Grid25D& g)
    : a_rows{s.m, s.nb, g.pr}, a_cols{s.k, s.nb, g.pc}, b_rows{s.k, s.nb, g.pr}, b_cols{s.n, s.nb, g.pc} {}

namespace {

// Appends one collective (root first among the members, the others in the order given: who
// needs the data first, for need-ordered trees), unless it would move nothing: no values, or
// no member but the root.
struct PlanBuilder {
  DensePlan& p;
  std::int64_t piece;
  int only = -1;  // keep only the collectives of this rank (-1: all)
  std::vector<int> members;
  std::int64_t next_id = 0;
  // whole: in one piece whatever its size (a tournament's candidates, a step's pivots)
  void add(std::int8_t role, std::int32_t step, std::int32_t pos, CollectiveKind kind, int root, std::int64_t count,
           bool whole = false) {
    const std::int64_t piece = whole ? std::max<std::int64_t>(count, 1) : this->piece;
    std::vector<int> seen(members);  // drop the root and repeats, keeping the order
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    std::vector<char> taken(seen.size(), 0);
    std::size_t kept = 0;
    for (const int r : members) {
      const std::size_t i = static_cast<std::size_t>(std::lower_bound(seen.begin(), seen.end(), r) - seen.begin());
      if (r != root && !taken[i]) taken[i] = 1, members[kept++] = r;
    }
    members.resize(kept);
    if (count > 0 && !members.empty()) {
      const bool keep = only < 0 || only == root || std::binary_search(seen.begin(), seen.end(), only);
      CollectiveSet& s = p.set;
      for (std::int64_t off = 0, i = 0; off < count; off += piece, ++i) {
        const std::int64_t id = next_id++;
        if (!keep) continue;
        s.id.push_back(id);
        s.kind.push_back(static_cast<std::int8_t>(kind));
        s.root.push_back(root);
        s.part.push_back(root);
        s.part.insert(s.part.end(), members.begin(), members.end());
        s.part_ptr.push_back(static_cast<std::int64_t>(s.part.size()));
        s.count.push_back(std::min(piece, count - off));
        p.role.push_back(role);
        p.step.push_back(step);
        p.pos.push_back(pos);
        p.piece.push_back(static_cast<std::int32_t>(i));
      }
    }
    members.clear();
  }
};

}  // namespace

SummaPanels summa_panels(const MatmulShape& s, const Grid25D& g) {
  s.validate();
  const std::int64_t nblocks = (s.k + s.nb - 1) / s.nb;
  const std::int64_t most = std::max<std::int64_t>(1, s.panel / s.nb);
  SummaPanels P;
  // Blocks with the same owners and layer recur every lcm(pr, pc, c) blocks.
  const auto lcm = [](std::int64_t a, std::int64_t b) { return a / std::gcd(a, b) * b; };
  const std::int64_t period = lcm(lcm(g.pr, g.pc), g.c);
  for (std::int64_t start = 0; start < nblocks; start += period * most)  // panels in order of their first block
    for (std::int64_t r = start; r < std::min(nblocks, start + period); ++r) {
      for (std::int64_t kap = r, i = 0; kap < nblocks && i < most; kap += period, ++i) P.blocks.push_back(kap);
      P.ptr.push_back(static_cast<std::int64_t>(P.blocks.size()));
      P.layer.push_back(static_cast<int>(r % g.c));
    }
  return P;
}

DensePlan matmul_plan(const MatmulShape& s, const Grid25D& g, int only_rank) {
  s.validate();
  g.validate();
  const MatmulLayout L(s, g);
  DensePlan p;
  p.nroles = mm_nroles;
  PlanBuilder b{p, s.piece, only_rank, {}};
  const auto along_z = [&](std::int8_t role, CollectiveKind kind, const Cyclic1D& r, const Cyclic1D& c) {
    for (int x = 0; x < g.pr; ++x)
      for (int y = 0; y < g.pc; ++y) {
        for (int z = 1; z < g.c; ++z) b.members.push_back(g.rank(x, y, z));
        b.add(role, -1, x * g.pc + y, kind, g.rank(x, y, 0), r.local_size(x) * c.local_size(y));
      }
  };
  along_z(mm_replicate_a, CollectiveKind::broadcast, L.a_rows, L.a_cols);
  along_z(mm_replicate_b, CollectiveKind::broadcast, L.b_rows, L.b_cols);
  const SummaPanels P = summa_panels(s, g);
  for (std::int64_t q = 0; q < P.size(); ++q) {
    const int z = P.layer[static_cast<std::size_t>(q)];
    const std::int64_t w = P.width(q, L.a_cols);
    const std::int64_t first = P.blocks[P.ptr[q]];
    const int ya = L.a_cols.owner(first), xb = L.b_rows.owner(first);
    for (int x = 0; x < g.pr; ++x) {
      for (int y = 0; y < g.pc; ++y) b.members.push_back(g.rank(x, y, z));
      b.add(mm_panel_a, static_cast<std::int32_t>(q), x, CollectiveKind::broadcast, g.rank(x, ya, z),
            L.a_rows.local_size(x) * w);
    }
    for (int y = 0; y < g.pc; ++y) {
      for (int x = 0; x < g.pr; ++x) b.members.push_back(g.rank(x, y, z));
      b.add(mm_panel_b, static_cast<std::int32_t>(q), y, CollectiveKind::broadcast, g.rank(xb, y, z),
            w * L.b_cols.local_size(y));
    }
  }
  along_z(mm_reduce_c, CollectiveKind::reduce, L.a_rows, L.b_cols);
  p.nids = b.next_id;
  return p;
}

DensePlan lu_plan(std::int64_t n, std::int64_t nb, const Grid25D& g, std::int64_t piece, int only_rank,
                  bool tournament) {
  if (n < 0 || nb < 1 || piece < 1)
    throw std::invalid_argument("LU of " + std::to_string(n) + " x " + std::to_string(n) + " in blocks of " +
                                std::to_string(nb) + " (pieces of " + std::to_string(piece) +
                                "): the size must be >= 0, the block and piece sizes >= 1");
  g.validate();
  const Cyclic1D R{n, nb, g.pr}, C{n, nb, g.pc};
  DensePlan p;
  p.nroles = lu_nroles;
  PlanBuilder b{p, piece, only_rank, {}};
  const auto rows_from = [&](int x, std::int64_t blk) { return R.local_size(x) - R.local_start(x, blk); };
  const auto cols_from = [&](int y, std::int64_t blk) { return C.local_size(y) - C.local_start(y, blk); };
  for (std::int64_t k = 0; k < R.nblocks(); ++k) {
    const int xk = R.owner(k), yk = C.owner(k), zk = static_cast<int>(k % g.c);
    const std::int64_t w = R.width(k);
    const auto step = static_cast<std::int32_t>(k);
    // The sums along z list the layer that eliminated step k - 1 first: its share comes last
    // (it waits for that step's update), so need-ordered trees hang it from the root.
    const auto along_z = [&](int x, int y) {
      for (int d = g.c - 1; d >= 1; --d) b.members.push_back(g.rank(x, y, (zk + d) % g.c));
    };
    for (int x = 0; x < g.pr; ++x) {
      along_z(x, yk);
      b.add(lu_reduce_col, step, x, CollectiveKind::reduce, g.rank(x, yk, zk), rows_from(x, k) * w);
    }
    if (tournament) {
      for (int x = 0; x < g.pr; ++x)
        if (rows_from(x, k) > 0) b.members.push_back(g.rank(x, yk, zk));
      b.add(lu_tournament, step, yk, CollectiveKind::reduce, g.rank(xk, yk, zk), w * (w + 1), true);
      for (int r = 0; r < g.size(); ++r) b.members.push_back(r);
      b.add(lu_pivots, step, -1, CollectiveKind::broadcast, g.rank(xk, yk, zk), w, true);
    }
    for (int y = 0; y < g.pc; ++y) {
      along_z(xk, y);
      b.add(lu_reduce_row, step, y, CollectiveKind::reduce, g.rank(xk, y, zk), w * cols_from(y, k + 1));
    }
    // The broadcasts list their receivers in need order: the next steps' process rows and
    // columns first (x_k + 1, x_k + 2, ...), layer 0's copy last.
    const auto ring = [](int from, int d, int n) { return (from + d) % n; };
    for (int d = 1; d < std::max(g.pr, g.pc); ++d) {
      if (d < g.pr && rows_from(ring(xk, d, g.pr), k + 1) > 0) b.members.push_back(g.rank(ring(xk, d, g.pr), yk, zk));
      if (d < g.pc && cols_from(ring(yk, d, g.pc), k + 1) > 0) b.members.push_back(g.rank(xk, ring(yk, d, g.pc), zk));
    }
    b.members.push_back(g.rank(xk, yk, 0));
    b.add(lu_diag, step, -1, CollectiveKind::broadcast, g.rank(xk, yk, zk), w * w);
    for (int x = 0; x < g.pr; ++x) {
      if (rows_from(x, k + 1) == 0) continue;
      for (int d = 1; d < g.pc; ++d)
        if (cols_from(ring(yk, d, g.pc), k + 1) > 0) b.members.push_back(g.rank(x, ring(yk, d, g.pc), zk));
      b.members.push_back(g.rank(x, yk, 0));
      b.add(lu_panel_l, step, x, CollectiveKind::broadcast, g.rank(x, yk, zk), rows_from(x, k + 1) * w);
    }
    for (int y = 0; y < g.pc; ++y) {
      if (cols_from(y, k + 1) == 0) continue;
      for (int d = 1; d < g.pr; ++d)
        if (rows_from(ring(xk, d, g.pr), k + 1) > 0) b.members.push_back(g.rank(ring(xk, d, g.pr), y, zk));
      b.members.push_back(g.rank(xk, y, 0));
      b.add(lu_panel_u, step, y, CollectiveKind::broadcast, g.rank(xk, y, zk), w * cols_from(y, k + 1));
    }
  }
  p.nids = b.next_id;
  return p;
}

CommStats dense_stats(const TreePlan& plan, const DensePlan& dp, const Topology& topo) {
  return tree_stats(plan, dp.set, topo, dp.role, dp.nroles);
}

std::vector<CommStats> dense_stats_virtual(const DensePlan& dp, const TreeShape& shape, const Topology& topo) {
  return tree_stats_virtual(dp.set, shape, topo, dp.role, dp.nroles);
}

}  // namespace commsolve
