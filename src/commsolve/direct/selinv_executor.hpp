// Parallel selected inversion on MPI (direct/selinv_plan.hpp says what moves): one rank's
// part, over its block store of the factors on a Px x Py grid. Two runs of the message
// engine, one per phase, every collective carried by the chosen tree shape:
//   - prepare: the diagonal owners send their inverse triangles down and along their process
//     column and row; each L or U owner forms its L^ or U^ blocks as they come and (the
//     unsymmetric form) sends them across the diagonal at once.
//   - invert: each rank takes its supernodes in descending order (a topological order of
//     the elimination tree from the root). At K it first starts the broadcasts it roots (their
//     data is known since prepare), then waits until K's broadcasts have reached it and every
//     block of Z it holds for a supernode above K is final: one product of its part of
//     Z(C, C) with them gives its contributions to K's reductions. Everything else is driven
//     by arrivals: broadcasts are forwarded as they come, a reduction goes up its tree when
//     its last contribution is in, and its root finishes the block of Z (and, for a block of
//     K's column, adds its share to the diagonal block's reduction).
// No barriers; a rank waits only for data it needs.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/comm_stats.hpp"
#include "direct/block_store.hpp"
#include "direct/factor_grid.hpp"
#include "direct/selected_inverse.hpp"
#include "direct/selinv_plan.hpp"
#include "direct/solve_layout.hpp"
#include "trees/engine.hpp"
#include "trees/tree_plan.hpp"

namespace commsolve {

class SelectedInversion2D {
 public:
  // Collective on comm (the layout's Px x Py x 1 ranks). `store`: this rank's factors (the
  // triangular solve's: diagonal blocks as inverse triangles, L and U blocks); read only,
  // must outlive this object, as must `layout`.
  SelectedInversion2D(MPI_Comm comm, const Topology& topo, const SolveLayout& layout, const BlockStore& store,
                      const TreeShape& shape, bool symmetric);

  struct Times {  // this rank's seconds
    double prepare = 0, invert = 0, total = 0;
  };
  Times run();  // collective

  // This rank's blocks of Z = (L U)^-1 as triples (factor numbering), after run().
  SelectedEntries entries() const;
  CommStats planned() const;  // steps as SelinvRole
  const CommStats& recorded() const { return engine_.recorded(); }
  double flops() const { return flops_; }

 private:
  std::int64_t width(std::int64_t k) const { return sym_.sn_start[k + 1] - sym_.sn_start[k]; }
  std::int64_t slot(const SelinvPhase& ph, const PlanArrivals& arr, std::int64_t k, SelinvRole role, int x,
                    int y) const;
  bool is_destination(const SelinvPhase& ph, std::int64_t c) const;
  void forward(const TreePlan& plan, const SelinvPhase& ph, std::int64_t slot, const double* v, std::int64_t n);
  // prepare
  void prepare_arrival(std::int64_t c, const double* v, std::int64_t n);
  void make_lhat(std::int64_t k, const double* inv_l);
  void make_uhat(std::int64_t k, const double* inv_u);
  void send_group(SelinvRole role, std::int64_t k, int x, int y, const std::vector<double>& packed);
  void place_group(std::vector<double>& to, std::int64_t k, int x, int y, const double* v, bool by_row);
  // invert
  void invert_arrival(std::int64_t c, const double* v, std::int64_t n);
  bool step();
  void enter(std::int64_t k);
  bool ready(std::int64_t k) const;
  void work(std::int64_t k);
  void gather_z(std::int64_t k, std::vector<double>& G);
  void contribute(std::int64_t s, const double* v);
  void finalize(std::int64_t c);
  void final_event(std::int64_t k);

  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  const BlockStore& store_;
  const ProcessGrid2D grid_;
  const StoreIndex index_;
  Topology topo_;
  TreeShape shape_;
  int rank_ = 0, x_ = 0, y_ = 0;
  SelinvPlan plan_;
  TreePlan prep_plan_, inv_plan_;
  PlanArrivals prep_arr_, inv_arr_;
  MessageEngine engine_;
  std::vector<double> hat_, z_;                 // L^ panels and U^ blocks; Z, as the store lies
  std::vector<std::vector<double>> lt_, ut_;    // per supernode: L^(C_y)^T, U^(R_x) where this rank roots their broadcast
  std::vector<std::vector<double>> held_, acc_; // per invert slot: a broadcast's data, a reduction's sum
  std::vector<char> have_;                      // per invert slot: the broadcast's data is here
  std::vector<int> waiting_;                    // per invert slot: contributions still to come (own included)
  std::vector<std::int32_t> steps_;             // the supernodes this rank takes part in, descending
  std::vector<std::int32_t> remaining_;         // per supernode: blocks of Z to be finished here
  std::int64_t frontier_ = 0, outstanding_ = 0; // remaining_ summed over supernodes >= frontier_
  std::size_t next_ = 0;
  bool entered_ = false;
  SupernodeSplit split_;
  std::vector<double> G_, P_, Q_;  // scratch
  double flops_ = 0.0;
};

}  // namespace commsolve
