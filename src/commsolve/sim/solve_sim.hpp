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

#include <string>
#include <vector>

#include "commsolve/direct/rhs_layout.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/sim/simulator.hpp"

namespace commsolve::sim {

// What a solve's time goes to (the simulator's categories for this workload; idle added).
enum SolveCategory : int { fp = 0, xy_comm, z_comm, redistribute };
const std::vector<std::string>& solve_categories();  // fp, xy_comm, z_comm, redistribute

// One solve on `layout` with `opts` and `nrhs` right-hand sides. With `rhs` (the rows'
// distribution and orders, as solve_stats_virtual) b and x move as the MPI solve moves them;
// without, they are taken to sit on the diagonal owners already (no redistribution).
SimResult simulate_solve(const SolveLayout& layout, const SolveOptions& opts, int nrhs, const RhsMap* rhs,
                         const Topology& topo, const NetworkModel& net, const ComputeModel& cpu, Recording keep = {});

}  // namespace commsolve::sim
