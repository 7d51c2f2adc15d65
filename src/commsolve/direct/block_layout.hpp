// The block structure of supernodal LU factors and its 2D block-cyclic layout over a Px x Py
// process grid (SuperLU_DIST's): block (I, J) lives on process (I mod Px, J mod Py). What
// the triangular solves move follows from it as restricted collectives, one broadcast
// down a process column and one reduction along a process row per supernode and solve.
// A grid may be one layer of a larger communicator (its ranks start at `base`), and a solve
// phase may cover a subset of the supernodes (the 3D solves: direct/forests.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/direct/symbolic.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

struct ProcessGrid2D {
  int px = 1, py = 1;
  int base = 0;  // rank of process (0, 0) in the communicator
  int size() const { return px * py; }
  int rank_of(std::int64_t prow, std::int64_t pcol) const { return base + static_cast<int>(prow * py + pcol); }
  bool contains(int rank) const { return rank >= base && rank < base + size(); }
  int owner(std::int64_t i, std::int64_t j) const { return rank_of(i % px, j % py); }  // block (I, J)
  int diag_owner(std::int64_t k) const { return owner(k, k); }
};

// Supernode K's rows below its diagonal block, cut by the supernode that holds them: block b
// of column K covers K's rows [lo[b], hi[b]) (relative to rows_ptr[K]), all in supernode
// sn[b]. With a symmetric pattern L(I, K) and U(K, I) are the same block, one from either side.
struct SupernodeBlocks {
  std::vector<std::int64_t> col_ptr;  // column K's blocks: [col_ptr[K], col_ptr[K + 1])
  std::vector<std::int32_t> sn, col;  // the block's row supernode I and column supernode K
  std::vector<std::int64_t> lo, hi;
  std::vector<std::int64_t> row_ptr;  // row I's blocks: row_blocks[row_ptr[I], row_ptr[I + 1]),
  std::vector<std::int64_t> row_blocks;  //   ascending K
  std::size_t size() const { return sn.size(); }
};

SupernodeBlocks supernode_blocks(const SupernodalStructure& sym);

// The collectives of one triangular solve. Collective K (< ns) broadcasts supernode K's
// solution from its diagonal owner to the owners of the blocks that use it; collective
// ns + K reduces the partial sums of supernode K to its diagonal owner. Counts are widths
// (per right-hand side). L-solve: L(I, K) uses y(K) and adds to lsum(I); U-solve: U(K, J)
// uses x(J) and adds to usum(K). Ids: key (K or ns + K), plus 2 ns in the U-solve.
CollectiveSet triangular_solve_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                           const ProcessGrid2D& grid, bool upper);

// The collectives of one solve phase that solves the supernodes flagged in `solve` and only
// updates (L) or reads (U) those flagged in `context` (both per supernode; empty `solve`:
// all supernodes, no context). The blocks taking part are those of the solved supernodes:
// L(I, K) with K solved, U(K, J) with K solved. L phase: a broadcast per solved K, a
// reduction per solved I and per context I that some block adds to (its root keeps the
// partial sum). U phase: a broadcast per solved J and per context J that some block reads,
// a reduction per solved K. triangular_solve_collectives is the phase that solves all.
// The collectives of the parts in `sync` span the whole process column (broadcasts) or row
// (reductions) of their diagonal owner, as MPI_Bcast / MPI_Reduce over the column and row
// communicators do, instead of only the owners of the blocks involved.
struct SyncParts {  // which of a phase's supernodes go one at a time (ICS'19's upper levels)
  bool solved = false;   // the supernodes it solves
  bool context = false;  // the context ones (L: their partial sums; U: their known solutions)
  bool covers(bool solved_here) const { return solved_here ? solved : context; }
};
CollectiveSet phase_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                const ProcessGrid2D& grid, bool upper, const std::vector<char>& solve,
                                const std::vector<char>& context, SyncParts sync = {});

// One rank's share of the factors, as offsets into one array of values: the diagonal blocks
// it owns (inv(L(K,K)) then inv(U(K,K)), w x w each), its L blocks of column K stacked into
// one panel (sum of their rows x w_K, as SuperLU_DIST stores them, so that one product
// serves them all), and its U blocks by the supernode J whose solution they use (w_K x m),
// all column-major. Only the columns and sources the rank holds blocks of are listed (a
// rank's layout is as large as its share, not as the matrix: the virtual world keeps
// thousands of them).
struct LocalLayout2D {
  std::vector<std::int32_t> diag_sn;                // supernodes whose diagonal block is here,
  std::vector<std::int64_t> diag_off;               //   ascending, and their offsets
  std::vector<std::int32_t> l_col;                  // columns K with local L blocks, ascending
  std::vector<std::int64_t> l_ptr;                  // local column c: blocks [l_ptr[c], l_ptr[c + 1])
  std::vector<std::int64_t> l_panel, l_rows;        // per local column: offset, rows of its panel
  std::vector<std::int64_t> l_block, l_row;         // per L block: its id, its first row in the panel
  std::vector<std::int32_t> u_src;                  // sources J with local blocks U(K, J), ascending
  std::vector<std::int64_t> u_ptr;                  // local source: blocks [u_ptr[s], u_ptr[s + 1])
  std::vector<std::int64_t> u_block, u_off;         // per U block: its id, its offset (w_K x m)
  std::int64_t total = 0;
};

// `mask` (per supernode; empty: all) keeps the supernodes a 3D grid holds: the diagonal
// blocks, L columns and U rows of flagged supernodes only.
LocalLayout2D local_layout_2d(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                              int rank, const std::vector<char>& mask = {});
// Every rank of the grid's layout in one pass (the virtual world), indexed rank - grid.base.
std::vector<LocalLayout2D> local_layouts_2d(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                            const ProcessGrid2D& grid, const std::vector<char>& mask = {});

}  // namespace commsolve
