// What a distributed triangular solve does, as plain data built without communication
// (DESIGN.md rule 1): per grid a program of solve phases and inter-grid steps, per rank and
// phase a schedule (restricted collectives, their trees, fmod/bmod counters) and per rank
// and inter-grid step who talks to whom about which supernodes.
//
// Algorithms on a Px x Py x Pz grid (direct/forests.hpp):
//  - "2d" (Pz = 1): one L phase and one U phase over every supernode (SC'23, Algorithm 3).
//  - "3d-baseline" (Sao et al., ICS'19; SuperLU_DIST NEW3DSOLVE=0): the L-solve climbs the
//    forest levels; after its level-l forest, the grid z with z mod 2^(l+1) = 2^l sends the
//    partial sums of its ancestor supernodes to grid z - 2^l and goes idle; the U-solve
//    comes back down, x of the ancestors sent to z + 2^l. 2 log2 Pz synchronisations. As
//    SuperLU_DIST's pdgstrs3d, the leaf forests are solved message-driven and the forests
//    above one supernode at a time: a reduction of its sums over the whole process row, the
//    diagonal solve, a broadcast of its solution over the whole process column, each rank
//    taking the supernodes in order (MPI_Reduce / MPI_Bcast per supernode there). So are
//    the ancestors in every phase: their partial sums reduced (L) and their solutions
//    broadcast (U) one supernode at a time, as pdgstrs3d does around its inter-grid sends.
//  - "3d-baseline-async": the same levels and inter-grid steps, every forest message-driven
//    over the restricted trees (the baseline with the 2D solve's intra-grid schedule).
//  - "3d-baseline-pdgstrs": 3d-baseline paying what SuperLU_DIST's pdgstrs3d pays beyond it
//    (effective_options): flat trees in the leaf forests (y sent to each user, partial sums
//    straight to the diagonal owner), the per-block kernels, the leaf forests' counter
//    allreduce and barrier, one blocking inter-grid message per supernode.
//  - "3d" (SC'23, Algorithm 1; NEW3DSOLVE=1): every grid solves all its forests without
//    waiting for another grid (ancestors with b set to 0 except on their lowest grid, so
//    their y are partial sums): its leaf forest, then its ancestors in a second phase; one
//    SparseAllReduce (Algorithm 2) of the ancestors' y over the grids, then every grid runs
//    its U-solve, ancestors first. One synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/direct/symbolic.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

enum class SolveAlgorithm { two_d, baseline_3d, baseline_3d_async, new_3d, baseline_3d_pdgstrs };
// "2d" | "3d-baseline" | "3d-baseline-async" | "3d" | "3d-baseline-pdgstrs"
SolveAlgorithm parse_algorithm(const std::string& name);
const std::vector<std::string>& algorithm_names();
const std::string& algorithm_name(SolveAlgorithm alg);
// The algorithm/Pz rule: 2d runs on one layer (Pz = 1), the 3D algorithms on two or more.
bool runs_on(SolveAlgorithm alg, int pz);
// Throws std::invalid_argument saying which grid the algorithm needs unless it runs on pz.
void check_algorithm_grid(SolveAlgorithm alg, int pz);
// The algorithm a grid runs when none is asked for: 2d on one layer, 3d on more.
SolveAlgorithm default_algorithm(int pz);

// The inter-grid messages: "packed" (one per pair of ranks and step, as the SC'23 paper
// describes) or "per-supernode" (one per supernode, as SuperLU_DIST sends them).
const std::vector<std::string>& allreduce_names();
bool parse_allreduce(const std::string& name);  // true: packed; throws for an unknown name

// The dense kernels of a solve phase: "inverted" (a product with the inverted diagonal
// block, one product per L panel: SC'23's GEMM-friendly form) or "per-block" (as pdgstrs3d:
// dtrsm with the diagonal block's factors, one BLAS dgemm per L block, each U block packed
// into a buffer before its product).
enum class SolveKernels { inverted, per_block };
const std::vector<std::string>& kernel_names();
SolveKernels parse_kernels(const std::string& name);  // throws naming the known ones

