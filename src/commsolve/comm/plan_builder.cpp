#include "commsolve/comm/plan_builder.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/node_aware.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

constexpr std::array<const char*, 3> concrete = {"standard", "node-aware-2step", "node-aware"};

void check_strategy(const std::string& s) {
  const auto& names = strategy_names();
  if (std::find(names.begin(), names.end(), s) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown communication strategy '" + s + "' (known: " + known + ")");
  }
}

std::int64_t inter_node_messages(const CommPlan& plan, const Topology& topo) {
  return plan_stats(plan, topo).total().msgs_sent[inter_node];
}

// ---- pattern (de)serialisation for the node allgather ---------------------------------
template <class T>
void put(std::vector<std::int64_t>& buf, const std::vector<T>& v) {
  buf.push_back(static_cast<std::int64_t>(v.size()));
  buf.insert(buf.end(), v.begin(), v.end());
}

template <class T>
std::vector<T> take(const std::int64_t*& p) {
  std::vector<T> v(static_cast<std::size_t>(*p++));
  for (auto& x : v) x = static_cast<T>(*p++);
  return v;
}

std::vector<std::int64_t> serialize(const HaloPattern& p) {
  std::vector<std::int64_t> b{p.rank, p.nranks, p.n_owned};
  put(b, p.halo_globals);
  put(b, p.recv_peers);
  put(b, p.recv_ptr);
  put(b, p.send_peers);
  put(b, p.send_ptr);
  put(b, p.send_idx);
  return b;
}

HaloPattern deserialize(const std::int64_t*& q) {
  HaloPattern p;
  p.rank = static_cast<int>(*q++);
  p.nranks = static_cast<int>(*q++);
  p.n_owned = *q++;
  p.halo_globals = take<std::int64_t>(q);
  p.recv_peers = take<int>(q);
  p.recv_ptr = take<std::int64_t>(q);
  p.send_peers = take<int>(q);
  p.send_ptr = take<std::int64_t>(q);
  p.send_idx = take<std::int32_t>(q);
  return p;
}

// Allgatherv of int64 buffers; returns every rank's buffer, concatenated in rank order.
std::vector<std::int64_t> allgather(const std::vector<std::int64_t>& mine, MPI_Comm comm) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(size), displs(size + 1, 0);
  check_mpi(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  for (int r = 0; r < size; ++r) displs[r + 1] = displs[r] + counts[r];
  std::vector<std::int64_t> all(displs[size]);
  check_mpi(MPI_Allgatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                           comm),
            "MPI_Allgatherv");
  return all;
}

NodeView gather_node_view(const HaloPattern& mine, const Topology& topo, MPI_Comm comm) {
  NodeView view;
  view.node = topo.node_of(mine.rank);
  MPI_Comm node_comm;
  check_mpi(MPI_Comm_split(comm, view.node, mine.rank, &node_comm), "MPI_Comm_split");
  std::vector<std::int64_t> all = allgather(serialize(mine), node_comm);
  MPI_Comm_free(&node_comm);
  const std::int64_t* q = all.data();
  for (std::size_t i = 0; i < topo.ranks_on_node(view.node).size(); ++i) view.ranks.push_back(deserialize(q));
  return view;
}

NodeView virtual_node_view(const std::vector<HaloPattern>& patterns, const Topology& topo, int node) {
  NodeView view;
  view.node = node;
  for (int r : topo.ranks_on_node(node)) view.ranks.push_back(patterns[r]);
  return view;
}

}  // namespace

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"standard", "node-aware", "node-aware-2step", "auto"};
  return names;
}

