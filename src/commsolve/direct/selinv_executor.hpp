// Parallel selected inversion on MPI (direct/selinv_plan.hpp says what moves,
// direct/selinv_machine.hpp in what order): one rank's part, over its block store of the
// factors on a Px x Py grid, with the numbers. Two runs of the message engine, one per phase
// (prepare, invert), every collective carried by the chosen tree shape; no barriers, a rank
// waits only for data it needs. At K a rank's products are one GEMM of its part of Z(C, C)
// with the broadcast L^ (and U^) blocks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/factor_grid.hpp"
#include "commsolve/direct/selected_inverse.hpp"
#include "commsolve/direct/selinv_machine.hpp"
#include "commsolve/direct/selinv_plan.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/trees/engine.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

class SelectedInversion2D {
 public:
  // Collective on comm (the layout's Px x Py x 1 ranks). `store`: this rank's factors (the
  // triangular solve's: diagonal blocks as inverse triangles, L and U blocks); read only,
  // must outlive this object. A layout of this rank's share of the structure is made whole
  // first (gather_structure): the plan reads every block.
  SelectedInversion2D(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout,
                      const BlockStore& store, const TreeShape& shape, bool symmetric);

  struct Times {  // this rank's seconds
    double prepare = 0, invert = 0, total = 0;
  };
  Times run();  // collective

  // This rank's blocks of Z = (L U)^-1 as triples (factor numbering), after run().
  SelectedEntries entries() const;
  CommStats planned() const;  // steps as SelinvRole
  const CommStats& recorded() const { return engine_.recorded(); }
  double flops() const { return flops_; }
  std::int64_t split_supernodes() const { return split_supernodes_; }  // of the last run: products in several pieces

 private:
  friend class SelinvNumbers;  // the machine's backend (selinv_executor.cpp)
  std::int64_t width(std::int64_t k) const { return sym_.sn_start[k + 1] - sym_.sn_start[k]; }

  std::shared_ptr<const SolveLayout> layout_;  // whole
  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  const BlockStore& store_;  // its values
  const BlockStore lay_;     // where they lie, by the whole layout's block ids (no values)
  const ProcessGrid2D grid_;
  const StoreIndex index_;
  Topology topo_;
  int rank_ = 0, x_ = 0, y_ = 0;
  SelinvPlan plan_;
  TreePlan prep_plan_, inv_plan_;
  MessageEngine engine_;
  std::vector<double> hat_, z_;                // L^ panels and U^ blocks; Z, as the store lies
  std::vector<std::vector<double>> lt_, ut_;   // per supernode: L^(C_y)^T, U^(R_x) where this rank roots their broadcast
  std::vector<std::vector<double>> buf_;       // per invert slot: a broadcast's data or a reduction's sum
  std::vector<double> G_, P_, Q_, pack_, share_;  // scratch
  SupernodeSplit split_;
  double flops_ = 0.0;
  std::int64_t split_supernodes_ = 0;
  int runs_ = 0;  // runs so far: each run's messages travel under tags of their own
};

}  // namespace commsolve
