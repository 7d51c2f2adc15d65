// One rank's share of the supernodal structure (issue 35: no rank holds the whole of it).
//
// Rank (x, y) of a Px x Py layer holds the blocks (I, K) with I mod Px = x (its L blocks,
// and those of the L panels it receives along its process row) or I mod Py = y (as U(K, I):
// its U blocks and the U rows it receives down its process column). Those are all the rows
// its share of the factorization reads: its blocks, the panels of the updates it applies
// (L(I, S) with I on its row, U(S, J) with J on its column) and the targets they write
// ((I, J) on (I mod Px, J mod Py)). What else it needs is per supernode: the process rows
// holding L blocks of K and the process columns holding its U blocks, for the broadcasts of
// K it takes part in (their participants), and the supernodal elimination tree. A share is
// about 1/Px + 1/Py of the structure's rows (all of them on a 1 x P grid).
//
// Block ids are positions in a structure's own block list (supernode_blocks), so a share's
// differ from the whole's; offsets in a rank's store do not (the blocks it holds are the
// same, in the same order).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/direct/symbolic.hpp"

namespace commsolve {

struct StructureShare {
  int px = 1, py = 1, x = 0, y = 0;
  // Per supernode K: the process rows (I mod px) and process columns (I mod py) its blocks
  // (I, K) lie on, each where K's rows first reach it (the order a solve's trees take its
  // participants in); kept only where this rank takes part in K's broadcasts (it
  // holds a block (I, K) with I mod px = x or is on K's process row, and one with I mod py =
  // y or is on K's process column), empty elsewhere.
  std::vector<std::int64_t> rows_ptr, cols_ptr;
  std::vector<std::int32_t> rows, cols;
  std::vector<std::int32_t> sn_parent;  // supernodal_etree of the whole structure
  std::vector<std::int64_t> below;      // per supernode: its rows below the diagonal block in the whole
};

// The layer shares are taken for (parallel_symbolic): px x py, or 0 x 0 for the whole.
struct ShareGrid {
  int px = 0, py = 0;
};

// Rank (x, y)'s share of the whole structure `whole` on a px x py layer: its O(n) arrays
// (perm, parent, sn_start, post, the separator tree) as they are, its rows only those of the
// blocks above, `share` set. Throws std::invalid_argument for a grid or place out of range
// or a `whole` that is itself a share.
SupernodalStructure structure_share(const SupernodalStructure& whole, int px, int py, int x, int y);

// Collective on comm (the ranks of the grid whose shares they hold, `share` this rank's):
// the whole structure on every rank, each block sent by the rank (I mod px, 0) of the first
// layer. For work that still reads every block (selected inversion): it holds the whole
// while it runs.
SupernodalStructure gather_structure(MPI_Comm comm, const SupernodalStructure& share);

// Throws std::invalid_argument naming `who` unless `sym` is whole or the share of place
// (x, y) on a px x py layer: a rank must read its own share.
void check_share_of(const SupernodalStructure& sym, int px, int py, int x, int y, const std::string& who);

}  // namespace commsolve
