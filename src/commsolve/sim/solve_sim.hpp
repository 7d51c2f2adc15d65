// The distributed triangular solves (direct/trisolve.hpp) replayed in the simulator: every
// rank's program is built in one process from the same schedules the MPI code builds on
// each rank (solve_program, phase_collectives, tree plans, make_phase, the inter-grid steps
// and the b/x moves), and run with the same message-driven loop (PhaseMachine) over a
// backend that prices block products instead of doing them. Nothing about the algorithms
// is described a second time here.
//
// What each rank does, in order (as TriSolve::solve): b to the diagonal owners (one halo
// exchange), its grid's program (phases; inter-grid steps as blocking sends and receives
// between partner ranks), x back. Time is accounted as: floating point (block products,
// sums), XY communication (message overheads and waits inside a phase), Z communication
// (inter-grid steps, including waiting for the partner grid), redistribution (b and x).
#pragma once

#include <cstdint>
#include <vector>

#include "direct/forests.hpp"
#include "direct/solve_schedule.hpp"
#include "sim/simulator.hpp"
#include "sparse/distribution.hpp"

namespace commsolve::sim {

struct SolveSimInput {
  const SupernodalStructure* sym = nullptr;
  ProcessGrid3D grid;
  const ForestPartition* forests = nullptr;
  SolveAlgorithm algorithm = SolveAlgorithm::two_d;
  TreeShape shape;
  bool packed_z = true;
  int nrhs = 1;
  // The rows' distribution and orders (as solve_stats_virtual); without them b and x are
  // taken to sit on the diagonal owners already (no redistribution).
  const Distribution* dist = nullptr;
  const std::vector<std::int32_t>* row_order = nullptr;
  const std::vector<std::int32_t>* col_order = nullptr;
};

SimResult simulate_solve(const SolveSimInput& in, const Topology& topo, const NetworkModel& net,
                         const ComputeModel& cpu, Recording keep = {});

}  // namespace commsolve::sim
