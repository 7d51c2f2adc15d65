// Distributed sparse triangular solves with supernodal LU factors on a Px x Py x Pz grid:
// the 2D message-driven solve (SC'23 Algorithm 3), the ICS'19 3D baseline and the SC'23 3D
// solve (Algorithms 1 and 2), over one store of factors (direct/block_store.hpp).
//
// TriSolve holds the pieces and runs one solve: b (distributed by rows) moves to the
// diagonal owners, each grid runs its program (direct/solve_schedule.hpp) of solve phases
// and inter-grid steps, and x moves back to the row distribution. Every message is counted
// as it goes through MPI; planned() gives the same statistics from the plans alone.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/comm_plan.hpp"
#include "comm/comm_stats.hpp"
#include "comm/mpi_executor.hpp"
#include "direct/block_store.hpp"
#include "direct/forests.hpp"
#include "direct/solve_executor.hpp"
#include "direct/solve_schedule.hpp"
#include "direct/supernodal_lu.hpp"
#include "sparse/distribution.hpp"
#include "topology/topology.hpp"
#include "trees/engine.hpp"
#include "trees/tree_plan.hpp"

namespace commsolve {

struct SolveOptions {
  SolveAlgorithm algorithm = SolveAlgorithm::two_d;
  TreeShape shape;           // intra-grid broadcast and reduction trees
  bool packed_z = true;      // inter-grid steps: one packed message (else one per supernode)
};

class TriSolve {
 public:
  // Collective on comm (of grid.size() ranks). `lu` (the factors of the permuted matrix,
  // whose structure is `sym`, perm[k] the original row of column k) is given on rank `root`
  // only; it sends every rank its blocks. b and x are distributed by `dist`.
  TriSolve(MPI_Comm comm, const Topology& topo, const ProcessGrid3D& grid, SupernodalStructure sym,
           ForestPartition forests, std::vector<std::int32_t> perm, Distribution dist, const SupernodalLU* lu,
           const SolveOptions& opts, int root = 0);

  // Another algorithm, tree shape or inter-grid packing for the next solves (local: every
  // rank must make the same change).
  void set_options(const SolveOptions& opts);

  struct Times {  // this rank's seconds
    double redistribute_b = 0, l_solve = 0, z_comm = 0, u_solve = 0, redistribute_x = 0, total = 0;
  };
  // Collective. b: this rank's rows (n_local x nrhs, row-major); x receives the solution the
  // same way (it may alias b).
  Times solve(const double* b, double* x, int nrhs);

  // The solve's messages, steps as SolveStep.
  CommStats planned(int nrhs) const;
  const CommStats& recorded() const { return recorded_; }  // of the last solve
  std::int64_t local_entries() const { return static_cast<std::int64_t>(store_.values.size()); }
  std::int64_t local_rows() const { return dist_.local_size(rank_); }
  const ProcessGrid3D& grid() const { return grid_; }

 private:
  void ensure_rhs_executor(int nrhs);

  OwnedComm comm_;  // distribution of the factors and the inter-grid steps
  Topology topo_;
  ProcessGrid3D grid_;
  int rank_ = 0;
  SupernodalStructure sym_;
  ForestPartition forests_;
  Distribution dist_;
  SupernodeBlocks blocks_;
  BlockStore store_;
  SolveOptions opts_;
  std::vector<SolveOp> program_;       // this rank's grid's program
  std::vector<PhaseSchedule> phases_;  // per op (empty for inter-grid steps)
  std::vector<ZStep> zsteps_;          // per op (empty for phases)
  std::unique_ptr<MessageEngine> engine_;
  CpuKernels kernels_;
  CommPlan rhs_plan_;                      // b -> diagonal owners; x back in reverse
  std::unique_ptr<HaloExecutor> rhs_exec_;  // for the last nrhs
  std::vector<std::int64_t> sol_src_;      // per solve-vector row: owned row, -1 - halo entry, or zero
  std::vector<double> sol_;
  CommStats recorded_;
  std::int64_t max_width_ = 1;
};

}  // namespace commsolve