// How a solve runs on its layout. The member initialisers are the defaults of every entry
// point (Python reads them from here).
struct SolveOptions {
  SolveAlgorithm algorithm = SolveAlgorithm::two_d;
  TreeShape shape;        // intra-grid broadcast and reduction trees
  bool packed_z = true;   // inter-grid steps: one packed message (else one per supernode)
  SolveKernels kernels = SolveKernels::inverted;
  // The leaf forests as pdgstrs3d synchronises them: before each (L and U) an allreduce of
  // the counters of every local block row over the process row (SuperLU_DIST's
  // getfrecvLeaf / getBrecvTree: ceil(ns / Px) ints), after the L one a barrier over the grid.
  bool leaf_sync = false;
};
// What a solve runs: the options, with "3d-baseline-pdgstrs" turned into 3d-baseline and
// pdgstrs3d's costs (flat trees, per-block kernels, leaf_sync, per-supernode inter-grid
// messages) whatever its other fields say. Every consumer of SolveOptions reads them so.
SolveOptions effective_options(const SolveOptions& opts);
// The steps of a solve's CommStats. XY: inside a grid; Z: between grids; then the moves of
// b from its row distribution to the diagonal owners and of x back.
// grid_sync: the leaf forests' counter allreduces and barriers (SolveOptions::leaf_sync).
enum SolveStep : int { l_broadcast = 0, l_reduce, u_broadcast, u_reduce, z_reduce, z_broadcast, b_to_diagonal,
                       x_from_diagonal, grid_sync, num_solve_steps };

struct SolveOp {
  // counters: an allreduce of block-row counters over the process row; barrier: over the grid
  enum Kind : std::int8_t { phase, z_reduce, z_broadcast, counters, barrier };
  Kind kind = phase;
  bool upper = false;  // phase: a U-solve phase; counters: before the U leaf forest
  int lo = 0, hi = 0;  // phase: solves the grid's forests at levels lo..hi; those above are context
  SyncParts sync;      // phase: which supernodes go one at a time over whole process rows and columns
  int step = 0;        // inter-grid step 1..nlev: grids z and z +- 2^(step - 1)
};

// What grid z runs, in order. Throws for "2d" with pz > 1. With leaf_sync, the phases of
// the leaf forests (lo = 0) are preceded by a counter allreduce and the L one followed by a
// barrier (3d-baseline-pdgstrs has them whatever leaf_sync says).
std::vector<SolveOp> solve_program(SolveAlgorithm alg, int z, int nlev, bool leaf_sync = false);
// Points where a grid waits for another between its solve phases (runs of inter-grid steps).
int synchronisation_points(const std::vector<SolveOp>& program);

// The collectives of phase op `op` of grid z (`layer`): phase_collectives of its solve and
// context masks and its synchronous parts. Local.
CollectiveSet op_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& layer,
                             const ForestPartition& forests, int z, const SolveOp& op);

// Which of a phase's collectives (op_collectives' set) are its synchronous part's: they
// stand for MPI_Bcast / MPI_Reduce over a whole process column or row.
std::vector<char> synchronous_collectives(const CollectiveSet& set, std::int64_t ns, const std::vector<char>& solve,
                                          SyncParts sync);
// The tree links of a phase's collectives: `shape`'s, except the synchronous ones', which
// are binary whatever the shape (MPI's own trees for MPI_Bcast / MPI_Reduce are binomial,
// of the same depth). `sync` from synchronous_collectives. One rank's, or every rank's.
// mixes_tree_shapes: whether that makes any link differ from `shape`'s own.
bool mixes_tree_shapes(const std::vector<char>& sync, const TreeShape& shape);
TreePlan phase_tree_plan(const CollectiveSet& set, const std::vector<char>& sync, int rank, const TreeShape& shape,
                         const Topology& topo);
std::vector<TreePlan> phase_tree_plans(const CollectiveSet& set, const std::vector<char>& sync,
                                       const TreeShape& shape, const Topology& topo);

// One rank's part of one solve phase: the collectives it takes part in ("entries", in
// ascending key order: K for the broadcast of x(K), ns + K for the reduction of K's sums),
// their tree links, the fmod/bmod counters, and where its local blocks go. Sized by the
// rank's share, not by the matrix (the simulator keeps one per rank of the virtual world).
struct PhaseSchedule {
  bool upper = false;
  std::int64_t ns = 0;
  std::vector<std::int64_t> key;         // per entry, ascending
  std::vector<std::int64_t> width;       // per entry: doubles per right-hand side
  std::vector<std::int32_t> parent;      // per entry: tree parent rank, -1 at the root
  std::vector<std::int64_t> child_ptr;   // per entry: children[child_ptr[e], child_ptr[e + 1])
  std::vector<std::int32_t> children;
  std::vector<std::int32_t> waiting;     // per entry (reductions): tree children plus local blocks
  std::int64_t expected = 0;             // messages this rank receives in the phase
  std::vector<std::int32_t> local;       // per entry (broadcasts): local L column / U source, -1: none
  std::vector<std::int32_t> diag;        // per entry (reductions at their root): index in diag_sn
  std::vector<std::int32_t> bcast;       // per entry (reductions the root solves): the broadcast entry
  std::vector<char> solves;              // per entry (reductions): the root solves (else keeps the sum)
  std::vector<std::int64_t> sum_off;     // per entry (reductions): offset of its sum per rhs
  std::int64_t sum_size = 0;
  std::int64_t solved_here = 0;          // supernodes this rank solves
  std::vector<std::int32_t> l_target;    // L: per local L block, the entry it adds to (-1: not this phase)
  std::vector<std::int64_t> u_ptr;       // U: per local source, this phase's blocks u_pos[u_ptr[s], u_ptr[s+1])
  std::vector<std::int64_t> u_pos;       //    (their positions in the layout)
  std::vector<std::int32_t> u_target;    //    and the entry each adds to
  std::vector<std::int32_t> starts;      // U: context broadcasts rooted here (their x is known)
  // The synchronous parts' entries in the order this rank takes them, one at a time
  // (supernodes ascending in L, descending in U; a supernode's reduction before its
  // broadcast; broadcasts this rank roots after its own reduction are left out); the other
  // entries go message-driven.
  std::vector<std::int32_t> order;
  std::vector<char> gated;               // per entry: in `order`

