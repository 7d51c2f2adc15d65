#include "commsolve/direct/block_layout.hpp"

#include <algorithm>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/structure_share.hpp"

namespace commsolve {

SupernodeBlocks supernode_blocks(const SupernodalStructure& sym) {
  const std::size_t ns = sym.sn_start.size() - 1;
  const std::vector<std::int32_t> sn_of = supernode_of_columns(sym.sn_start);
  SupernodeBlocks b;
  b.col_ptr.push_back(0);
  for (std::size_t k = 0; k < ns; ++k) {
    const std::int64_t base = sym.rows_ptr[k], r = sym.rows_ptr[k + 1] - base;
    for (std::int64_t a = 0; a < r;) {
      const std::int32_t i = sn_of[sym.rows[base + a]];
      std::int64_t e = a + 1;
      while (e < r && sn_of[sym.rows[base + e]] == i) ++e;
      b.sn.push_back(i);
      b.col.push_back(static_cast<std::int32_t>(k));
      b.lo.push_back(a);
      b.hi.push_back(e);
      a = e;
    }
    b.col_ptr.push_back(static_cast<std::int64_t>(b.sn.size()));
  }
  // Row lists by counting sort: blocks were made in ascending K, so each row's list is too.
  b.row_ptr.assign(ns + 1, 0);
  for (std::int32_t i : b.sn) ++b.row_ptr[i + 1];
  for (std::size_t i = 0; i < ns; ++i) b.row_ptr[i + 1] += b.row_ptr[i];
  b.row_blocks.resize(b.size());
  std::vector<std::int64_t> next(b.row_ptr.begin(), b.row_ptr.end() - 1);
  for (std::size_t k = 0; k < b.size(); ++k) b.row_blocks[next[b.sn[k]]++] = static_cast<std::int64_t>(k);
  return b;
}

CollectiveSet triangular_solve_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                           const ProcessGrid2D& grid, bool upper) {
  return phase_collectives(sym, blocks, grid, upper, {}, {});
}

