#include "direct/symbolic.hpp"

#include <metis.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace commsolve {

std::int64_t SupernodalStructure::nnz_L() const {
  std::int64_t total = 0;
  for (std::size_t s = 0; s + 1 < sn_start.size(); ++s) {
    std::int64_t w = sn_start[s + 1] - sn_start[s];
    total += w * (w + 1) / 2 + w * (rows_ptr[s + 1] - rows_ptr[s]);
  }
  return total;
}

SupernodalStructure symbolic_cholesky(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices,
                                      int max_size, const std::vector<std::int64_t>& breaks, double relax) {
  require(max_size >= 1, "symbolic: max supernode size must be at least 1");
  SupernodalStructure f;
  f.n = n;
  f.parent.assign(n, -1);
  // Elimination tree (Liu): for each column j, every k < j with A(k, j) != 0 climbs to its
  // root, whose parent becomes j; `ancestor` compresses the paths.
  std::vector<int> ancestor(n, -1);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p) {
      std::int64_t k = indices[p];
      if (k < 0 || k >= n) throw std::invalid_argument("symbolic: index outside the matrix");
      while (k != -1 && k < j) {
        std::int64_t next = ancestor[k];
        ancestor[k] = static_cast<int>(j);
        if (next == -1) f.parent[k] = static_cast<int>(j);
        k = next;
      }
    }
  // Column structures below the diagonal: own entries plus children's minus the child itself.
  std::vector<std::vector<std::int32_t>> colstruct(n);
  std::vector<int> nchildren(n, 0);
  for (std::int64_t j = 0; j < n; ++j)
    if (f.parent[j] >= 0) ++nchildren[f.parent[j]];
  for (std::int64_t j = 0; j < n; ++j) {
    std::vector<std::int32_t>& s = colstruct[j];
    for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p)
      if (indices[p] > j) s.push_back(indices[p]);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    if (f.parent[j] >= 0) {  // hand this structure up (the parent is always a later column)
      std::vector<std::int32_t>& up = colstruct[f.parent[j]];
      for (std::int32_t r : s)
        if (r != f.parent[j]) up.push_back(r);
    }
  }
  // Fundamental supernodes: j+1 continues j's supernode when it is j's parent, j is its only
  // child, and the structures nest (|struct(j)| = |struct(j+1)| + 1).
  f.sn_start.push_back(0);
  auto next_break = breaks.begin();
  for (std::int64_t j = 1; j < n; ++j) {
    bool chain = f.parent[j - 1] == j && nchildren[j] == 1 && colstruct[j - 1].size() == colstruct[j].size() + 1;
    while (next_break != breaks.end() && *next_break < j) ++next_break;
    bool forced = next_break != breaks.end() && *next_break == j;
    if (!chain || forced || j - f.sn_start.back() >= max_size) f.sn_start.push_back(j);
  }
  f.sn_start.push_back(n);
  // Relaxed amalgamation along chains of consecutive supernodes: s joins s+1 when s+1 is its
  // parent (its first row below), no break separates them, and few zeros are added.
  if (relax > 0.0) {
    std::vector<std::int64_t> merged{0};
    std::int64_t zeros = 0;  // explicit zeros already stored in the current group
    for (std::size_t s = 0; s + 2 < f.sn_start.size(); ++s) {
      const std::int64_t g0 = merged.back(), g1 = f.sn_start[s + 1], p1 = f.sn_start[s + 2];
      const std::int64_t wg = g1 - g0, wp = p1 - g1;
      // A group stores the rows of its last column (its columns' structures nest into it).
      const std::int64_t rg = static_cast<std::int64_t>(colstruct[g1 - 1].size());
      const std::int64_t rp = static_cast<std::int64_t>(colstruct[p1 - 1].size());
      const bool is_parent = f.parent[g1 - 1] >= g1 && f.parent[g1 - 1] < p1;
      const bool broken = std::binary_search(breaks.begin(), breaks.end(), g1);
      const std::int64_t before = wg * wg + 2 * wg * rg + wp * wp + 2 * wp * rp;
      const std::int64_t after = (wg + wp) * (wg + wp) + 2 * (wg + wp) * rp;
      const std::int64_t new_zeros = zeros + (after - before);
      const bool cheap = wg + wp <= 4 || static_cast<double>(new_zeros) <= relax * static_cast<double>(after);
      if (is_parent && !broken && wg + wp <= max_size && cheap) {
        zeros = new_zeros;  // s's group continues into s+1
      } else {
        merged.push_back(g1);
        zeros = 0;
      }
    }
    merged.push_back(n);
    f.sn_start = std::move(merged);
  }
  f.rows_ptr.push_back(0);
  for (std::size_t s = 0; s + 1 < f.sn_start.size(); ++s) {
    const std::int64_t last = f.sn_start[s + 1] - 1;
    // The last column's structure holds the whole group's rows below (parents absorb children).
    for (std::int32_t r : colstruct[last])
      if (r > last) f.rows.push_back(r);
    f.rows_ptr.push_back(static_cast<std::int64_t>(f.rows.size()));
  }
  return f;
}

std::vector<std::int32_t> metis_nested_dissection(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy) {
  std::vector<std::int32_t> perm(n), iperm(n);
  if (n == 0) return perm;
  idx_t nv = static_cast<idx_t>(n);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  int status = METIS_NodeND(&nv, const_cast<idx_t*>(xadj), const_cast<idx_t*>(adjncy), nullptr, options, perm.data(),
                            iperm.data());
  if (status != METIS_OK) throw std::runtime_error("METIS_NodeND failed with status " + std::to_string(status));
  return perm;
}

}  // namespace commsolve
