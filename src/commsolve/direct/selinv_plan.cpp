#include "commsolve/direct/selinv_plan.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"

namespace commsolve {

const std::vector<std::string>& selinv_role_names() {
  static const std::vector<std::string> names{"inv_l",     "inv_u",      "cross_l",    "cross_u",     "col_bcast",
                                              "row_bcast", "row_reduce", "col_reduce", "diag_reduce", "transpose"};
  return names;
}

void SupernodeSplit::compute(const SupernodeBlocks& blocks, const ProcessGrid2D& grid, std::int64_t k) {
  rows.assign(static_cast<std::size_t>(grid.px), 0);
  cols.assign(static_cast<std::size_t>(grid.py), 0);
  at_row.clear();
  at_col.clear();
  for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) {
    const std::int64_t m = blocks.hi[b] - blocks.lo[b];
    std::int64_t& r = rows[blocks.sn[b] % grid.px];
    std::int64_t& c = cols[blocks.sn[b] % grid.py];
    at_row.push_back(r);
    at_col.push_back(c);
    r += m;
    c += m;
  }
}

namespace {

class PhaseBuilder {
 public:
  PhaseBuilder(SelinvPhase& ph, const ProcessGrid2D& grid) : ph_(ph), grid_(grid) {}
  // A collective of `role`: root first, then the given ranks (the root skipped among them).
  void add(std::int64_t k, SelinvRole role, int x, int y, int root, const std::vector<int>& ranks,
           std::int64_t count) {
    CollectiveSet& s = ph_.set;
    s.id.push_back(static_cast<std::int64_t>(s.id.size()));
    const bool reduce = role == selinv_row_reduce || role == selinv_col_reduce || role == selinv_diag_reduce;
    s.kind.push_back(static_cast<std::int8_t>(reduce ? CollectiveKind::reduce : CollectiveKind::broadcast));
    s.root.push_back(root);
    s.part.push_back(root);
    for (int r : ranks)
      if (r != root) s.part.push_back(r);
    s.part_ptr.push_back(static_cast<std::int64_t>(s.part.size()));
    s.count.push_back(count);
    ph_.sn.push_back(static_cast<std::int32_t>(k));
    ph_.role.push_back(role);
    ph_.gx.push_back(x);
    ph_.gy.push_back(y);
  }
  void close_supernode() { ph_.sn_ptr.push_back(static_cast<std::int64_t>(ph_.set.size())); }
  // The ranks (x, y) of process column y whose rows[x] > 0, and of row x whose cols[y] > 0.
  std::vector<int> column(int y, const std::vector<std::int64_t>& rows) const {
    std::vector<int> out;
    for (int x = 0; x < grid_.px; ++x)
      if (rows[x] > 0) out.push_back(grid_.rank_of(x, y));
    return out;
  }
  std::vector<int> row(int x, const std::vector<std::int64_t>& cols) const {
    std::vector<int> out;
    for (int y = 0; y < grid_.py; ++y)
      if (cols[y] > 0) out.push_back(grid_.rank_of(x, y));
    return out;
  }

 private:
  SelinvPhase& ph_;
  const ProcessGrid2D& grid_;
};

}  // namespace

