// Building plans by strategy name, for every rank at once (virtual world) or for this rank
// under MPI. Both paths run the same builders; tests require their results to be equal.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// "standard", "node-aware" (3-step), "node-aware-2step", and "auto": the strategy with the
// fewest inter-node messages on the busiest rank (ties: fewer steps). The chosen strategy's
// name is recorded in CommPlan::strategy.
const std::vector<std::string>& strategy_names();

// Plans of all ranks from all ranks' patterns. Local.
std::vector<CommPlan> build_plans_virtual(const std::vector<HaloPattern>& patterns, const Topology& topo,
                                          const Distribution& cols, const std::string& strategy);

// This rank's plan. Collective on comm: node-aware strategies gather the patterns of the
// node's ranks (one allgather in a node communicator) and the node graph (one allgatherv).
CommPlan build_plan_mpi(const HaloPattern& mine, const Topology& topo, const Distribution& cols,
                        const std::string& strategy, MPI_Comm comm);

}  // namespace commsolve
