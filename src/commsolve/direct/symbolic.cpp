#include "commsolve/direct/symbolic.hpp"

#include <metis.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/parallel_ordering.hpp"
#include "commsolve/direct/structure_share.hpp"

namespace commsolve {

void SupernodalStructure::require_whole(const std::string& who) const {
  if (share)
    throw std::invalid_argument(who + " needs the whole supernodal structure, not rank (" + std::to_string(share->x) +
                                ", " + std::to_string(share->y) + ")'s share of it");
}

std::int64_t SupernodalStructure::rows_below(std::int64_t k) const {
  return share ? share->below[k] : rows_ptr[k + 1] - rows_ptr[k];
}

std::int64_t SupernodalStructure::nnz_L() const {
  require_whole("nnz_L");
  std::int64_t total = 0;
  for (std::size_t s = 0; s + 1 < sn_start.size(); ++s) {
    std::int64_t w = sn_start[s + 1] - sn_start[s];
    total += w * (w + 1) / 2 + w * (rows_ptr[s + 1] - rows_ptr[s]);
  }
  return total;
}

void SupernodalStructure::validate() const {
  require(sn_start.size() >= 2 && sn_start.front() == 0 && sn_start.back() == n && n >= 1,
          "supernodal structure: sn_start must run from 0 to n >= 1");
  for (std::size_t s = 0; s + 1 < sn_start.size(); ++s)
    require(sn_start[s] < sn_start[s + 1],
            [&] { return "supernodal structure: supernode " + std::to_string(s) + " is empty"; });
  require(rows_ptr.size() == sn_start.size() && rows_ptr.front() == 0 &&
              rows_ptr.back() == static_cast<std::int64_t>(rows.size()),
          "supernodal structure: sn_start, rows_ptr and rows disagree");
  for (std::size_t s = 0; s + 1 < rows_ptr.size(); ++s)
    require(rows_ptr[s] <= rows_ptr[s + 1],
            [&] { return "supernodal structure: rows_ptr decreases at supernode " + std::to_string(s); });
  for (std::size_t s = 0; s + 1 < rows_ptr.size(); ++s)  // below the supernode's columns, ascending
    for (std::int64_t p = rows_ptr[s]; p < rows_ptr[s + 1]; ++p)
      if (rows[p] < sn_start[s + 1] || rows[p] >= n || (p > rows_ptr[s] && rows[p] <= rows[p - 1]))
        throw std::invalid_argument("supernodal structure: the rows below supernode " + std::to_string(s) +
                                    " must lie below its columns, inside [0, n), ascending");
  require(perm.empty() || static_cast<std::int64_t>(perm.size()) == n,
          "supernodal structure: perm must have one entry per unknown");
  std::vector<char> seen(perm.size(), 0);
  for (std::int32_t p : perm) {
    require(p >= 0 && p < n && !seen[p], "supernodal structure: perm is not a permutation");
    seen[p] = 1;
  }
}

const std::vector<std::string>& ordering_names() {
  static const std::vector<std::string> names = {"auto", "nd", "tree", "ptscotch", "ptscotch-metis", "natural"};
  return names;
}

void SymbolicOptions::check() const {
  const auto& known = ordering_names();
  if (std::find(known.begin(), known.end(), ordering) == known.end()) {
    std::string list;
    for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
    throw std::invalid_argument("unknown ordering '" + ordering + "' (known: " + list + ")");
  }
  require(max_supernode >= 1, "max_supernode must be at least 1, got " + std::to_string(max_supernode));
  require(levels >= 0, "levels must be >= 0, got " + std::to_string(levels));
  require(relax >= 0, "relax must be >= 0, got " + std::to_string(relax));
  require(relax_subtree >= 0, "relax_subtree must be >= 0, got " + std::to_string(relax_subtree));
}

namespace {

std::vector<int> elimination_tree(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices) {
  // Liu's algorithm: for each column j, every k < j with A(k, j) != 0 climbs to its root,
  // whose parent becomes j; `ancestor` compresses the paths.
  std::vector<int> parent(n, -1), ancestor(n, -1);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p) {
      std::int64_t k = indices[p];
      if (k < 0 || k >= n) throw std::invalid_argument("symbolic: index outside the matrix");
      while (k != -1 && k < j) {
        std::int64_t next = ancestor[k];
        ancestor[k] = static_cast<int>(j);
        if (next == -1) parent[k] = static_cast<int>(j);
        k = next;
      }
    }
  return parent;
}

// Each column's count of rows of L below the diagonal, for the full symmetric pattern
// `indptr`/`indices` (diagonal optional) and its elimination tree `parent` (parent > child):
// the row subtrees' leaves and least common ancestors found with a disjoint-set forest
// (Gilbert, Ng and Peyton's algorithm), O(nnz(A)) steps where walking every row subtree
// takes O(nnz(L)).
std::vector<std::int64_t> column_counts(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices,
                                        const std::vector<int>& parent) {
  const std::vector<std::int64_t> post = forest_postorder(parent);
  std::vector<std::int64_t> first(n, -1), delta(n, 0), max_first(n, -1), prev_leaf(n, -1), ancestor(n);
  for (std::int64_t k = 0; k < n; ++k) {  // first[j]: the first descendant of j, in postorder
    std::int64_t j = post[k];
    delta[j] = first[j] == -1 ? 1 : 0;    // a leaf of the tree counts its own diagonal
    for (; j != -1 && first[j] == -1; j = parent[j]) first[j] = k;
  }
  std::iota(ancestor.begin(), ancestor.end(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t j = post[k];
    if (parent[j] != -1) --delta[parent[j]];
    for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p) {
      const std::int64_t i = indices[p];
      // Is j a leaf of row i's subtree (A(i, j) with i > j, no earlier leaf below j)?
      if (i <= j || first[j] <= max_first[i]) continue;
      max_first[i] = first[j];
      const std::int64_t previous = prev_leaf[i];
      prev_leaf[i] = j;
      ++delta[j];
      if (previous == -1) continue;  // the subtree's first leaf
      std::int64_t q = previous;     // the least common ancestor of the previous leaf and j
      while (q != ancestor[q]) q = ancestor[q];
      for (std::int64_t s = previous; s != q;) {
        const std::int64_t up = ancestor[s];
        ancestor[s] = q;
        s = up;
      }
      --delta[q];
    }
    if (parent[j] != -1) ancestor[j] = parent[j];
  }
  for (std::int64_t j = 0; j < n; ++j)  // a column's count: its subtree's deltas (children first)
    if (parent[j] != -1) delta[parent[j]] += delta[j];
  for (std::int64_t& c : delta) --c;    // below the diagonal
  return delta;
}

// The elimination forest cut at the `breaks`: a parent outside the child's range (between
// consecutive breaks) counts as none. What a range's own computation sees, so that a leaf of
// the separator tree can be analysed alone (parallel_symbolic.hpp).
std::vector<std::int32_t> range_forest(const std::vector<int>& parent, const std::vector<std::int64_t>& breaks) {
  const std::size_t n = parent.size();
  std::vector<std::int32_t> local(n, -1);
  auto b = breaks.begin();
  for (std::size_t j = 0; j < n; ++j) {
    while (b != breaks.end() && *b <= static_cast<std::int64_t>(j)) ++b;
    const std::int64_t range_end = b == breaks.end() ? static_cast<std::int64_t>(n) : *b;
    if (parent[j] >= 0 && parent[j] < range_end) local[j] = parent[j];
  }
  return local;
}

// Postorder of the elimination forest inside each range between consecutive `breaks`,
// children in ascending original order. A topological order of the tree, so the fill is
// unchanged, and every range keeps its columns.
std::vector<std::int32_t> postorder(const std::vector<int>& parent, const std::vector<std::int64_t>& breaks) {
  const std::vector<std::int64_t> order = forest_postorder(range_forest(parent, breaks));
  return std::vector<std::int32_t>(order.begin(), order.end());
}

}  // namespace

