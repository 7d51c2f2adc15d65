#include "commsolve/direct/separator_tree.hpp"

#include <metis.h>

#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/symbolic.hpp"

namespace commsolve {

std::pair<std::int64_t, std::int64_t> SeparatorTree::subtree_columns(int k) const {
  require(k >= 0 && k < num_nodes(), [&] {
    return "separator tree: node " + std::to_string(k) + " outside the " + std::to_string(num_nodes()) + " nodes";
  });
  int first = k;
  while (left[first] >= 0) first = left[first];
  return {col_start[first], col_end[k]};
}

InducedGraph induced_subgraph(const std::int32_t* xadj, const std::int32_t* adjncy,
                              const std::vector<std::int32_t>& verts, std::vector<std::int32_t>& local_of) {
  InducedGraph g;
  for (std::size_t i = 0; i < verts.size(); ++i) local_of[verts[i]] = static_cast<std::int32_t>(i);
  for (std::int32_t v : verts) {
    for (std::int32_t p = xadj[v]; p < xadj[v + 1]; ++p)
      if (local_of[adjncy[p]] >= 0) g.adjncy.push_back(local_of[adjncy[p]]);
    g.xadj.push_back(static_cast<std::int32_t>(g.adjncy.size()));
  }
  for (std::int32_t v : verts) local_of[v] = -1;
  return g;
}

std::vector<std::int32_t> order_leaf(const InducedGraph& g) {
  const std::int64_t nv = static_cast<std::int64_t>(g.xadj.size()) - 1;
  if (nv > 2) return metis_nested_dissection(nv, g.xadj.data(), g.adjncy.data());
  std::vector<std::int32_t> order(static_cast<std::size_t>(nv));
  for (std::int64_t i = 0; i < nv; ++i) order[i] = static_cast<std::int32_t>(i);
  return order;
}

namespace {

class Builder {
 public:
  Builder(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy, int levels, int min_split,
          bool order_leaves)
      : xadj_(xadj), adjncy_(adjncy), levels_(levels), min_split_(min_split), order_leaves_(order_leaves),
        local_of_(n, -1) {}

  // Orders `verts` (appending to perm), returns the node id of its subtree's root.
  int build(const std::vector<std::int32_t>& verts, int depth) {
    if (depth < levels_ && static_cast<int>(verts.size()) >= min_split_) {
      InducedGraph g = induced_subgraph(xadj_, adjncy_, verts, local_of_);
      idx_t nv = static_cast<idx_t>(verts.size()), sepsize = 0;
      idx_t options[METIS_NOPTIONS];
      METIS_SetDefaultOptions(options);
      options[METIS_OPTION_NUMBERING] = 0;
      std::vector<idx_t> part(verts.size());
      int status = METIS_ComputeVertexSeparator(&nv, g.xadj.data(), g.adjncy.data(), nullptr, options, &sepsize,
                                                part.data());
      if (status != METIS_OK)
        throw std::runtime_error("METIS_ComputeVertexSeparator failed with status " + std::to_string(status));
      std::vector<std::int32_t> sides[3];
      for (std::size_t i = 0; i < verts.size(); ++i) sides[part[i]].push_back(verts[i]);
      if (!sides[0].empty() && !sides[1].empty()) {
        int l = build(sides[0], depth + 1);
        int r = build(sides[1], depth + 1);
        int node = add_node(sides[2], depth, l, r);
        tree_.parent[l] = tree_.parent[r] = node;
        return node;
      }
    }
    return add_leaf(verts, depth);
  }

  SeparatorTree take() { return std::move(tree_); }

 private:
  int add_node(const std::vector<std::int32_t>& cols, int depth, int l, int r) {
    tree_.col_start.push_back(static_cast<std::int64_t>(tree_.perm.size()));
    tree_.perm.insert(tree_.perm.end(), cols.begin(), cols.end());
    tree_.col_end.push_back(static_cast<std::int64_t>(tree_.perm.size()));
    tree_.parent.push_back(-1);
    tree_.left.push_back(l);
    tree_.right.push_back(r);
    tree_.level.push_back(depth);
    return tree_.num_nodes() - 1;
  }

  // A subdomain, ordered inside by nested dissection for low fill (or left for later).
  int add_leaf(const std::vector<std::int32_t>& verts, int depth) {
    if (!order_leaves_) return add_node(verts, depth, -1, -1);
    const std::vector<std::int32_t> local = order_leaf(induced_subgraph(xadj_, adjncy_, verts, local_of_));
    std::vector<std::int32_t> order(verts.size());
    for (std::size_t i = 0; i < verts.size(); ++i) order[i] = verts[local[i]];
    return add_node(order, depth, -1, -1);
  }

  const std::int32_t* xadj_;
  const std::int32_t* adjncy_;
  int levels_, min_split_;
  bool order_leaves_;
  std::vector<std::int32_t> local_of_;
  SeparatorTree tree_;
};

}  // namespace

SeparatorTree separator_tree(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy, int levels,
                             int min_split, bool order_leaves) {
  static_assert(sizeof(idx_t) == sizeof(std::int32_t), "Debian's METIS uses 32-bit idx_t");
  require(levels >= 0, "separator tree: levels must be >= 0, got " + std::to_string(levels));
  require(n >= 1, "separator tree: the graph has no vertices (a 0 x 0 matrix)");
  require(min_split >= 3, "separator tree: min_split must be at least 3");
  std::vector<std::int32_t> all(n);
  for (std::int64_t i = 0; i < n; ++i) all[i] = static_cast<std::int32_t>(i);
  Builder b(n, xadj, adjncy, levels, min_split, order_leaves);
  if (n > 0) b.build(all, 0);
  SeparatorTree t = b.take();
  return t;
}

}  // namespace commsolve
