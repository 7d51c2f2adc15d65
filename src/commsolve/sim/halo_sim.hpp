// Halo exchanges (comm/comm_plan.hpp) replayed in the simulator: every rank's CommPlan run
// as the MPI executor (HaloExecutor) runs it. Per step: pack the values the step sends,
// post its sends and receives, wait for the receives; after the last step, the local copies
// from the work area into the halo. `block` values per entry (as the executor's block);
// `repeat` exchanges back to back. Everything counts as communication: the one category of
// this workload ("comm"; the engine adds idle).
#pragma once

#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/sim/simulator.hpp"

namespace commsolve::sim {

const std::vector<std::string>& halo_categories();  // comm

SimResult simulate_halo(const std::vector<CommPlan>& plans, const Topology& topo, const NetworkModel& net,
                        const ComputeModel& cpu, int block = 1, int repeat = 1, Recording keep = {});

}  // namespace commsolve::sim
