#include "commsolve/comm/node_aware.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "commsolve/core/index_map.hpp"

namespace commsolve {

namespace {

void sort_unique(GlobalSet& s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

// The halo entries `p` receives from `owner` (one contiguous, sorted segment), or none.
// Writes one rank's plan: tracks where every value sits on this rank, receives straight into
// the halo when a message is exactly a run of it, otherwise into the work area followed by
// local copies, and checks at the end that every halo entry is filled exactly once.
class PlanWriter {
 public:
  PlanWriter(int rank, const HaloPattern& me, const Distribution& cols, int nsteps, const char* strategy)
      : rank_(rank), cols_(cols), halo_pos_(me.halo_globals.size()), located_(me.halo_globals.size()),
        placed_(me.halo_globals.size(), 0) {
    plan_.rank = rank;
    plan_.nranks = me.nranks;
    plan_.strategy = strategy;
    plan_.n_owned = me.n_owned;
    plan_.n_halo = me.n_halo();
    plan_.steps.resize(nsteps);
    for (std::size_t i = 0; i < me.halo_globals.size(); ++i)
      halo_pos_.set(me.halo_globals[i], static_cast<std::int32_t>(i));
  }

  void send(int step, int peer, const GlobalSet& globals) {
    if (globals.empty()) return;
    PlanStep& st = plan_.steps[step];
    st.send_peers.push_back(peer);
    for (std::int64_t g : globals) st.send_idx.push_back(where(g));
    st.send_ptr.push_back(static_cast<std::int64_t>(st.send_idx.size()));
  }

  void recv(int step, int peer, const GlobalSet& globals) {
    if (globals.empty()) return;
    PlanStep& st = plan_.steps[step];
    st.recv_peers.push_back(peer);
    st.recv_count.push_back(static_cast<std::int64_t>(globals.size()));
    if (contiguous_in_halo(globals)) {
      std::int32_t first = halo_pos_.get(globals[0]);
      st.recv_offset.push_back(plan_.n_owned + first);
      for (std::size_t i = 0; i < globals.size(); ++i) {
        place(first + static_cast<std::int32_t>(i));
        located_.set(globals[i], static_cast<std::int32_t>(plan_.n_owned + first + i));
      }
      return;
    }
    const std::int64_t base = plan_.n_owned + plan_.n_halo + plan_.n_work;
    st.recv_offset.push_back(base);
    plan_.n_work += static_cast<std::int64_t>(globals.size());
    for (std::size_t i = 0; i < globals.size(); ++i) located_.set(globals[i], static_cast<std::int32_t>(base + i));
    copy_needed(globals);
  }

  // Copies into the halo the entries of `globals` this rank needs and holds elsewhere.
  void copy_needed(const GlobalSet& globals) {
    for (std::int64_t g : globals) {
      std::int32_t h = halo_pos_.get(g);
      if (h < 0 || placed_[h]) continue;
      place(h);
      plan_.copy_src.push_back(where(g));
      plan_.copy_dst.push_back(static_cast<std::int32_t>(plan_.n_owned + h));
    }
  }

  CommPlan finish() {
    auto missing = std::find(placed_.begin(), placed_.end(), 0);
    if (missing != placed_.end())
      throw std::logic_error(plan_.strategy + " plan of rank " + std::to_string(rank_) + ": halo entry " +
                             std::to_string(missing - placed_.begin()) + " is never received");
    plan_.validate();
    return std::move(plan_);
  }

 private:
  std::int32_t where(std::int64_t g) const {
    if (cols_.owner(g) == rank_) return static_cast<std::int32_t>(cols_.local_index(g));
    std::int32_t at = located_.get(g);
    if (at < 0)
      throw std::logic_error(plan_.strategy + " plan of rank " + std::to_string(rank_) + ": value " +
                             std::to_string(g) + " is sent before it arrives");
    return at;
  }

  bool contiguous_in_halo(const GlobalSet& globals) const {
    const std::int32_t first = halo_pos_.get(globals[0]);
    if (first < 0) return false;
    for (std::size_t i = 1; i < globals.size(); ++i)
      if (halo_pos_.get(globals[i]) != first + static_cast<std::int32_t>(i)) return false;
    for (std::size_t i = 0; i < globals.size(); ++i)
      if (placed_[first + i]) return false;
    return true;
  }

  void place(std::int32_t pos) {
    if (placed_[pos])
      throw std::logic_error(plan_.strategy + " plan of rank " + std::to_string(rank_) + ": halo entry " +
                             std::to_string(pos) + " received twice");
    placed_[pos] = 1;
  }

  int rank_;
  const Distribution& cols_;
  CommPlan plan_;
  IndexMap halo_pos_;  // global -> halo position
  IndexMap located_;   // global -> space index, values held here
  std::vector<char> placed_;
};

}  // namespace

const HaloPattern& NodeView::of(int rank) const {
  for (const HaloPattern& p : ranks)
    if (p.rank == rank) return p;
  throw std::logic_error("node view of node " + std::to_string(node) + " has no rank " + std::to_string(rank));
}

std::map<int, GlobalSet> node_send_sets(const NodeView& view, const Topology& topo, const Distribution& cols) {
  std::map<int, GlobalSet> out;
  for (const HaloPattern& p : view.ranks)
    for (std::size_t i = 0; i < p.send_peers.size(); ++i) {
      int m = topo.node_of(p.send_peers[i]);
      if (m == view.node) continue;
      GlobalSet& e = out[m];
      for (std::int64_t k = p.send_ptr[i]; k < p.send_ptr[i + 1]; ++k)
        e.push_back(cols.global_index(p.rank, p.send_idx[k]));
    }
  for (auto& [m, e] : out) sort_unique(e);
  return out;
}

std::map<int, GlobalSet> node_recv_sets(const NodeView& view, const Topology& topo) {
  std::map<int, GlobalSet> out;
  for (const HaloPattern& p : view.ranks)
    for (std::size_t i = 0; i < p.recv_peers.size(); ++i) {
      int k = topo.node_of(p.recv_peers[i]);
      if (k == view.node) continue;
      out[k].insert(out[k].end(), p.halo_globals.begin() + p.recv_ptr[i], p.halo_globals.begin() + p.recv_ptr[i + 1]);
    }
  for (auto& [k, e] : out) sort_unique(e);
  return out;
}

void append_node_edges(NodeGraph& graph, int node, const std::map<int, GlobalSet>& send_sets) {
  for (const auto& [m, e] : send_sets) {
    graph.src.push_back(node);
    graph.dst.push_back(m);
    graph.volume.push_back(static_cast<std::int64_t>(e.size()));
  }
}

std::pair<int, int> PairAssignment::at(int n, int m) const {
  auto it = pair_ranks.find({n, m});
  if (it == pair_ranks.end())
    throw std::logic_error("node pair (" + std::to_string(n) + ", " + std::to_string(m) + ") has no assignment");
  return it->second;
}

PairAssignment assign_node_pairs(const NodeGraph& graph, const Topology& topo) {
  std::map<int, std::vector<std::size_t>> out_edges, in_edges;
  for (std::size_t e = 0; e < graph.src.size(); ++e) {
    out_edges[graph.src[e]].push_back(e);
    in_edges[graph.dst[e]].push_back(e);
  }
  PairAssignment a;
  for (auto& [n, edges] : out_edges) {
    std::sort(edges.begin(), edges.end(), [&](std::size_t x, std::size_t y) {
      return graph.volume[x] != graph.volume[y] ? graph.volume[x] > graph.volume[y] : graph.dst[x] < graph.dst[y];
    });
    const auto& local = topo.ranks_on_node(n);
    for (std::size_t i = 0; i < edges.size(); ++i)
      a.pair_ranks[{n, graph.dst[edges[i]]}].first = local[i % local.size()];
  }
  for (auto& [m, edges] : in_edges) {
    std::sort(edges.begin(), edges.end(), [&](std::size_t x, std::size_t y) {
      return graph.volume[x] != graph.volume[y] ? graph.volume[x] < graph.volume[y] : graph.src[x] < graph.src[y];
    });
    const auto& local = topo.ranks_on_node(m);
    for (std::size_t i = 0; i < edges.size(); ++i)
      a.pair_ranks[{graph.src[edges[i]], m}].second = local[local.size() - 1 - i % local.size()];
  }
  return a;
}

namespace {

// Appends p's halo segment i (values from one owner) to `to`.
void append_segment(GlobalSet& to, const HaloPattern& p, std::size_t i) {
  to.insert(to.end(), p.halo_globals.begin() + p.recv_ptr[i], p.halo_globals.begin() + p.recv_ptr[i + 1]);
}

// One rank's plan from its node's traffic tables: `inter_out` are its inter-node messages.
CommPlan write_node_plan(int rank, const NodeView& view, const Distribution& cols, const char* name, int nsteps,
                         int inter_step, const NodeTraffic& tr,
                         const std::vector<std::pair<int, GlobalSet>>& inter_out) {
  PlanWriter w(rank, view.of(rank), cols, nsteps, name);
  const int last = nsteps - 1;
  for (const auto& [key, g] : tr.gather)
    if (key.first == rank) w.send(0, key.second, g);
  for (const auto& [key, g] : tr.gather)
    if (key.second == rank) w.recv(0, key.first, g);
  for (const auto& [peer, g] : inter_out) w.send(inter_step, peer, g);
  for (const auto& [key, g] : tr.inter_in)
    if (key.second == rank) w.recv(inter_step, key.first, g);
  for (const auto& [key, g] : tr.scatter) {
    if (key.first != rank) continue;
    if (key.second == rank)
      w.copy_needed(g);
    else
      w.send(last, key.second, g);
  }
  for (const auto& [key, g] : tr.scatter)
    if (key.second == rank && key.first != rank) w.recv(last, key.first, g);
  return w.finish();
}

int partner(const Topology& topo, int t, int node) {
  const auto& on = topo.ranks_on_node(node);
  return on[topo.local_rank(t) % on.size()];
}

}  // namespace

NodeTraffic three_step_traffic(const NodeView& view, const Topology& topo, const Distribution& cols,
                               const std::map<int, GlobalSet>& send_sets, const std::map<int, GlobalSet>& recv_sets,
                               const PairAssignment& pairs) {
  const int n = view.node;
  NodeTraffic tr;
  for (const HaloPattern& p : view.ranks)
    for (std::size_t i = 0; i < p.recv_peers.size(); ++i) {
      int o = p.recv_peers[i];
      int k = topo.node_of(o);
      if (k == n)  // fully local values travel with the gather
        append_segment(tr.gather[{o, p.rank}], p, i);
      else  // the rank that received node k's message forwards them
        append_segment(tr.scatter[{pairs.at(k, n).second, p.rank}], p, i);
    }
  for (const auto& [m, e] : send_sets) {
    const int sender = pairs.at(n, m).first;
    for (std::int64_t g : e) {
      int t = cols.owner(g);
      if (t != sender) tr.gather[{t, sender}].push_back(g);
    }
  }
  for (auto& [key, g] : tr.gather) sort_unique(g);
  for (const auto& [k, e] : recv_sets) tr.inter_in[{pairs.at(k, n).first, pairs.at(k, n).second}] = e;
  return tr;
}

CommPlan node_aware_plan(int rank, const NodeView& view, const Distribution& cols, const NodeTraffic& traffic,
                         const std::map<int, GlobalSet>& send_sets, const PairAssignment& pairs) {
  std::vector<std::pair<int, GlobalSet>> out;
  for (const auto& [m, e] : send_sets) {
    auto [sender, receiver] = pairs.at(view.node, m);
    if (sender == rank) out.emplace_back(receiver, e);
  }
  return write_node_plan(rank, view, cols, "node-aware", 3, 1, traffic, out);
}

NodeTraffic two_step_traffic(const NodeView& view, const Topology& topo) {
  const int n = view.node;
  NodeTraffic tr;
  for (const HaloPattern& p : view.ranks)
    for (std::size_t i = 0; i < p.recv_peers.size(); ++i) {
      int o = p.recv_peers[i];
      if (topo.node_of(o) == n) {
        append_segment(tr.gather[{o, p.rank}], p, i);
      } else {
        int q = partner(topo, o, n);
        append_segment(tr.inter_in[{o, q}], p, i);
        append_segment(tr.scatter[{q, p.rank}], p, i);
      }
    }
  for (auto& [key, g] : tr.inter_in) sort_unique(g);
  return tr;
}

CommPlan node_aware_2step_plan(int rank, const NodeView& view, const Topology& topo, const Distribution& cols,
                               const NodeTraffic& traffic) {
  const HaloPattern& me = view.of(rank);
  std::map<int, GlobalSet> to_node;
  for (std::size_t i = 0; i < me.send_peers.size(); ++i) {
    int m = topo.node_of(me.send_peers[i]);
    if (m == view.node) continue;
    for (std::int64_t k = me.send_ptr[i]; k < me.send_ptr[i + 1]; ++k)
      to_node[m].push_back(cols.global_index(rank, me.send_idx[k]));
  }
  std::vector<std::pair<int, GlobalSet>> out;
  for (auto& [m, e] : to_node) {
    sort_unique(e);
    out.emplace_back(partner(topo, rank, m), std::move(e));
  }
  return write_node_plan(rank, view, cols, "node-aware-2step", 2, 0, traffic, out);
}

}  // namespace commsolve
