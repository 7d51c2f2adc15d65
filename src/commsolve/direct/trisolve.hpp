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
#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/mpi_executor.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/device_solve.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/direct/rhs_layout.hpp"
#include "commsolve/direct/solve_executor.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/direct/solve_schedule.hpp"
#include "commsolve/direct/supernodal_lu.hpp"
#include "commsolve/direct/syncfree.hpp"
#include "commsolve/direct/threaded_phase.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/engine.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

// The threads rule: threads >= 1 (std::invalid_argument otherwise).
void check_solve_threads(int threads);
// The device solve's grid rule: layers of one rank (1 x 1 x Pz); std::invalid_argument otherwise.
void check_device_grid(const ProcessGrid3D& grid);

class TriSolve {
 public:
  // Collective on comm (of the layout's grid.size() ranks). `lu` (the factors of the
  // permuted matrix, whose structure is the layout's) is given on rank `root` only; it sends
  // every rank its blocks. b and x meet the solve as `rhs` says.
  TriSolve(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout, RhsMap rhs,
           const SupernodalLU* lu, const SolveOptions& opts, int root = 0);
  // Collective on comm. Each rank gives its own store, filled (the distributed
  // factorization's output, direct/factor3d.hpp); it is taken over, not copied.
  TriSolve(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout, RhsMap rhs,
           BlockStore store, const SolveOptions& opts);

  // Another algorithm, tree shape or inter-grid packing for the next solves (local: every
  // rank must make the same change).
  void set_options(const SolveOptions& opts);
  // Threads per rank for the solve phases (every rank the same). With more than one, on a
  // grid whose layers are one rank (1 x 1 x Pz) each phase runs sync-free on the rank's
  // threads (direct/syncfree.hpp); on other grids the message-driven phase runs on them
  // (direct/threaded_phase.hpp; not 3d-baseline, std::invalid_argument), and the first such
  // call is collective (it makes the threads' message engine). `chaos` perturbs the sync-free
  // threads' schedule (tests only).
  void set_threads(int threads, ScheduleChaos chaos = {});
  int threads() const { return threads_; }
  // Runs the next solves' phases on `device` ("cuda": the sync-free kernel of
  // direct/device_solve.hpp, factors uploaded once; "cpu": on this rank again). Local; the
  // same grids as threads > 1. The inter-grid steps and the moves of b and x stay on the host.
  void to_device(const std::string& device);
  std::string device() const { return device_name_; }

  struct Times {  // this rank's seconds
    double redistribute_b = 0, l_solve = 0, z_comm = 0, u_solve = 0, redistribute_x = 0, total = 0;
    double device_copy = 0;  // the solve vector to the device and back (within l_solve and u_solve)
  };
  // Collective. b: this rank's rows (n_local x nrhs, row-major); x receives the solution the
  // same way (it may alias b).
  Times solve(const double* b, double* x, int nrhs);

  // The solve's messages, steps as SolveStep.
  CommStats planned(int nrhs) const;
  const CommStats& recorded() const { return recorded_; }  // of the last solve
  std::int64_t local_entries() const { return static_cast<std::int64_t>(store_.values.size()); }
  std::int64_t local_rows() const { return rhs_.dist.local_size(rank_); }
  const SolveLayout& layout() const { return *layout_; }
  const std::shared_ptr<const SolveLayout>& layout_ptr() const { return layout_; }
  const SolveOptions& options() const { return opts_; }
  // This rank's factors and where they live, for work that reads them (selected inversion).
  const BlockStore& store() const { return store_; }
  MPI_Comm comm() const { return comm_.get(); }
  const Topology& topology() const { return topo_; }

 private:
  // How b reaches the solve vector (forward) or x leaves it (in reverse): a plan, its
  // executor for the last nrhs, and per solve-vector row its owned row (>= 0), its halo
  // entry (-1 - h) or nothing (zero_row: off the lowest grid).
  struct RhsMove {
    CommPlan plan;
    std::vector<std::pair<int, std::unique_ptr<HaloExecutor>>> execs;  // by nrhs, the last few
    std::vector<std::int64_t> src;
  };
  RhsMove rhs_move(const std::vector<std::int32_t>& order, const std::vector<std::int32_t>& solver) const;
  HaloExecutor& executor(RhsMove& m, int nrhs);
  RhsMove& x_move() { return shared_move_ ? b_move_ : x_move_; }
  // Checks the arguments; then, once the store is filled, the moves of b and x and the
  // schedules.
  void check();
  void finish(const SolveOptions& opts);

  OwnedComm comm_;  // distribution of the factors and the inter-grid steps
  Topology topo_;
  std::shared_ptr<const SolveLayout> layout_;
  const SupernodalStructure& sym_;  // the layout's parts
  const ProcessGrid3D& grid_;
  const ForestPartition& forests_;
  const SupernodeBlocks& blocks_;
  int rank_ = 0;
  RhsMap rhs_;
  BlockStore store_;
  SolveOptions opts_;                  // as given
  SolveOptions run_opts_;              // as run (effective_options)
  std::vector<SolveOp> program_;       // this rank's grid's program
  std::vector<PhaseSchedule> phases_;  // per op (empty for inter-grid steps)
  std::vector<ZStep> zsteps_;          // per op (empty for phases)
  std::vector<GridSync> syncs_;        // per op (counters and barriers only)
  DiagonalFactors diag_factors_;       // the per-block kernels' diagonal blocks (else empty)
  std::unique_ptr<MessageEngine> engine_;
  CpuKernels kernels_;
  std::unique_ptr<PhaseExecutor> exec_;
  std::int64_t max_recv_width_ = 1;  // the widest message this rank's phases receive
  RhsMove b_move_, x_move_;
  bool shared_move_ = true;  // row and column orders agree: x goes back by b's plan
  std::vector<double> sol_;
  CommStats recorded_;
  int threads_ = 1;
  ScheduleChaos chaos_;
  std::unique_ptr<ThreadTeam> team_;
  std::unique_ptr<MessageEngine> probe_engine_;  // probe mode, for the threaded message-driven phases
  // Per op when threads_ > 1 or on a device (else empty); empty plans for inter-grid steps.
  std::vector<SyncFreePhase> syncfree_;
  std::string device_name_ = "cpu";
  std::unique_ptr<DeviceSolver> device_;
  std::vector<SyncFreePhase> plan_syncfree(const std::vector<SolveOp>& program,
                                           const std::vector<PhaseSchedule>& phases) const;
  void run_phases(int nrhs, Times& t);
};

}  // namespace commsolve
