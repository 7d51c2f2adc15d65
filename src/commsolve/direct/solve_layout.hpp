// A distributed solve's layout, checked once: the supernodal structure, the Px x Py x Pz
// process grid, the forest each supernode belongs to (direct/forests.hpp) and the block map
// (direct/block_layout.hpp). The MPI solve (TriSolve), the 3D factorization, the solve's
// statistics in the virtual world and the simulator all take one, so the rules of a layout
// are applied in one place: here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "commsolve/direct/block_layout.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/forests.hpp"
#include "commsolve/direct/rhs_layout.hpp"
#include "commsolve/direct/solve_schedule.hpp"
#include "commsolve/direct/symbolic.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// The grid rule. A grid is spelled "PxQ" or "PxQxR" (R = Pz layers); every dimension is
// positive and Pz a power of two (check_grid_3d), and it has at most `max_ranks` ranks (what
// `where` handles). Throws std::invalid_argument saying which rule it breaks.
ProcessGrid3D parse_grid(const std::string& text, std::int64_t max_ranks = 2147483647,
                         const std::string& where = "an MPI communicator");
// The squarest Px x Py x 1 grid of `nranks` ranks with Px <= Py (SuperLU_DIST's choice).
ProcessGrid3D squarest_grid(int nranks);
// "PxQxR".
std::string grid_name(const ProcessGrid3D& grid);
// Throws unless the grid has exactly `nranks` ranks; `spelled` names it as the user wrote it.
void check_grid_ranks(const ProcessGrid3D& grid, int nranks, const std::string& spelled);

// How the supernodes are split into a grid's forests: "nd" (the top log2 Pz levels of the
// structure's separator tree; ordering "tree") or "greedy" (SuperLU_DIST's balance).
const std::vector<std::string>& forest_partition_names();
ForestPartition partition_forests(const SupernodalStructure& sym, int pz, const std::string& method,
                                  double imbalance = 0.2);

class SolveLayout {
 public:
  // The forests are checked against the structure (one per supernode, the ancestor property)
  // and against the grid's Pz; the block map is derived once.
  SolveLayout(std::shared_ptr<const SupernodalStructure> sym, const ProcessGrid3D& grid,
              std::vector<std::int32_t> forest);
  // The same with the forests of `method` (partition_forests).
  SolveLayout(std::shared_ptr<const SupernodalStructure> sym, const ProcessGrid3D& grid, const std::string& method);

  const SupernodalStructure& sym() const { return *sym_; }
  const std::shared_ptr<const SupernodalStructure>& structure() const { return sym_; }
  const ProcessGrid3D& grid() const { return grid_; }
  const ForestPartition& forests() const { return forests_; }
  const SupernodeBlocks& blocks() const { return blocks_; }
  // Throws std::invalid_argument unless `opts` can run on this layout: its tree shape is
  // known and its algorithm runs on this Pz (check_algorithm_grid).
  void check(const SolveOptions& opts) const;

 private:
  std::shared_ptr<const SupernodalStructure> sym_;
  ProcessGrid3D grid_;
  ForestPartition forests_;
  SupernodeBlocks blocks_;
};

// Every rank's planned statistics of one solve on `layout` with `opts`, built in one process
// without MPI (steps as SolveStep). The moves of b and x (b_to_diagonal, x_from_diagonal) are
// counted when `rhs` is given.
std::vector<CommStats> solve_stats_virtual(const SolveLayout& layout, const SolveOptions& opts, const Topology& topo,
                                           int nrhs, const RhsMap* rhs = nullptr);

// Floating-point operations per grid of one solve with one right-hand side (L and U): a
// solved supernode K of width w with r rows below costs 2 w (w + r) per triangle.
std::vector<double> grid_flops(const SolveLayout& layout, SolveAlgorithm alg);
// The same for the whole factor solved once (one grid, every supernode).
double solve_flops(const SupernodalStructure& sym);

}  // namespace commsolve
