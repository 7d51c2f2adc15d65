// The supernodal symbolic factorization computed without gathering the matrix (issue 35,
// item 3), for an ordering with a separator tree (ptscotch_nested_dissection's): what
// SuperLU_DIST's symbfact_dist does after a ParMETIS ordering.
//
// Nested dissection makes the leaves of the tree independent. A leaf's vertices are
// adjacent only to each other and to separator vertices numbered after them, so the rows of
// L below a leaf's columns (separator rows included) follow from the leaf's own rows of the
// graph, and symbolic_cholesky decides a range's supernodes from its own columns only. So:
//   1. each entry of B + B^T is sent to the rank that owns its leaf (the i-th leaf on rank
//      i mod P), or to the root when both ends lie in separators;
//   2. every leaf rank analyses its leaf with its outside neighbours appended (one break
//      between them); the root of each leaf's elimination forest that has a parent in a
//      separator sends its rows of L (all separator rows) to the root;
//   3. the root analyses the separators alone, each such leaf root standing in as one
//      vertex numbered first and adjacent to its rows: eliminating it joins them as
//      eliminating the leaf would, so the separators' fill, elimination tree and supernodes
//      are those of the whole matrix;
//   4. every rank receives every piece and renumbers the rows into the final order.
// The result equals symbolic_for_ordering on the gathered matrix, supernode by supernode
// (for the pattern without stored zeros, which both parallel functions leave out). No rank
// holds more of the matrix than its own rows, its leaves' rows and (the root) the
// separators' rows; in step 4 each receives the whole structure, or on a grid only its share
// of it (structure_share.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "commsolve/direct/separator_tree.hpp"
#include "commsolve/direct/structure_share.hpp"
#include "commsolve/direct/symbolic.hpp"

namespace commsolve {

// Seconds of each part, on the calling rank.
struct ParallelSymbolicTimes {
  double exchange = 0;    // the graph's entries sent to the ranks that analyse them (one all-to-all)
  double leaves = 0;      // this rank's leaves' symbolic factorizations
  double separators = 0;  // the leaf roots' rows to the root, the separators' symbolic factorization there
  double assemble = 0;    // every piece to every rank, renumbered into one structure
};

// Collective on `comm`. This rank holds `local_rows` rows of the n x n matrix B (`indptr` /
// `indices`: CSR, global column indices; `values` may be null, else an entry equal to zero
// is not part of the pattern), row i being B's row `row_index[i]`. `ordering`: a separator
// tree with `perm` (perm[new] = old), the same on every rank, whose nodes own contiguous
// column ranges in postorder, e.g. ptscotch_nested_dissection's. Returns, on every rank, the
// structure symbolic_for_ordering(ordering, opts) computes from the pattern of B + B^T (an
// ordering without tree nodes, as ordering_from_perm makes, is refused). A bad index, or an
// entry that joins a leaf to a column numbered before it (the tree does not separate the
// pattern), is a std::invalid_argument on every rank, naming it where it was found.
// With `share_grid` (px, py > 0, dividing the ranks into layers of px x py), each rank
// returns its own share of that structure instead (structure_share(whole, px, py, x, y) for
// rank z px py + x py + y): step 4 sends each rank of each layer the blocks of its process
// row and column (on a 2 x 2 layer ranks (0, 1) and (1, 0) still receive every block).
SupernodalStructure parallel_symbolic(MPI_Comm comm, std::int64_t n, std::int64_t local_rows,
                                      const std::int64_t* indptr, const std::int32_t* indices, const double* values,
                                      const std::int64_t* row_index, const SeparatorTree& ordering,
                                      const SymbolicOptions& opts, int root = 0, ParallelSymbolicTimes* times = nullptr,
                                      ShareGrid share_grid = {});

}  // namespace commsolve