CollectiveSet phase_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                const ProcessGrid2D& grid, bool upper, const std::vector<char>& solve,
                                const std::vector<char>& context, SyncParts sync) {
  require(grid.px >= 1 && grid.py >= 1,
          "grid must be positive, got " + std::to_string(grid.px) + " x " + std::to_string(grid.py));
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  require(solve.empty() || static_cast<std::int64_t>(solve.size()) == ns, "solve phase: mask of the wrong size");
  require(context.empty() || static_cast<std::int64_t>(context.size()) == ns, "solve phase: context of the wrong size");
  auto solved = [&](std::int64_t k) { return solve.empty() || solve[k] != 0; };
  auto in_context = [&](std::int64_t k) { return !context.empty() && context[k] != 0 && !solved(k); };
  // On a share (structure_share.hpp) only the collectives this rank takes part in. Those of
  // a column K's blocks take their participants from the share's lists of K's process rows
  // (L) or columns (U), in the order of K's rows as the blocks give them; those of a row K's
  // blocks from the blocks, which every rank of K's process row and column holds.
  const StructureShare* share = sym.share.get();
  if (share)
    require(share->px == grid.px && share->py == grid.py, "solve phase: a share of a " + std::to_string(share->px) +
                                                              " x " + std::to_string(share->py) + " grid on a " +
                                                              std::to_string(grid.px) + " x " +
                                                              std::to_string(grid.py) + " one");
  const int me = share ? grid.rank_of(share->x, share->y) : -1;
  CollectiveSet set;
  std::vector<int> part;
  std::vector<std::int64_t> seen;  // per rank: the last collective that listed it
  // Block k's owner: L(I, K) on (I, K); U(K, I) on (K, I).
  auto owner = [&](std::int64_t k) {
    return upper ? grid.owner(blocks.col[k], blocks.sn[k]) : grid.owner(blocks.sn[k], blocks.col[k]);
  };
  auto add = [&](std::int64_t id, CollectiveKind kind, std::int64_t k) {
    const int root = grid.diag_owner(k);
    if (sync.covers(solved(k))) {  // broadcasts down K's process column, reductions along its process row
      part.clear();
      const bool column = kind == CollectiveKind::broadcast;
      for (int q = 0; q < (column ? grid.px : grid.py); ++q)
        part.push_back(column ? grid.rank_of(q, k % grid.py) : grid.rank_of(k % grid.px, q));
    }
    // Participants in need order, as SuperLU_DIST orders its trees' ranks: a broadcast's by
    // the first supernode each needs the solution for (L: ascending rows; U, solved
    // downwards: descending), a reduction's latest contributor first (L: descending columns;
    // U: ascending rows). The blocks were listed ascending: reversed for an L reduction and a
    // U broadcast, each rank kept where it first appears. Only need-ordered trees read the
    // order; the other shapes sort the participants themselves.
    if (upper != (kind == CollectiveKind::reduce)) std::reverse(part.begin(), part.end());
    std::size_t kept = 0;
    for (int p : part) {
      if (static_cast<std::size_t>(p) >= seen.size()) seen.resize(static_cast<std::size_t>(p) + 1, -1);
      if (seen[p] == id) continue;
      seen[p] = id;
      part[kept++] = p;
    }
    part.resize(kept);
    if (share && root != me && std::find(part.begin(), part.end(), me) == part.end()) {
      part.clear();
      return;
    }
    set.id.push_back(id);
    set.kind.push_back(static_cast<std::int8_t>(kind));
    set.root.push_back(root);
    set.part.push_back(root);
    for (int p : part)
      if (p != root) set.part.push_back(p);
    set.part_ptr.push_back(static_cast<std::int64_t>(set.part.size()));
    set.count.push_back(sym.sn_start[k + 1] - sym.sn_start[k]);
    part.clear();
  };
  // The blocks of column K belong to solved K; those of row K are filtered by their column.
  auto column = [&](std::int64_t k) {
    if (!share) {
      for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) part.push_back(owner(b));
    } else if (upper) {  // U(K, J) on (K mod px, J mod py)
      for (std::int64_t p = share->cols_ptr[k]; p < share->cols_ptr[k + 1]; ++p)
        part.push_back(grid.rank_of(k % grid.px, share->cols[p]));
    } else {  // L(I, K) on (I mod px, K mod py)
      for (std::int64_t p = share->rows_ptr[k]; p < share->rows_ptr[k + 1]; ++p)
        part.push_back(grid.rank_of(share->rows[p], k % grid.py));
    }
  };
  auto row = [&](std::int64_t k) {
    for (std::int64_t p = blocks.row_ptr[k]; p < blocks.row_ptr[k + 1]; ++p) {
      const std::int64_t b = blocks.row_blocks[p];
      if (solved(blocks.col[b])) part.push_back(owner(b));
    }
  };
  // Who uses supernode K's solution: in the L-solve the blocks of column K, in the U-solve
  // those of row K; who adds to K's sum: the other one. A context supernode takes part only
  // through its row (L: its partial sum; U: its known solution), and only if a block does.
  const std::int64_t id0 = upper ? 2 * ns : 0;
  for (std::int64_t k = 0; k < ns; ++k) {
    if (solved(k)) {
      upper ? row(k) : column(k);
      add(id0 + k, CollectiveKind::broadcast, k);
    } else if (upper && in_context(k)) {
      row(k);
      if (!part.empty()) add(id0 + k, CollectiveKind::broadcast, k);
    }
  }
  for (std::int64_t k = 0; k < ns; ++k) {
    if (solved(k)) {
      upper ? column(k) : row(k);
      add(id0 + ns + k, CollectiveKind::reduce, k);
    } else if (!upper && in_context(k)) {
      row(k);
      if (!part.empty()) add(id0 + ns + k, CollectiveKind::reduce, k);
    }
  }
  return set;
}

