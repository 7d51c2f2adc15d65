// The 2.5D multiply and LU (dense/) replayed in the simulator: every rank's tree plan, run by
// the same machines the MPI executor runs (dense/matmul_machine.hpp, dense/lu_machine.hpp), over
// backends that price the BLAS calls, copies and sums instead of doing them. Statistics steps:
// the algorithm's roles. Time goes to "compute" (BLAS, sums, copies into place), "comm"
// (packing and the messages' CPU overheads) and "idle" (waiting for messages).
#pragma once

#include <string>
#include <vector>

#include "commsolve/dense/dense_plan.hpp"
#include "commsolve/sim/simulator.hpp"

namespace commsolve::sim {

const std::vector<std::string>& dense_categories();  // compute, comm

SimResult simulate_matmul(const MatmulShape& s, const Grid25D& g, const TreeShape& shape, const Topology& topo,
                          const NetworkModel& net, const ComputeModel& cpu, Recording keep = {});
// tournament: with tournament pivoting, the pivots modelled (those of a random matrix:
// each step's pivot rows drawn uniformly from the rows left).
SimResult simulate_lu(std::int64_t n, std::int64_t nb, const Grid25D& g, const TreeShape& shape, const Topology& topo,
                      const NetworkModel& net, const ComputeModel& cpu, Recording keep = {},
                      std::int64_t piece = 1 << 16, bool tournament = false);

}  // namespace commsolve::sim