  bool is_broadcast(std::int64_t e) const { return key[e] < ns; }
  std::int64_t supernode(std::int64_t e) const { return is_broadcast(e) ? key[e] : key[e] - ns; }
  std::int64_t entry(std::int64_t k) const;  // the entry of key k, -1 if none
};

// One rank's schedule of the phase whose collectives are `set` (phase_collectives of its
// grid), given its tree links (`plan`, from build_tree_plan or build_tree_plans_virtual)
// and its blocks (`layout`). `solve`/`context` and `sync` as phase_collectives. Local.
PhaseSchedule make_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const LocalLayout2D& layout,
                         const CollectiveSet& set, const TreePlan& plan, bool upper, const std::vector<char>& solve,
                         SyncParts sync = {});

// Planned statistics of a phase into `stats` (steps l_/u_broadcast, l_/u_reduce): every
// message an 8-byte key and nrhs x width doubles.
void add_phase_stats(CommStats& stats, const PhaseSchedule& ph, int rank, const Topology& topo, int nrhs);

// One rank's part of an inter-grid step: its partner, its direction (the L side reduces
// towards the lower grid, the U side broadcasts away from it) and the supernodes whose
// diagonal blocks it owns in the forests the two grids share at that step (ascending).
struct ZStep {
  int peer = -1;  // -1: this rank's grid takes no part
  bool send = false;
  std::vector<std::int32_t> sn;
};
ZStep build_z_step(const ForestPartition& forests, const ProcessGrid3D& grid, int rank, int step, bool reduce);
// The same for every rank of grid z (indexed rank - the layer's base), in one pass.
std::vector<ZStep> layer_z_steps(const ForestPartition& forests, const ProcessGrid3D& grid, int z, int step,
                                 bool reduce);

// Planned statistics of an inter-grid step into `stats` (steps z_reduce / z_broadcast):
// one message per supernode (as SuperLU_DIST sends them) or one packed message per step.
void add_z_stats(CommStats& stats, const ZStep& st, const SupernodalStructure& sym, const Topology& topo, int rank,
                 bool reduce, bool packed, int nrhs);

// One rank's part of a grid synchronisation (SolveOp counters or barrier): recursive
// doubling over the participants (the process row for counters, the grid for a barrier),
// as MPICH runs MPI_Allreduce on few bytes, those beyond the largest power of two first
// folding into a partner and getting the result back at the end. The barrier is modelled
// the same way (MPICH's own is a dissemination barrier: the same messages and rounds on a
// power-of-two grid, 2 (p - 2^k) fewer messages and one round more otherwise). Each exchange
// is a send then a receive (either may be absent); `bytes` per message (4 per counter,
// 0 for a barrier).
struct GridSync {
  struct Exchange {
    int peer = -1;
    bool send = false, recv = false;
  };
  std::vector<Exchange> steps;
  std::int64_t bytes = 0;
};
GridSync build_grid_sync(const SupernodalStructure& sym, const ProcessGrid2D& layer, int rank, const SolveOp& op);
// Recursive doubling among p participants, for participant i (peers as participant indices).
std::vector<GridSync::Exchange> recursive_doubling(int i, int p);
// Planned statistics of a grid synchronisation into `stats` (step grid_sync).
void add_sync_stats(CommStats& stats, const GridSync& gs, const Topology& topo, int rank);

// The masks of a phase op of grid z: solved supernodes and context (ancestors above hi).
std::vector<char> phase_solve_mask(const ForestPartition& forests, int z, const SolveOp& op);
std::vector<char> phase_context_mask(const ForestPartition& forests, int z, const SolveOp& op);

}  // namespace commsolve
