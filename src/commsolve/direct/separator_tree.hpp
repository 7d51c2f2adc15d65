// Nested dissection with an explicit separator tree (issue 6, item 1).
//
// The top `levels` levels are a binary tree: every internal node is a vertex separator
// (METIS_ComputeVertexSeparator) of its subgraph, its two children the separated halves;
// the leaves are subdomains, ordered internally by METIS_NodeND for low fill. Columns are
// numbered in postorder (left subtree, right subtree, separator), so every node owns one
// contiguous range of the permuted columns — what a 3D layout maps to its Pz grids.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace commsolve {

struct SeparatorTree {
  std::vector<std::int32_t> perm;      // perm[new] = old
  // Nodes in postorder (children before parents; the root is last).
  std::vector<int> parent;             // -1 at the root
  std::vector<int> left, right;        // children, -1 at leaves
  std::vector<int> level;              // root 0
  std::vector<std::int64_t> col_start; // node k owns permuted columns [col_start[k], col_end[k])
  std::vector<std::int64_t> col_end;
  // Filled by symbolic_analysis (direct/symbolic.hpp): node k holds supernodes
  // [sn_first[k], sn_last[k]) of the structure it was built for.
  std::vector<std::int64_t> sn_first, sn_last;
  int num_nodes() const { return static_cast<int>(parent.size()); }
  // [first, end) of the permuted columns of node k's whole subtree (contiguous in postorder).
  std::pair<std::int64_t, std::int64_t> subtree_columns(int k) const;
};

// `xadj`/`adjncy`: symmetric adjacency graph without self loops. A subgraph too small to
// split (fewer than `min_split` vertices, or a separator leaving one side empty) becomes a
// leaf above the requested depth. With `order_leaves` false the leaves keep their vertices in
// ascending order, for order_leaf (or direct/leaf_ordering.hpp's ranks) to order later.
SeparatorTree separator_tree(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy, int levels,
                             int min_split = 8, bool order_leaves = true);

// The subgraph of xadj/adjncy induced by `verts` (global ids), renumbered 0..size-1 in the
// order of `verts`, as CSR. `local_of` has one entry per vertex of the graph, all -1, and is
// left so.
struct InducedGraph {
  std::vector<std::int32_t> xadj{0}, adjncy;
};
InducedGraph induced_subgraph(const std::int32_t* xadj, const std::int32_t* adjncy,
                              const std::vector<std::int32_t>& verts, std::vector<std::int32_t>& local_of);

// The order METIS_NodeND gives the vertices of `g` (an induced subgraph): order[k] is the
// local index of the k-th eliminated vertex; graphs of up to 2 vertices keep their order.
// What separator_tree does with each leaf.
std::vector<std::int32_t> order_leaf(const InducedGraph& g);

}  // namespace commsolve