namespace {

// Appends the blocks of the wanted ranks (want[r - grid.base]) to their layouts, in the
// order the layouts list them: diagonal blocks, L columns, U sources.
void build_layouts(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                   const std::vector<char>& mask, const std::vector<char>& want, std::vector<LocalLayout2D>& out) {
  const std::size_t ns = sym.sn_start.size() - 1;
  require(mask.empty() || mask.size() == ns, "layout: mask of the wrong size");
  auto width = [&](std::int64_t s) { return sym.sn_start[s + 1] - sym.sn_start[s]; };
  auto held = [&](std::int64_t k) { return mask.empty() || mask[k] != 0; };
  auto at = [&](int rank) -> LocalLayout2D* { return want[rank - grid.base] ? &out[rank - grid.base] : nullptr; };
  for (auto& l : out) {
    l.l_ptr.assign(1, 0);
    l.u_ptr.assign(1, 0);
  }
  for (std::size_t k = 0; k < ns; ++k)
    if (held(static_cast<std::int64_t>(k)))
      if (LocalLayout2D* l = at(grid.diag_owner(static_cast<std::int64_t>(k)))) {
        l->diag_sn.push_back(static_cast<std::int32_t>(k));
        l->diag_off.push_back(l->total);
        l->total += 2 * width(static_cast<std::int64_t>(k)) * width(static_cast<std::int64_t>(k));
      }
  // A column's blocks live on one process column; open a panel on a rank at its first block.
  std::vector<std::int64_t> rows(out.size(), 0);
  for (std::size_t k = 0; k < ns; ++k) {
    if (!held(static_cast<std::int64_t>(k))) continue;
    std::vector<int> touched;
    for (std::int64_t b = blocks.col_ptr[k]; b < blocks.col_ptr[k + 1]; ++b) {
      const int r = grid.owner(blocks.sn[b], blocks.col[b]);
      LocalLayout2D* l = at(r);
      if (!l) continue;
      if (l->l_col.empty() || l->l_col.back() != static_cast<std::int32_t>(k)) {
        l->l_col.push_back(static_cast<std::int32_t>(k));
        touched.push_back(r);
        rows[r - grid.base] = 0;
      }
      l->l_block.push_back(b);
      l->l_row.push_back(rows[r - grid.base]);
      rows[r - grid.base] += blocks.hi[b] - blocks.lo[b];
    }
    for (int r : touched) {
      LocalLayout2D& l = out[r - grid.base];
      l.l_ptr.push_back(static_cast<std::int64_t>(l.l_block.size()));
      l.l_panel.push_back(l.total);
      l.l_rows.push_back(rows[r - grid.base]);
      l.total += rows[r - grid.base] * width(static_cast<std::int64_t>(k));
    }
  }
  for (std::size_t j = 0; j < ns; ++j) {
    for (std::int64_t p = blocks.row_ptr[j]; p < blocks.row_ptr[j + 1]; ++p) {
      const std::int64_t b = blocks.row_blocks[p];
      if (!held(blocks.col[b])) continue;
      LocalLayout2D* l = at(grid.owner(blocks.col[b], blocks.sn[b]));
      if (!l) continue;
      if (l->u_src.empty() || l->u_src.back() != static_cast<std::int32_t>(j)) {
        if (!l->u_src.empty()) l->u_ptr.push_back(static_cast<std::int64_t>(l->u_block.size()));
        l->u_src.push_back(static_cast<std::int32_t>(j));
      }
      l->u_block.push_back(b);
      l->u_off.push_back(l->total);
      l->total += (blocks.hi[b] - blocks.lo[b]) * width(blocks.col[b]);
    }
  }
  for (auto& l : out)
    if (!l.u_src.empty()) l.u_ptr.push_back(static_cast<std::int64_t>(l.u_block.size()));
}

}  // namespace

LocalLayout2D local_layout_2d(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                              int rank, const std::vector<char>& mask) {
  require(grid.contains(rank), "layout: rank " + std::to_string(rank) + " outside the grid");
  std::vector<LocalLayout2D> out(static_cast<std::size_t>(grid.size()));
  std::vector<char> want(static_cast<std::size_t>(grid.size()), 0);
  want[rank - grid.base] = 1;
  build_layouts(sym, blocks, grid, mask, want, out);
  return std::move(out[rank - grid.base]);
}

std::vector<LocalLayout2D> local_layouts_2d(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                            const ProcessGrid2D& grid, const std::vector<char>& mask) {
  sym.require_whole("every rank's layout");
  std::vector<LocalLayout2D> out(static_cast<std::size_t>(grid.size()));
  build_layouts(sym, blocks, grid, mask, std::vector<char>(static_cast<std::size_t>(grid.size()), 1), out);
  return out;
}

}  // namespace commsolve