std::vector<std::int32_t> supernode_of_columns(const std::vector<std::int64_t>& sn_start) {
  std::vector<std::int32_t> sn_of(sn_start.empty() ? 0 : static_cast<std::size_t>(sn_start.back()));
  for (std::size_t s = 0; s + 1 < sn_start.size(); ++s)
    std::fill(sn_of.begin() + sn_start[s], sn_of.begin() + sn_start[s + 1], static_cast<std::int32_t>(s));
  return sn_of;
}

std::vector<std::int32_t> supernodal_etree(const SupernodalStructure& sym) {
  if (sym.share) return sym.share->sn_parent;
  const std::size_t ns = sym.sn_start.size() - 1;
  const std::vector<std::int32_t> sn_of = supernode_of_columns(sym.sn_start);
  std::vector<std::int32_t> parent(ns, -1);
  for (std::size_t s = 0; s < ns; ++s)
    if (sym.rows_ptr[s + 1] > sym.rows_ptr[s]) parent[s] = sn_of[sym.rows[sym.rows_ptr[s]]];
  return parent;
}

std::vector<std::int64_t> forest_postorder(const std::vector<std::int32_t>& parent) {
  const std::size_t n = parent.size();
  std::vector<std::int64_t> head(n, -1), next(n, -1), order, stack;
  order.reserve(n);
  for (std::size_t j = n; j-- > 0;)  // child lists in ascending order
    if (parent[j] >= 0) {
      next[j] = head[parent[j]];
      head[parent[j]] = static_cast<std::int64_t>(j);
    }
  for (std::size_t root = 0; root < n; ++root) {
    if (parent[root] >= 0) continue;
    stack.push_back(static_cast<std::int64_t>(root));
    while (!stack.empty()) {
      const std::int64_t v = stack.back();
      if (head[v] >= 0) {  // descend into the next unvisited child
        const std::int64_t c = head[v];
        head[v] = next[c];
        stack.push_back(c);
      } else {
        order.push_back(v);
        stack.pop_back();
      }
    }
  }
  return order;
}

