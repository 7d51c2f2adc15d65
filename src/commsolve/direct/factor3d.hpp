// The 3D sparse LU factorization (Sao, Li, Vuduc, "A communication-avoiding 3D LU
// factorization algorithm for sparse matrices", IPDPS'18; SuperLU_DIST's pdgstrf3d) on the
// forests of a Px x Py x Pz grid (direct/forests.hpp), multifrontal:
//   - each grid factors its leaf forest with no inter-grid communication;
//   - level by level, the upper grid of each pair sends the Schur complements still waiting
//     for an ancestor (its pending update matrices) to the lower one, which factors that
//     level's forest (the multifrontal form of SuperLU_DIST's ancestor reduction);
//   - the factored ancestors then travel down the same pairs (a binomial broadcast, as
//     dbroadcastAncestor3d), so every grid holds the blocks of all its forests, the
//     replicated layout the 3D triangular solve reads.
// Within a grid the fronts are factored by the grid's first rank (the 2D block-cyclic
// factorization inside a grid is not built); TriSolve then sends each rank of the grid its
// blocks. Every inter-grid message is planned from the structure alone, so the traffic can be
// counted for any grid in the virtual world, and recorded as it goes through MPI.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_stats.hpp"
#include "direct/forests.hpp"
#include "direct/supernodal_lu.hpp"
#include "topology/topology.hpp"

namespace commsolve {

// Steps of the factorization's statistics.
enum FactorStep { factor_entries = 0, factor_z_reduce = 1, factor_ancestor_bcast = 2, factor_layer_distribute = 3 };
inline constexpr int num_factor_steps = 4;

struct Factor3DPlan {
  int pz = 1, nlev = 0;
  // [z][l]: the supernodes grid z factors at level l, in postorder (empty unless z owns its
  // level-l forest).
  std::vector<std::vector<std::vector<std::int64_t>>> factor;
  // [l][z], l >= 1: the supernodes whose pending updates grid z sends to grid z - 2^(l-1)
  // at level l (ascending; empty unless z sends there).
  std::vector<std::vector<std::vector<std::int64_t>>> reduce;
  // [l][z], l >= 1: the supernodes whose factored blocks grid z sends to grid z + 2^(l-1)
  // (its forests at levels >= l; ascending; empty unless z sends there).
  std::vector<std::vector<std::vector<std::int64_t>>> bcast;
};

Factor3DPlan factor_3d_plan(const SupernodalStructure& sym, const ForestPartition& forests);

// Rank `rank`'s planned inter-grid messages (steps z_reduce and ancestor_bcast; each is a
// 16-byte header, status and length, then the payload of doubles in chunks of 2^27) on
// `grid`, where grid z's first rank does its inter-grid work.
CommStats factor_3d_planned(const Factor3DPlan& plan, const SupernodalStructure& sym, const ProcessGrid3D& grid,
                            const Topology& topo, int rank);

struct Factor3DResult {
  std::unique_ptr<SupernodalLU> lu;  // on each grid's first rank: the blocks of all its forests
  bool ok = true;                    // every grid factored without error (known on every first rank)
  std::string error;                 // the error that started on this grid, if one did
  CommStats recorded;                // this rank's inter-grid messages, as MPI counted them
  std::int64_t replaced = 0;         // tiny pivots replaced on this grid
  double arrange_seconds = 0.0;      // A's entries arranged by rows and columns
  double allocate_seconds = 0.0;     // the factors' storage and the update stack obtained and touched,
                                     // until every grid has them
  double numeric_seconds = 0.0;      // factoring and the inter-grid messages
};

// A's entries on this rank, as (row, column, value) triples of the permuted, scaled matrix.
struct EntryTriples {
  std::int64_t nnz = 0;
  const std::int32_t *rows = nullptr, *cols = nullptr;
  const double* values = nullptr;
};

// Collective on comm (grid.size() ranks; those that are not a grid's first rank return with
// an empty result once every grid has its storage).
// `entries`: on each grid's first rank, A's entries of the supernodes that grid factors (no
// duplicates); `anorm`: ||A||_1 of the whole matrix. A failure on one grid (a zero pivot, an
// entry outside the structure, memory) is reported by every first rank (ok = false); no
// grid waits for a message that does not come. Throws only on MPI errors and bad arguments
// (which every rank sees alike).
Factor3DResult factor_3d(MPI_Comm comm, const Topology& topo, const ProcessGrid3D& grid, const SupernodalStructure& sym,
                         const ForestPartition& forests, const EntryTriples& entries, double anorm,
                         const LUOptions& opts);

}  // namespace commsolve
