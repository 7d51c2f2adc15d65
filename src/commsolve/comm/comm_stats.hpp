// CommStats: messages and bytes a rank sends and receives, per plan step, split into
// intra-node and inter-node traffic. Computed from a plan without running it, and
// recorded by the MPI executor while it runs; the two must agree exactly.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

enum Locality { intra_node = 0, inter_node = 1 };

struct StepStats {
  std::array<std::int64_t, 2> msgs_sent{}, bytes_sent{}, msgs_recv{}, bytes_recv{};

  void add_send(Locality where, std::int64_t bytes) {
    ++msgs_sent[where];
    bytes_sent[where] += bytes;
  }
  void add_recv(Locality where, std::int64_t bytes) {
    ++msgs_recv[where];
    bytes_recv[where] += bytes;
  }
  StepStats& operator+=(const StepStats& o);
  bool operator==(const StepStats&) const = default;
};

struct CommStats {
  std::vector<StepStats> steps;

  StepStats total() const;
  // The statistics of the same plan run in reverse: sends and receives swap.
  CommStats reversed() const;
  bool operator==(const CommStats&) const = default;
};

inline Locality locality(const Topology& topo, int a, int b) {
  return topo.same_node(a, b) ? intra_node : inter_node;
}

// Planned statistics of one rank's plan; `value_bytes` per entry moved (8 for doubles).
CommStats plan_stats(const CommPlan& plan, const Topology& topo, int value_bytes = 8);

}  // namespace commsolve