SelinvPlan selinv_plan(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                       bool symmetric) {
  sym.require_whole("selected inversion");
  require(grid.px >= 1 && grid.py >= 1,
          "grid must be positive, got " + std::to_string(grid.px) + " x " + std::to_string(grid.py));
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  SelinvPlan plan;
  plan.symmetric = symmetric;
  PhaseBuilder prep(plan.prepare, grid), inv(plan.invert, grid);
  plan.prepare.sn_ptr.push_back(0);
  plan.invert.sn_ptr.push_back(0);
  SupernodeSplit split;
  std::vector<std::pair<int, std::int64_t>> groups;  // (x py + y, doubles / w) of K's blocks
  for (std::int64_t k = 0; k < ns; ++k) {
    const std::int64_t w = sym.sn_start[k + 1] - sym.sn_start[k];
    const int kx = static_cast<int>(k % grid.px), ky = static_cast<int>(k % grid.py);
    const int diag = grid.rank_of(kx, ky);
    split.compute(blocks, grid, k);
    groups.clear();
    for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b)
      groups.emplace_back(static_cast<int>((blocks.sn[b] % grid.px) * grid.py + blocks.sn[b] % grid.py),
                          blocks.hi[b] - blocks.lo[b]);
    std::sort(groups.begin(), groups.end());
    std::size_t ng = 0;  // merged in place: one entry per (x, y) group
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (ng > 0 && groups[ng - 1].first == groups[g].first) groups[ng - 1].second += groups[g].second;
      else groups[ng++] = groups[g];
    }
    groups.resize(ng);

    prep.add(k, selinv_inv_l, -1, ky, diag, prep.column(ky, split.rows), w * w);
    prep.add(k, selinv_inv_u, kx, -1, diag, prep.row(kx, split.cols), w * w);
    if (!symmetric)
      for (const auto& [xy, m] : groups) {
        const int x = xy / grid.py, y = xy % grid.py;
        prep.add(k, selinv_cross_l, x, y, grid.rank_of(x, ky), {grid.rank_of(kx, y)}, w * m);
        prep.add(k, selinv_cross_u, x, y, grid.rank_of(kx, y), {grid.rank_of(x, ky)}, w * m);
      }
    prep.close_supernode();

    for (int y = 0; y < grid.py; ++y)
      if (split.cols[y] > 0)
        inv.add(k, selinv_col_bcast, -1, y, grid.rank_of(kx, y), inv.column(y, split.rows), w * split.cols[y]);
    for (int x = 0; x < grid.px; ++x) {
      if (split.rows[x] == 0) continue;
      if (!symmetric)
        inv.add(k, selinv_row_bcast, x, -1, grid.rank_of(x, ky), inv.row(x, split.cols), w * split.rows[x]);
      inv.add(k, selinv_row_reduce, x, -1, grid.rank_of(x, ky), inv.row(x, split.cols), split.rows[x] * w);
    }
    if (!symmetric)
      for (int y = 0; y < grid.py; ++y)
        if (split.cols[y] > 0)
          inv.add(k, selinv_col_reduce, -1, y, grid.rank_of(kx, y), inv.column(y, split.rows), w * split.cols[y]);
    inv.add(k, selinv_diag_reduce, -1, ky, diag, inv.column(ky, split.rows), w * w);
    if (symmetric)
      for (const auto& [xy, m] : groups) {
        const int x = xy / grid.py, y = xy % grid.py;
        inv.add(k, selinv_transpose, x, y, grid.rank_of(x, ky), {grid.rank_of(kx, y)}, w * m);
      }
    inv.close_supernode();
  }
  return plan;
}

std::int64_t structure_share(const SupernodeBlocks& blocks, std::int64_t k, int at, int p) {
  std::int64_t n = 0;
  for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b)
    if (blocks.sn[b] % p == at) n += blocks.hi[b] - blocks.lo[b];
  return n;
}

std::vector<std::int64_t> product_pieces(const SupernodeBlocks& blocks, const ProcessGrid2D& grid, std::int64_t k,
                                         std::int64_t width, int x, int y, bool symmetric) {
  const std::int64_t rows = structure_share(blocks, k, x, grid.px);
  const double per_column = (symmetric ? 2.0 : 4.0) * static_cast<double>(rows * width);
  const std::int64_t nb = blocks.col_ptr[k + 1] - blocks.col_ptr[k];
  std::vector<std::int64_t> bounds{0};
  double flops = 0.0;
  for (std::int64_t i = 0; i < nb; ++i) {
    const std::int64_t b = blocks.col_ptr[k] + i;
    if (blocks.sn[b] % grid.py != y) continue;
    flops += per_column * static_cast<double>(blocks.hi[b] - blocks.lo[b]);
    if (flops >= selinv_piece_flops) {
      bounds.push_back(i + 1);
      flops = 0.0;
    }
  }
  if (flops > 0.0 || bounds.size() == 1) bounds.push_back(nb);
  else bounds.back() = nb;  // blocks after the last column of C_y join the last piece
  return bounds;
}

std::vector<CommStats> selinv_stats_virtual(const SelinvPlan& plan, const TreeShape& shape, const Topology& topo) {
  std::vector<CommStats> out = tree_stats_virtual(plan.prepare.set, shape, topo, plan.prepare.role, selinv_steps);
  const std::vector<CommStats> b = tree_stats_virtual(plan.invert.set, shape, topo, plan.invert.role, selinv_steps);
  for (std::size_t r = 0; r < out.size(); ++r)
    for (int s = 0; s < selinv_steps; ++s) out[r].steps[s] += b[r].steps[s];
  return out;
}

}  // namespace commsolve
