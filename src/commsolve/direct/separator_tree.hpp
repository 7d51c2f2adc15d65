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
// leaf above the requested depth.
SeparatorTree separator_tree(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy, int levels,
                             int min_split = 8);

}  // namespace commsolve
