// The 3D sparse LU factorization (Sao, Li, Vuduc, "A communication-avoiding 3D LU
// factorization algorithm for sparse matrices", IPDPS'18; SuperLU_DIST's pdgstrf3d) on the
// forests of a Px x Py x Pz grid (direct/forests.hpp), every rank of every grid factoring:
//   - each grid factors its leaf forest on its own ranks (direct/factor_grid.hpp) with no
//     inter-grid message; its updates to ancestor supernodes go into its own copy of their
//     blocks (zeros to start with: A's entries of a supernode are on its lowest grid only);
//   - level by level, each rank of the upper grid of a pair sends the parts of its ancestor
//     blocks that its subtree's updates touched to the same rank of the lower grid, which adds
//     them (SuperLU_DIST's dreduceAncestors3d) and factors that level's forest;
//   - the factored ancestors then travel down the same pairs, top level first (a binomial
//     broadcast, as dbroadcastAncestor3d), so every rank ends holding the blocks of its
//     grid's forests exactly as the 3D triangular solve reads them: no rank ever holds more.
// Every message is planned from the structure alone, so the traffic can be counted for any
// grid in the virtual world, and is recorded as it goes through MPI.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/factor_grid.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/direct/supernodal_lu.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

// Steps of the factorization's statistics: A's entries to the ranks that factor them
// (direct/entry_move.hpp), inside the grids (L panels along process rows, U rows down
// process columns: FactorRole), between them.
enum FactorStep { factor_entries = 0, factor_xy = 1, factor_z_reduce = 1 + factor_xy_steps, factor_ancestor_bcast };
inline constexpr int num_factor_steps = factor_ancestor_bcast + 1;

// (supernode, FactorPart) pairs: what an inter-grid message of one rank carries, in order.
using PartList = std::vector<std::pair<std::int32_t, std::int8_t>>;

// The supernodes grid z factors at level l (those of its level-l forest, if it is the
// lowest grid sharing that forest; else none).
std::vector<char> phase_mask(const ForestPartition& forests, int z, int l);

// At level l >= 1 the upper grid z (z mod 2^l = 2^(l-1)) sends, from each rank (x, y), the
// parts of ancestor supernodes that the updates of its subtree of forests (the level-(l-1)
// forest's heap subtree: what it and the grids that reduced into it factored) touched.
// Indexed x py + y.
std::vector<PartList> reduce_parts(const SupernodeBlocks& blocks, const ForestPartition& forests,
                                   const ProcessGrid2D& layer, int z, int l);

// Planned messages of every rank (steps as FactorStep; factor_entries left empty: it
// depends on where A's rows are, which only the ranks holding them know).
std::vector<CommStats> factor_3d_planned(const SolveLayout& layout, const Topology& topo, const TreeShape& shape);
// The same for one rank from its own schedules: what it needs of the structure is its share
// (structure_share.hpp), which `layout` may hold.
CommStats factor_3d_planned_rank(const SolveLayout& layout, const Topology& topo, const TreeShape& shape, int rank);

// Every rank's factor entries (its block store's size: the parts of its grid's supernodes,
// diagonal blocks inverted), without building the stores.
std::vector<std::int64_t> factor_entries_per_rank(const SolveLayout& layout);

struct Factor3DResult {
  BlockStore store;               // this rank's blocks, as the solve reads them
  bool ok = true;                 // this rank finished without hearing of a failure
  std::string error;              // the failure that started on this rank, if one did
  CommStats recorded;             // this rank's messages, as MPI counted them
  std::int64_t replaced = 0;      // tiny pivots replaced on this rank
  double flops = 0.0;             // floating-point operations of this rank's factorization
  double move_seconds = 0.0;      // A's entries sent to the ranks that factor them
  double arrange_seconds = 0.0;   // A's entries added into the blocks
  double allocate_seconds = 0.0;  // the store obtained and touched, until every rank has its own
  double numeric_seconds = 0.0;   // factoring and the inter-grid messages
};

// Collective on comm (the layout's grid.size() ranks). `entries`: this rank's entries of the
// permuted, scaled matrix (any of them: they are moved first to the ranks that factor their
// blocks, move_entries; no duplicates over the ranks); `anorm`: ||A||_1 of the whole matrix;
// `shape`: the trees of the broadcasts inside the grids; `send_window`: the messages each
// rank hands to MPI at once (MessageEngine::set_window; 0: max(64, 8 px py)). The factors'
// memory is obtained and A's entries placed first, and a failure there (memory, an entry
// outside the structure) is agreed on every rank before any factoring (ok = false
// everywhere, the message on the failing rank). A failure in the numeric work (a zero, tiny
// or non-finite pivot) leaves ok = false on every rank it reaches and no rank waiting for a
// message that does not come (the caller agrees on the outcome). It throws on MPI errors and
// bad arguments (which every rank sees alike); running out of memory for a message or an
// internal inconsistency during the numeric phase throws on one rank (under `python -m
// mpi4py`: the job aborts).
Factor3DResult factor_3d(MPI_Comm comm, const Topology& topo, const SolveLayout& layout, const EntryTriples& entries,
                         double anorm, const LUOptions& opts, const TreeShape& shape, std::int64_t send_window = 0);

}  // namespace commsolve
