// The message-driven 2D sparse triangular solves (SC'23 paper, Algorithm 3 on a Px x Py
// grid; SuperLU_DIST's 2D baseline). The factors are spread block-cyclically; supernode K's
// solution goes down a broadcast tree to the owners of the blocks that use it, partial sums
// come up a reduction tree to K's diagonal owner, and every rank runs a receive-any loop in
// which a supernode is solved (a GEMM with the inverted diagonal block) as soon as its last
// contribution is in: the fmod/bmod counters of SuperLU_DIST, here one counter per
// reduction a rank takes part in (its local blocks plus its children in the tree).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/comm_stats.hpp"
#include "comm/mpi_executor.hpp"
#include "core/huge_pages.hpp"
#include "direct/block_layout.hpp"
#include "direct/supernodal_lu.hpp"
#include "topology/topology.hpp"
#include "trees/engine.hpp"
#include "trees/tree_plan.hpp"

namespace commsolve {

class TriSolve2D {
 public:
  // Collective on comm (of grid.size() ranks). `lu` (the factors of the permuted matrix,
  // whose structure is `sym`) is given on rank `root` only; it sends every rank its blocks.
  TriSolve2D(MPI_Comm comm, const Topology& topo, const ProcessGrid2D& grid, SupernodalStructure sym,
             const SupernodalLU* lu, const TreeShape& shape, int root = 0);

  // Rebuilds the broadcast and reduction trees (no communication).
  void set_tree(const TreeShape& shape);

  struct Times {
    double lsolve = 0.0, usolve = 0.0, gather = 0.0;  // this rank's seconds
  };
  // Collective. `b` (n x nrhs, column-major, permuted order) holds the same right-hand sides
  // on every rank; on return it holds the solution on every rank.
  Times solve(double* b, int nrhs);

  // The solve's messages, 4 steps: L broadcasts, L reductions, U broadcasts, U reductions.
  CommStats planned(int nrhs) const;
  const CommStats& recorded() const { return engine_->recorded(); }  // of the last solve
  std::int64_t local_entries() const { return static_cast<std::int64_t>(values_.size()); }
  const ProcessGrid2D& grid() const { return grid_; }
  std::int64_t n() const { return sym_.n; }

 private:
  struct Phase {  // one triangular solve: its collectives, this rank's trees and counters
    CollectiveSet set;
    TreePlan plan;
    PlanArrivals arrivals;              // waiting: a reduction's children plus local blocks
    std::vector<std::int64_t> sum_off;  // per plan entry (reductions): its sum's offset per
    std::int64_t sum_size = 0;          //   right-hand side, and their total
  };
  void plan_phase(Phase& ph, const TreeShape& shape, bool upper) const;
  void run_phase(Phase& ph, bool upper, double* b, int nrhs);
  std::int64_t width(std::int64_t s) const { return sym_.sn_start[s + 1] - sym_.sn_start[s]; }

  OwnedComm comm_;  // distribution of the factors and the final gather
  Topology topo_;
  ProcessGrid2D grid_;
  int rank_ = 0;
  SupernodalStructure sym_;
  SupernodeBlocks blocks_;
  LocalLayout2D layout_;
  HugeVector<double> values_;
  std::vector<std::int64_t> diag_index_;  // supernode -> index in layout_.diag_sn (-1 elsewhere)
  Phase lower_, upper_;
  std::unique_ptr<MessageEngine> engine_;
  std::int64_t max_width_ = 1;
  std::vector<double> acc_, work_, sol_, gathered_;  // solve buffers
  std::vector<std::int64_t> stack_;
};

}  // namespace commsolve