std::vector<CommPlan> build_plans_virtual(const std::vector<HaloPattern>& patterns, const Topology& topo,
                                          const Distribution& cols, const std::string& strategy) {
  check_strategy(strategy);
  require(static_cast<int>(patterns.size()) == topo.size(),
          "plans: " + std::to_string(patterns.size()) + " patterns for a topology of " +
              std::to_string(topo.size()) + " ranks");
  std::vector<CommPlan> plans;
  plans.reserve(patterns.size());
  if (strategy == "standard") {
    for (const auto& p : patterns) plans.push_back(standard_plan(p));
  } else if (strategy == "node-aware-2step") {
    for (int n = 0; n < topo.num_nodes(); ++n) {
      NodeView view = virtual_node_view(patterns, topo, n);
      NodeTraffic traffic = two_step_traffic(view, topo);
      for (int r : topo.ranks_on_node(n)) plans.push_back(node_aware_2step_plan(r, view, topo, cols, traffic));
    }
    std::sort(plans.begin(), plans.end(), [](const CommPlan& a, const CommPlan& b) { return a.rank < b.rank; });
  } else if (strategy == "node-aware") {
    // Two passes keep one node's view at a time: the node graph first (volumes only), then
    // each node's plans.
    NodeGraph graph;
    for (int n = 0; n < topo.num_nodes(); ++n)
      append_node_edges(graph, n, node_send_sets(virtual_node_view(patterns, topo, n), topo, cols));
    PairAssignment pairs = assign_node_pairs(graph, topo);
    for (int n = 0; n < topo.num_nodes(); ++n) {
      NodeView view = virtual_node_view(patterns, topo, n);
      auto send_sets = node_send_sets(view, topo, cols);
      NodeTraffic traffic = three_step_traffic(view, topo, cols, send_sets, node_recv_sets(view, topo), pairs);
      for (int r : topo.ranks_on_node(n)) plans.push_back(node_aware_plan(r, view, cols, traffic, send_sets, pairs));
    }
    std::sort(plans.begin(), plans.end(), [](const CommPlan& a, const CommPlan& b) { return a.rank < b.rank; });
  } else {  // auto
    std::vector<CommPlan> best;
    std::int64_t best_msgs = -1;
    for (const char* s : concrete) {
      std::vector<CommPlan> cand = build_plans_virtual(patterns, topo, cols, s);
      std::int64_t msgs = 0;
      for (const auto& p : cand) msgs = std::max(msgs, inter_node_messages(p, topo));
      if (best_msgs < 0 || msgs < best_msgs) {
        best = std::move(cand);
        best_msgs = msgs;
      }
    }
    plans = std::move(best);
  }
  return plans;
}

CommPlan build_plan_mpi(const HaloPattern& mine, const Topology& topo, const Distribution& cols,
                        const std::string& strategy, MPI_Comm comm) {
  check_strategy(strategy);
  if (strategy == "standard") return standard_plan(mine);
  if (strategy == "auto") {
    CommPlan best;
    std::int64_t best_msgs = -1;
    for (const char* s : concrete) {
      CommPlan cand = build_plan_mpi(mine, topo, cols, s, comm);
      std::int64_t msgs = inter_node_messages(cand, topo);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &msgs, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
      if (best_msgs < 0 || msgs < best_msgs) {
        best = std::move(cand);
        best_msgs = msgs;
      }
    }
    return best;
  }
  NodeView view = gather_node_view(mine, topo, comm);
  if (strategy == "node-aware-2step")
    return node_aware_2step_plan(mine.rank, view, topo, cols, two_step_traffic(view, topo));
  auto send_sets = node_send_sets(view, topo, cols);
  auto recv_sets = node_recv_sets(view, topo);
  NodeGraph mine_edges;
  if (topo.local_rank(mine.rank) == 0) append_node_edges(mine_edges, view.node, send_sets);
  std::vector<std::int64_t> buf;
  for (std::size_t e = 0; e < mine_edges.src.size(); ++e)
    buf.insert(buf.end(), {mine_edges.src[e], mine_edges.dst[e], mine_edges.volume[e]});
  std::vector<std::int64_t> all = allgather(buf, comm);
  NodeGraph graph;
  for (std::size_t i = 0; i + 2 < all.size(); i += 3) {
    graph.src.push_back(static_cast<int>(all[i]));
    graph.dst.push_back(static_cast<int>(all[i + 1]));
    graph.volume.push_back(all[i + 2]);
  }
  PairAssignment pairs = assign_node_pairs(graph, topo);
  NodeTraffic traffic = three_step_traffic(view, topo, cols, send_sets, recv_sets, pairs);
  return node_aware_plan(mine.rank, view, cols, traffic, send_sets, pairs);
}

}  // namespace commsolve
