// Parallel selected inversion (direct/selinv_plan.hpp) replayed in the simulator: every
// rank's tree plans of both phases, run by the same SelinvMachine the MPI run drives
// (direct/selinv_machine.hpp), over a backend that prices the dense products, copies and
// sums instead of doing them. A rank starts the invert phase once its prepare messages are
// in, as the MPI run does (messages of the next phase wait, as under their own tag); it
// works one supernode at a time and handles the messages that came meanwhile before the
// next (Simulator::resume), as the engine's idle work goes.
// Statistics steps as SelinvRole; time goes to "compute" (the products, triangular
// multiplications and sums) and "comm" (packing and the messages); the engine adds idle.
#pragma once

#include <string>
#include <vector>

#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/sim/simulator.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve::sim {

const std::vector<std::string>& selinv_categories();  // compute, comm

// `layout` must be a 2D grid (Pz = 1) of topo.size() ranks.
SimResult simulate_selinv(const SolveLayout& layout, const TreeShape& shape, bool symmetric, const Topology& topo,
                          const NetworkModel& net, const ComputeModel& cpu, Recording keep = {});

}  // namespace commsolve::sim
