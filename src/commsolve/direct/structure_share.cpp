#include "commsolve/direct/structure_share.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

SupernodalStructure structure_share(const SupernodalStructure& whole, int px, int py, int x, int y) {
  whole.require_whole("structure_share");
  require(px >= 1 && py >= 1 && x >= 0 && x < px && y >= 0 && y < py,
          [&] {
            return "structure share: place (" + std::to_string(x) + ", " + std::to_string(y) + ") outside a " +
                   std::to_string(px) + " x " + std::to_string(py) + " grid";
          });
  const std::int64_t ns = whole.nsuper();
  std::vector<std::int32_t> sn_of(static_cast<std::size_t>(whole.n));
  for (std::int64_t s = 0; s < ns; ++s)
    std::fill(sn_of.begin() + whole.sn_start[s], sn_of.begin() + whole.sn_start[s + 1], static_cast<std::int32_t>(s));
  auto sh = std::make_shared<StructureShare>();
  sh->px = px;
  sh->py = py;
  sh->x = x;
  sh->y = y;
  sh->sn_parent = supernodal_etree(whole);
  sh->rows_ptr.assign(1, 0);
  sh->cols_ptr.assign(1, 0);
  SupernodalStructure s;
  s.n = whole.n;
  s.parent = whole.parent;
  s.sn_start = whole.sn_start;
  s.post = whole.post;
  s.perm = whole.perm;
  s.tree = whole.tree;
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
    for (std::int32_t r : xs) on_row[r] = 0;
    for (std::int32_t c : ys) on_col[c] = 0;
    std::sort(xs.begin(), xs.end());
    std::sort(ys.begin(), ys.end());
    // Rank (x, y) takes part in K's broadcast along its process row (to the columns ys) and
    // in the one down its process column (to the rows xs) alike: where it holds or roots
    // part of each line, or neither.
    const bool in_row = std::binary_search(xs.begin(), xs.end(), x) || k % px == x;
    const bool in_col = std::binary_search(ys.begin(), ys.end(), y) || k % py == y;
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

}  // namespace commsolve
