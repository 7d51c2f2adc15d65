// Restricted collectives (trees/) replayed in the simulator: every rank's tree plan, built
// as build_tree_plans_virtual builds it, run by the same CollectiveMachine the MPI engine
// runs, over a backend that prices the copies and sums instead of doing them. All
// collectives of the set are in flight at once, as under MPI. Statistics steps: 0
// broadcasts, 1 reductions; messages carry their key (8 bytes) and the values. Time goes to
// "compute" (stores and sums) and "comm" (copies out and messages); the engine adds idle.
#pragma once

#include <string>
#include <vector>

#include "commsolve/sim/simulator.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve::sim {

const std::vector<std::string>& collectives_categories();  // compute, comm

SimResult simulate_collectives(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                               const NetworkModel& net, const ComputeModel& cpu, Recording keep = {});

}  // namespace commsolve::sim
