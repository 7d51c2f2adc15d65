// Nested dissection computed in parallel on a row-distributed matrix (issue 35, item 2), by
// PT-Scotch: the separators SuperLU_DIST gets with its `ParMETIS` column ordering
// (get_perm_c_parmetis), the leaves ordered apart. As ParMETIS's interface does, it uses a
// power of two of processes, so the largest power of two P' <= P ranks order the graph (the
// symmetric pattern of B + B^T is first spread over them in balanced blocks) and every rank
// receives the result. PT-Scotch
// computes the top log2 P' levels of separators (the P' subdomains, then each level's
// separators up to the top one), which become a SeparatorTree of log2 P' levels, renumbered so
// that every node's subtree owns a contiguous range of columns (left subtree, right subtree,
// separator), what a 3D layout maps its Pz grids to; each subdomain (leaf) is then ordered on
// one rank of its own, by METIS or by Scotch.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/direct/separator_tree.hpp"

namespace commsolve {

// How the leaf subdomains are ordered, each on one rank: by Scotch (its own leaves of up to
// 16000 vertices on a 2D mesh, 240 otherwise, mesh_dimension), by METIS (METIS_NodeND), or by
// METIS on a 3D mesh and by Scotch otherwise: Scotch's orderings leave more fill than METIS's,
// little on 2D meshes, where they take less time, more on 3D ones, where they do not
// (docs/concepts.md, "The ordering in parallel", has the figures).
enum class LeafOrdering { scotch, metis, by_dimension };

// Seconds of each part, on the calling rank, and the leaf ordering used.
struct ParallelOrderingTimes {
  double graph = 0;              // the pattern of B + B^T spread over the ordering ranks (one all-to-all)
  double dimension = 0;          // unless METIS's leaves were asked: the test of the graph's growth
  double nested_dissection = 0;  // PT-Scotch's top levels, on the ordering ranks
  double gather = 0;             // the ordering sent to every rank, the tree built and checked
  double leaves = 0;             // the leaves ordered, each on one rank
  bool metis_leaves = false;     // the leaves were ordered by METIS
};

// Collective on `comm`. This rank holds rows [first_row, first_row + local_rows) of an n x n
// matrix A (`indptr`/`indices`: CSR, global column indices; `values` may be null, else an
// entry equal to zero is not part of the pattern). `new_row`, if not null, gives each local
// row's index in B = P_r A (a row permutation); null: B = A. Returns, on every rank, the
// separator tree of a nested dissection of the pattern of B + B^T (its diagonal ignored), with
// `perm` (perm[new] = old) filled and the nodes in postorder; `levels` is log2 of the ordering
// ranks used (at most `max_ranks` when positive, and at most n / 2 so that none is empty).
// Checks that no edge joins two nodes of which neither is an ancestor of the other (what a
// separator tree promises; a logic_error otherwise) and that perm is a permutation. The leaf
// subdomains are ordered as `leaves` says, the i-th leaf on rank i, all at once (one more
// all-to-all of the leaves' rows). PT-Scotch computes only the top levels, through its own
// interface (a strategy of log2 q levels whose leaves it leaves unordered; kkt3d:30 on 2 ranks:
// 0.11 s against 0.33 s through ParMETIS's, which orders the leaves too), and through
// ParMETIS's where that does not give full levels (a subdomain it did not separate, on small or
// dense graphs; Scotch's leaves are then PT-Scotch's own). One ordering rank orders the whole
// graph as its one leaf.
SeparatorTree ptscotch_nested_dissection(MPI_Comm comm, std::int64_t n, std::int64_t first_row,
                                         std::int64_t local_rows, const std::int64_t* indptr,
                                         const std::int32_t* indices, const double* values,
                                         const std::int64_t* new_row, LeafOrdering leaves = LeafOrdering::scotch,
                                         int max_ranks = 0, ParallelOrderingTimes* times = nullptr);

// The same on one process (MPI_COMM_SELF) for a symmetric graph without self loops, as
// symbolic_analysis's orderings "ptscotch" (Scotch's) and "ptscotch-metis" (METIS's on one
// process): perm[k] is the original index of the k-th eliminated vertex. MPI must be
// initialized.
std::vector<std::int32_t> ptscotch_nested_dissection(std::int64_t n, const std::int32_t* xadj,
                                                     const std::int32_t* adjncy, bool metis_leaves = false);

// How a graph grows, which says how to order it: its shells (the vertices at distance r from
// a vertex) grow as r^(d-1) on a d-dimensional mesh.
enum class MeshDimension { two, three, unknown };

// Collective on `comm`. How the graph grows, held in contiguous blocks of vertices (rank r's:
// [off[r], off[r + 1]), none on ranks past off's end; `xadj` relative to this rank's block,
// `adjncy` global, no self loops): the median over 16 seeds spread through every block of
// |shell(3)| / |shell(2)|, found by three rounds of asking the owners of the frontier for its
// neighbours, is 1.5 on the gallery's 2D meshes (1.3-1.5 at a boundary) and 1.7-2.4 on its 3D
// ones (a multiple of the unknowns per mesh point cancels out): three above 1.6, two above
// 1.25. Hubs (vertices of over 8x the largest of the ranks' median degrees: dense rows) are
// counted but not gone through. Unknown below 1.25 (a path's shells do not grow) and where no
// ball qualifies (balls of over 65536 vertices are not sampled).
MeshDimension mesh_dimension(MPI_Comm comm, const std::vector<std::int64_t>& off, const int* xadj, const int* adjncy);

// The largest power of two of ranks, at most `ranks` and `max_ranks` (when positive) and at
// most n / 2 (at least 1), that ptscotch_nested_dissection orders with.
int ordering_ranks(int ranks, std::int64_t n, int max_ranks = 0);

}  // namespace commsolve