SupernodalStructure symbolic_cholesky(std::int64_t n, const std::int32_t* indptr_in, const std::int32_t* indices_in,
                                      int max_size, const std::vector<std::int64_t>& breaks, double relax,
                                      int relax_subtree) {
  require(max_size >= 1, "symbolic: max supernode size must be at least 1");
  require(n >= 1, "symbolic: the matrix has no rows (0 x 0): nothing to factor");
  SupernodalStructure f;
  f.n = n;
  const std::int32_t* indptr = indptr_in;
  const std::int32_t* indices = indices_in;
  std::vector<std::int32_t> p_indptr, p_indices;
  if (relax_subtree > 0) {  // renumber in postorder (the elimination tree is unchanged in shape)
    f.post = postorder(elimination_tree(n, indptr_in, indices_in), breaks);
    std::vector<std::int32_t> inv(n);
    for (std::int64_t k = 0; k < n; ++k) inv[f.post[k]] = static_cast<std::int32_t>(k);
    p_indptr.assign(1, 0);
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int32_t c = f.post[k];
      const std::size_t start = p_indices.size();
      for (std::int32_t p = indptr_in[c]; p < indptr_in[c + 1]; ++p) p_indices.push_back(inv[indices_in[p]]);
      std::sort(p_indices.begin() + static_cast<std::ptrdiff_t>(start), p_indices.end());
      p_indptr.push_back(static_cast<std::int32_t>(p_indices.size()));
    }
    indptr = p_indptr.data();
    indices = p_indices.data();
  } else {
    f.post.resize(n);
    for (std::int64_t k = 0; k < n; ++k) f.post[k] = static_cast<std::int32_t>(k);
  }
  f.parent = elimination_tree(n, indptr, indices);
  const std::vector<std::int64_t> count = column_counts(n, indptr, indices, f.parent);
  std::vector<int> nchildren(n, 0);
  for (std::int64_t j = 0; j < n; ++j)
    if (f.parent[j] >= 0) ++nchildren[f.parent[j]];
  // Fundamental supernodes: j+1 continues j's supernode when it is j's parent, j is its only
  // child, and the structures nest (|struct(j)| = |struct(j+1)| + 1).
  f.sn_start.push_back(0);
  auto next_break = breaks.begin();
  for (std::int64_t j = 1; j < n; ++j) {
    bool chain = f.parent[j - 1] == j && nchildren[j] == 1 && count[j - 1] == count[j] + 1;
    while (next_break != breaks.end() && *next_break < j) ++next_break;
    bool forced = next_break != breaks.end() && *next_break == j;
    if (!chain || forced || j - f.sn_start.back() >= max_size) f.sn_start.push_back(j);
  }
  f.sn_start.push_back(n);
  if (relax_subtree > 0) {
    // Every maximal subtree of at most relax_subtree (and max_size) columns of the forest cut
    // at the breaks (contiguous in its postorder, inside one range) becomes one supernode.
    const std::vector<std::int32_t> cut = range_forest(f.parent, breaks);
    std::vector<std::int64_t> size(n, 1);
    for (std::int64_t j = 0; j < n; ++j)
      if (cut[j] >= 0) size[cut[j]] += size[j];
    std::vector<char> start(n + 1, 0);
    for (std::int64_t s0 : f.sn_start) start[s0] = 1;
    const std::int64_t cap = std::min<std::int64_t>(relax_subtree, max_size);
    for (std::int64_t j = 0; j < n; ++j) {
      const bool root = size[j] <= cap && (cut[j] < 0 || size[cut[j]] > cap);
      if (!root || size[j] < 2) continue;
      const std::int64_t a = j - size[j] + 1;
      start[a] = 1;
      for (std::int64_t c = a + 1; c <= j; ++c) start[c] = 0;
      start[j + 1] = 1;
    }
    f.sn_start.clear();
    for (std::int64_t c = 0; c <= n; ++c)
      if (start[c] || c == n) f.sn_start.push_back(c);
  }
  // Relaxed amalgamation along chains of consecutive supernodes: s joins s+1 when s+1 is its
  // parent (its first row below), no break separates them, and few zeros are added.
  if (relax > 0.0) {
    std::vector<std::int64_t> merged{0};
    std::int64_t zeros = 0;  // explicit zeros already stored in the current group
    for (std::size_t s = 0; s + 2 < f.sn_start.size(); ++s) {
      const std::int64_t g0 = merged.back(), g1 = f.sn_start[s + 1], p1 = f.sn_start[s + 2];
      const std::int64_t wg = g1 - g0, wp = p1 - g1;
      // A group stores the rows of its last column (its columns' structures nest into it).
      const std::int64_t rg = count[g1 - 1], rp = count[p1 - 1];
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
  // Rows below each supernode: the union of its columns' entries of A past its last column
  // and of its child supernodes' rows past it. A supernode is a connected piece of the etree
  // rooted at its last column, so this is that column's structure.
  const std::size_t ns = f.sn_start.size() - 1;
  std::vector<std::int64_t> sn_of(n);
  for (std::size_t s = 0; s < ns; ++s)
    for (std::int64_t j = f.sn_start[s]; j < f.sn_start[s + 1]; ++j) sn_of[j] = static_cast<std::int64_t>(s);
  std::vector<std::int64_t> head(ns, -1), next(ns, -1);  // child supernodes, as linked lists
  std::vector<std::int64_t> mark(n, -1);
  f.rows_ptr.assign(1, 0);
  for (std::size_t s = 0; s < ns; ++s) {
    const std::int64_t first = f.sn_start[s], last = f.sn_start[s + 1] - 1;
    const std::size_t start = f.rows.size();
    auto take = [&](std::int64_t r) {
      if (r > last && mark[r] != static_cast<std::int64_t>(s)) {
        mark[r] = static_cast<std::int64_t>(s);
        f.rows.push_back(static_cast<std::int32_t>(r));
      }
    };
    for (std::int64_t j = first; j <= last; ++j)
      for (std::int32_t p = indptr[j]; p < indptr[j + 1]; ++p) take(indices[p]);
    for (std::int64_t c = head[s]; c >= 0; c = next[c])
      for (std::int64_t p = f.rows_ptr[c]; p < f.rows_ptr[c + 1]; ++p) take(f.rows[p]);
    std::sort(f.rows.begin() + static_cast<std::ptrdiff_t>(start), f.rows.end());
    f.rows_ptr.push_back(static_cast<std::int64_t>(f.rows.size()));
    if (f.rows.size() > start) {  // the parent supernode holds the first row below
      const std::int64_t ps = sn_of[f.rows[start]];
      next[s] = head[ps];
      head[ps] = static_cast<std::int64_t>(s);
    }
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

std::vector<std::int64_t> node_starts(const SeparatorTree& tree) {
  std::vector<std::int64_t> breaks(tree.col_start.begin(), tree.col_start.end());
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  return breaks;
}

void attach_tree(SupernodalStructure& s, SeparatorTree tree) {
  tree.perm.clear();
  tree.sn_first.clear();
  tree.sn_last.clear();
  auto first = [&](std::int64_t col) {
    return std::lower_bound(s.sn_start.begin(), s.sn_start.end(), col) - s.sn_start.begin();
  };
  for (std::size_t k = 0; k < tree.col_start.size(); ++k) {  // each node's supernodes
    tree.sn_first.push_back(first(tree.col_start[k]));
    tree.sn_last.push_back(first(tree.col_end[k]));
  }
  s.tree = std::move(tree);
}

namespace {

// A lap timer writing each part's seconds into SymbolicTimes.
class Laps {
 public:
  explicit Laps(SymbolicTimes* times) : times_(times), t_(std::chrono::steady_clock::now()) {}
  void lap(double SymbolicTimes::*part) {
    const auto now = std::chrono::steady_clock::now();
    if (times_ != nullptr) times_->*part = std::chrono::duration<double>(now - t_).count();
    t_ = now;
  }

 private:
  SymbolicTimes* times_;
  std::chrono::steady_clock::time_point t_;
};

SupernodalStructure structure_for(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                  SeparatorTree tree, const SymbolicOptions& opts, Laps& laps) {
  const std::vector<std::int32_t> order = std::move(tree.perm);
  require(static_cast<std::int64_t>(order.size()) == n, "the ordering has " + std::to_string(order.size()) +
                                                            " entries for " + std::to_string(n) + " unknowns");
  const std::vector<std::int64_t> breaks = node_starts(tree);
  // The graph in the new order: row k is row order[k], its columns renumbered and sorted.
  std::vector<std::int32_t> inv(static_cast<std::size_t>(n), -1);
  for (std::int64_t k = 0; k < n; ++k) {
    require(order[k] >= 0 && order[k] < n && inv[order[k]] < 0,
            [&] { return "the ordering is not a permutation of 0.." + std::to_string(n - 1); });
    inv[order[k]] = static_cast<std::int32_t>(k);
  }
  std::vector<std::int32_t> ptr(static_cast<std::size_t>(n) + 1, 0), idx;
  idx.reserve(static_cast<std::size_t>(xadj[n]));
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int32_t p = xadj[order[k]]; p < xadj[order[k] + 1]; ++p) idx.push_back(inv[adjncy[p]]);
    std::sort(idx.begin() + ptr[k], idx.end());
    ptr[k + 1] = static_cast<std::int32_t>(idx.size());
  }
  laps.lap(&SymbolicTimes::permute);
  SupernodalStructure s = symbolic_cholesky(n, ptr.data(), idx.data(), opts.max_supernode, breaks, opts.relax,
                                            opts.relax_subtree);
  s.perm.resize(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) s.perm[k] = order[s.post[k]];
  attach_tree(s, std::move(tree));
  laps.lap(&SymbolicTimes::structure);
  return s;
}

}  // namespace

SupernodalStructure symbolic_analysis(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                      const SymbolicOptions& opts, SymbolicTimes* times) {
  opts.check();
  require(n >= 1, "the matrix has no rows (0 x 0): nothing to factor");
  Laps laps(times);
  SeparatorTree tree;  // its perm: the ordering; nodes with ordering "tree" only
  if (opts.ordering == "nd") {
    tree.perm = metis_nested_dissection(n, xadj, adjncy);
  } else if (opts.ordering == "tree" || opts.ordering == "auto") {  // auto: tree on one process
    tree = separator_tree(n, xadj, adjncy, opts.levels);
  } else if (opts.ordering == "ptscotch" || opts.ordering == "ptscotch-metis") {
    tree.perm = ptscotch_nested_dissection(n, xadj, adjncy, opts.ordering == "ptscotch-metis");
  } else {
    tree.perm.resize(static_cast<std::size_t>(n));
    std::iota(tree.perm.begin(), tree.perm.end(), 0);
  }
  laps.lap(&SymbolicTimes::ordering);
  return structure_for(n, xadj, adjncy, std::move(tree), opts, laps);
}

SupernodalStructure symbolic_for_ordering(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                          SeparatorTree ordering, const SymbolicOptions& opts, SymbolicTimes* times) {
  opts.check();
  require(n >= 1, "the matrix has no rows (0 x 0): nothing to factor");
  Laps laps(times);
  return structure_for(n, xadj, adjncy, std::move(ordering), opts, laps);
}

}  // namespace commsolve
