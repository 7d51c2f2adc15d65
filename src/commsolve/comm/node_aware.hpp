// Node-aware halo plans (thesis Section 5.4 three-step NAP, Section 7.3 two-step).
//
// Both are built from a NodeView — the halo patterns of all ranks of one node — so the same
// code serves the virtual world (all views at hand) and MPI (one allgather inside the node).
// The three-step plan also needs the node graph (which node sends how many distinct values
// to which), from which every rank derives the same assignment of node pairs to ranks.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

struct NodeView {
  int node = 0;
  std::vector<HaloPattern> ranks;  // patterns of the node's ranks, ascending rank
  const HaloPattern& of(int rank) const;
};

using GlobalSet = std::vector<std::int64_t>;  // sorted, distinct global indices

// E(n, m) for this node n and every other node m: the distinct values owned on n that ranks
// on m need (eq. 5.14), computed from the send side of the node's patterns.
std::map<int, GlobalSet> node_send_sets(const NodeView& view, const Topology& topo, const Distribution& cols);
// E(k, n) for every other node k: the distinct values owned on k that ranks on this node n
// need, computed from the receive side. Equal to node k's node_send_sets()[n].
std::map<int, GlobalSet> node_recv_sets(const NodeView& view, const Topology& topo);

// Inter-node messages of the three-step plan: (source node, destination node) -> volume.
struct NodeGraph {
  std::vector<int> src, dst;
  std::vector<std::int64_t> volume;
};
void append_node_edges(NodeGraph& graph, int node, const std::map<int, GlobalSet>& send_sets);

// Which rank sends and which receives the one inter-node message of each node pair.
// Sending side (Section 5.4.1): a node's destinations by decreasing volume go to local
// ranks 0, 1, 2, ... (cyclically). Receiving side: sources by increasing volume go to local
// ranks ppn-1, ppn-2, ... (cyclically), which reproduces Tables 5.7-5.8 of the thesis. Ties
// go by node id.
struct PairAssignment {
  std::map<std::pair<int, int>, std::pair<int, int>> pair_ranks;  // (n, m) -> (sender, receiver)
  std::pair<int, int> at(int n, int m) const;
};
PairAssignment assign_node_pairs(const NodeGraph& graph, const Topology& topo);

// What moves inside one node and what arrives on it, keyed (sending rank, receiving rank).
// Built once per node in time linear in the node's halo volume; every rank's plan reads its
// own rows of it, so the sending and receiving sides agree by construction.
struct NodeTraffic {
  std::map<std::pair<int, int>, GlobalSet> gather;    // intra-node, first step
  std::map<std::pair<int, int>, GlobalSet> inter_in;  // inter-node messages arriving on this node
  std::map<std::pair<int, int>, GlobalSet> scatter;   // intra-node, last step (from == to: local copies)
};

// Three steps (Section 5.4): gather to the pair's sender merged with the values local ranks
// need directly (Tables 5.11 and 5.15 in one message), one message per node pair carrying
// each value once, redistribution on the receiving node.
NodeTraffic three_step_traffic(const NodeView& view, const Topology& topo, const Distribution& cols,
                               const std::map<int, GlobalSet>& send_sets, const std::map<int, GlobalSet>& recv_sets,
                               const PairAssignment& pairs);
CommPlan node_aware_plan(int rank, const NodeView& view, const Distribution& cols, const NodeTraffic& traffic,
                         const std::map<int, GlobalSet>& send_sets, const PairAssignment& pairs);

// Two steps (Section 7.3): each rank sends the distinct values a node needs to its partner
// there (the rank with the same local index modulo that node's size), which redistributes;
// on-node values travel directly in the first step.
NodeTraffic two_step_traffic(const NodeView& view, const Topology& topo);
CommPlan node_aware_2step_plan(int rank, const NodeView& view, const Topology& topo, const Distribution& cols,
                               const NodeTraffic& traffic);

}  // namespace commsolve
