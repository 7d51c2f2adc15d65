// Symbolic Cholesky factorization of a symmetric pattern: elimination tree, the row
// structure of L, fundamental supernodes (capped at a maximum size). The structure a
// supernodal LU of a symmetric-pattern matrix has, as SuperLU_DIST and PSelInv store it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "commsolve/direct/separator_tree.hpp"

namespace commsolve {

struct StructureShare;  // direct/structure_share.hpp

struct SupernodalStructure {
  std::int64_t n = 0;
  std::vector<int> parent;              // elimination tree (-1 at roots)
  std::vector<std::int64_t> sn_start;   // supernode s holds columns [sn_start[s], sn_start[s+1])
  std::vector<std::int64_t> rows_ptr;   // rows of L below supernode s's diagonal block:
  std::vector<std::int32_t> rows;       //   rows[rows_ptr[s], rows_ptr[s+1]), ascending
  std::vector<std::int32_t> post;       // relabelling applied (new column k was column post[k])
  // From symbolic_analysis: the ordering (perm[k]: the original index of the k-th eliminated
  // unknown) and, with ordering "tree" (or "auto"), the separator tree it kept (no nodes otherwise).
  std::vector<std::int32_t> perm;
  SeparatorTree tree;
  // Set where the structure is one rank's share (structure_share): its rows are only those of
  // the blocks that rank reads; null where it is whole.
  std::shared_ptr<const StructureShare> share;
  std::int64_t nnz_L() const;           // nonzeros of L, diagonal blocks as dense triangles (whole only)
  std::int64_t nsuper() const { return static_cast<std::int64_t>(sn_start.size()) - 1; }
  std::int64_t rows_below(std::int64_t k) const;  // supernode k's rows below its diagonal block (a share: the whole's)
  // Throws std::invalid_argument naming `who` where the structure is a share: what reads every
  // block's rows (the serial factors, the virtual world's plans of every rank) needs it whole.
  void require_whole(const std::string& who) const;
  // Throws std::invalid_argument unless the arrays agree (sn_start from 0 to n, rows_ptr one
  // longer than the supernodes and ending at rows' length, rows inside [0, n), perm a
  // permutation of n unknowns or empty).
  void validate() const;
};

// How symbolic_analysis orders and groups the unknowns. The member initialisers are the
// defaults of every entry point (SparseLU, factor, the virtual-world analyses, the CLI):
// Python reads them from here.
struct SymbolicOptions {
  int max_supernode = 256;        // most columns per supernode (SuperLU_DIST's maxsup)
  std::string ordering = "auto";  // auto (tree here; factor() of a distributed matrix: ptscotch) |
                                  // nd (METIS nested dissection) | tree (keeps the separator tree) |
                                  // ptscotch (PT-Scotch; in parallel on a distributed matrix) |
                                  // ptscotch-metis (PT-Scotch's separators, METIS's leaves) | natural
  int levels = 0;                 // tree: separator-tree levels kept (at least the log2 Pz a 3D layout needs)
  double relax = 0.3;             // amalgamation: the share of explicit zeros a merged supernode may store
  int relax_subtree = 32;         // elimination subtrees of at most this many columns become one supernode
  // Throws std::invalid_argument naming the option that is out of range or unknown.
  void check() const;
};
const std::vector<std::string>& ordering_names();  // auto, nd, tree, ptscotch, ptscotch-metis, natural

// The supernodal structure of a matrix whose symmetric pattern (A + A^T, no diagonal) is the
// graph `xadj`/`adjncy`: the ordering, the graph permuted by it, the symbolic factorization
// (symbolic_cholesky with the options' supernode limits and amalgamation) and, with ordering
// "tree" (or "auto"), each separator-tree node's supernodes. `perm` composes the ordering with the
// postorder renumbering. With `times`, the seconds of its three parts.
struct SymbolicTimes {
  double ordering = 0;   // METIS: nested dissection, or the separator tree and its leaves' nested dissection
  double permute = 0;    // the graph renumbered by the ordering (rows sorted)
  double structure = 0;  // the symbolic factorization, supernodes and the tree's supernodes
};
SupernodalStructure symbolic_analysis(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                      const SymbolicOptions& opts, SymbolicTimes* times = nullptr);

// The same for an ordering computed elsewhere (e.g. ptscotch_nested_dissection on the
// distributed matrix): `ordering.perm` (perm[new] = old) and its nodes, if any, kept as the
// structure's separator tree with supernodes split at their boundaries; the options' ordering
// and levels are not used. `times->ordering` is left as it is.
SupernodalStructure symbolic_for_ordering(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy,
                                          SeparatorTree ordering, const SymbolicOptions& opts,
                                          SymbolicTimes* times = nullptr);

// The sorted distinct first columns of `tree`'s nodes: where symbolic_cholesky's ranges break.
std::vector<std::int64_t> node_starts(const SeparatorTree& tree);

// `tree` (its perm dropped) kept as `s`'s separator tree, each node's supernodes
// [sn_first, sn_last) found from its columns.
void attach_tree(SupernodalStructure& s, SeparatorTree tree);

// The supernode of every column: s for the columns [sn_start[s], sn_start[s + 1]).
std::vector<std::int32_t> supernode_of_columns(const std::vector<std::int64_t>& sn_start);

// Supernode s's parent: the supernode of the first row below its diagonal block (-1: root;
// a share keeps the whole structure's).
std::vector<std::int32_t> supernodal_etree(const SupernodalStructure& sym);

// A postorder of the forest given by `parent` (-1 at roots; parents after their children
// or not), roots and children in ascending order.
std::vector<std::int64_t> forest_postorder(const std::vector<std::int32_t>& parent);

// `indptr`/`indices`: the full symmetric pattern (both triangles) of the already permuted
// matrix; the diagonal may be absent. Supernodes hold at most `max_size` columns, and a new
// one starts at every column listed in `breaks` (ascending; e.g. separator-tree node starts).
// Relaxed amalgamation: a supernode merges into its parent when that is the next supernode
// and the merged one stores at most `relax` of explicit zeros (or has at most 4 columns).
// With `relax_subtree` > 0 the columns are first renumbered in an elimination-tree postorder
// inside each range between `breaks` (so every range keeps its columns and the fill is
// unchanged), and every subtree of at most that many columns becomes one supernode
// (SuperLU's relaxed supernodes); the renumbering is returned in `post`. Every decision about
// a range's columns reads only that range's columns and their rows of L, so a range can be
// analysed apart from the others (parallel_symbolic.hpp): the forest the postorder and the
// relaxed subtrees see is cut at the breaks.
SupernodalStructure symbolic_cholesky(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices,
                                      int max_size, const std::vector<std::int64_t>& breaks = {},
                                      double relax = 0.0, int relax_subtree = 0);

// Nested-dissection ordering by METIS_NodeND of a symmetric adjacency graph (no self
// loops): perm[k] is the original index of the k-th eliminated vertex.
std::vector<std::int32_t> metis_nested_dissection(std::int64_t n, const std::int32_t* xadj, const std::int32_t* adjncy);

}  // namespace commsolve
