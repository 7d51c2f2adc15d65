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
                                      int max_size, const std::vector<std::int64_t>& breaks) {
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
  f.rows_ptr.push_back(0);
  for (std::size_t s = 0; s + 1 < f.sn_start.size(); ++s) {
    const std::int64_t last = f.sn_start[s + 1] - 1;
    for (std::int32_t r : colstruct[f.sn_start[s]])
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
