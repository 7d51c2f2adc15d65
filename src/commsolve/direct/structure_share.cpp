#include "commsolve/direct/structure_share.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "commsolve/comm/all_to_all.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

// `s`'s O(n) arrays and separator tree, no rows (and no share).
SupernodalStructure without_rows(const SupernodalStructure& s) {
  SupernodalStructure out;
  out.n = s.n;
  out.parent = s.parent;
  out.sn_start = s.sn_start;
  out.post = s.post;
  out.perm = s.perm;
  out.tree = s.tree;
  return out;
}

}  // namespace

SupernodalStructure structure_share(const SupernodalStructure& whole, int px, int py, int x, int y) {
  whole.require_whole("structure_share");
  require(px >= 1 && py >= 1 && x >= 0 && x < px && y >= 0 && y < py,
          [&] {
            return "structure share: place (" + std::to_string(x) + ", " + std::to_string(y) + ") outside a " +
                   std::to_string(px) + " x " + std::to_string(py) + " grid";
          });
  const std::int64_t ns = whole.nsuper();
  const std::vector<std::int32_t> sn_of = supernode_of_columns(whole.sn_start);
  auto sh = std::make_shared<StructureShare>();
  sh->px = px;
  sh->py = py;
  sh->x = x;
  sh->y = y;
  sh->sn_parent = supernodal_etree(whole);
  sh->below.resize(static_cast<std::size_t>(ns));
  for (std::int64_t k = 0; k < ns; ++k) sh->below[k] = whole.rows_ptr[k + 1] - whole.rows_ptr[k];
  sh->rows_ptr.assign(1, 0);
  sh->cols_ptr.assign(1, 0);
  SupernodalStructure s = without_rows(whole);
  s.rows_ptr.assign(1, 0);
  std::vector<char> on_row(static_cast<std::size_t>(px)), on_col(static_cast<std::size_t>(py));
  std::vector<std::int32_t> xs, ys;
  for (std::int64_t k = 0; k < ns; ++k) {
    xs.clear();
    ys.clear();
    for (std::int64_t p = whole.rows_ptr[k], e = whole.rows_ptr[k + 1]; p < e;) {
      const std::int32_t i = sn_of[whole.rows[p]];
      std::int64_t q = p + 1;  // the block of rows in supernode i
      while (q < e && sn_of[whole.rows[q]] == i) ++q;
      const int ix = i % px, iy = i % py;
      if (!on_row[ix]) on_row[ix] = 1, xs.push_back(ix);
      if (!on_col[iy]) on_col[iy] = 1, ys.push_back(iy);
      if (ix == x || iy == y) s.rows.insert(s.rows.end(), whole.rows.begin() + p, whole.rows.begin() + q);
      p = q;
    }
    s.rows_ptr.push_back(static_cast<std::int64_t>(s.rows.size()));
    // Rank (x, y) takes part in K's broadcasts along its process row (to the columns ys) and
    // down its process column (to the rows xs) alike: where it holds or roots part of each
    // line, or neither.
    const bool in_row = on_row[x] || k % px == x, in_col = on_col[y] || k % py == y;
    for (std::int32_t r : xs) on_row[r] = 0;
    for (std::int32_t c : ys) on_col[c] = 0;
    if (in_row && in_col) {
      sh->rows.insert(sh->rows.end(), xs.begin(), xs.end());
      sh->cols.insert(sh->cols.end(), ys.begin(), ys.end());
    }
    sh->rows_ptr.push_back(static_cast<std::int64_t>(sh->rows.size()));
    sh->cols_ptr.push_back(static_cast<std::int64_t>(sh->cols.size()));
  }
  s.share = std::move(sh);
  return s;
}

SupernodalStructure gather_structure(MPI_Comm comm, const SupernodalStructure& share) {
  require(share.share != nullptr, "gather_structure: the structure is already whole");
  const StructureShare& h = *share.share;
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  const std::int64_t ns = share.nsuper();
  const std::vector<std::int32_t> sn_of = supernode_of_columns(share.sn_start);
  std::vector<std::int32_t> mine;  // [K, count, rows...] of the blocks of this process row, from (x, 0) of layer 0
  if (rank < h.px * h.py && h.y == 0)
    for (std::int64_t k = 0; k < ns; ++k) {
      const std::size_t at = mine.size();
      mine.insert(mine.end(), {static_cast<std::int32_t>(k), 0});
      for (std::int64_t p = share.rows_ptr[k]; p < share.rows_ptr[k + 1]; ++p)
        if (sn_of[share.rows[p]] % h.px == h.x) mine.push_back(share.rows[p]);
      mine[at + 1] = static_cast<std::int32_t>(mine.size() - at - 2);
      if (mine[at + 1] == 0) mine.resize(at);
    }
  const std::vector<std::int32_t> all = all_gather(comm, mine);
  std::vector<std::int64_t> count(static_cast<std::size_t>(ns) + 1, 0);
  for (std::size_t e = 0; e < all.size(); e += 2 + static_cast<std::size_t>(all[e + 1])) count[all[e] + 1] += all[e + 1];
  for (std::int64_t k = 0; k < ns; ++k) {
    require(count[k + 1] == h.below[k], [&] {
      return "gather_structure: supernode " + std::to_string(k) + " gathered " + std::to_string(count[k + 1]) +
             " rows of its " + std::to_string(h.below[k]) + " (the shares are not of one grid)";
    });
    count[k + 1] += count[k];
  }
  SupernodalStructure out = without_rows(share);
  out.rows_ptr = count;
  out.rows.resize(static_cast<std::size_t>(count[ns]));
  std::vector<std::int64_t> next(count.begin(), count.end() - 1);
  for (std::size_t e = 0; e < all.size(); e += 2 + static_cast<std::size_t>(all[e + 1])) {
    const std::int32_t k = all[e];
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(e) + 2,
              all.begin() + static_cast<std::ptrdiff_t>(e) + 2 + all[e + 1], out.rows.begin() + next[k]);
    next[k] += all[e + 1];
  }
  for (std::int64_t k = 0; k < ns; ++k) std::sort(out.rows.begin() + out.rows_ptr[k], out.rows.begin() + out.rows_ptr[k + 1]);
  out.validate();
  return out;
}

void check_share_of(const SupernodalStructure& sym, int px, int py, int x, int y, const std::string& who) {
  if (!sym.share) return;
  const StructureShare& h = *sym.share;
  require(h.px == px && h.py == py && h.x == x && h.y == y, [&] {
    return who + ": the share of place (" + std::to_string(h.x) + ", " + std::to_string(h.y) + ") on a " +
           std::to_string(h.px) + " x " + std::to_string(h.py) + " layer, read at place (" + std::to_string(x) +
           ", " + std::to_string(y) + ") on a " + std::to_string(px) + " x " + std::to_string(py) + " one";
  });
}

}  // namespace commsolve
