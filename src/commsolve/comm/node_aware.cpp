#include "comm/node_aware.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace commsolve {

namespace {

void sort_unique(GlobalSet& s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

// The halo entries `p` receives from `owner` (one contiguous, sorted segment), or none.
GlobalSet halo_from(const HaloPattern& p, int owner) {
  auto it = std::lower_bound(p.recv_peers.begin(), p.recv_peers.end(), owner);
  if (it == p.recv_peers.end() || *it != owner) return {};
  std::size_t i = static_cast<std::size_t>(it - p.recv_peers.begin());
  return GlobalSet(p.halo_globals.begin() + p.recv_ptr[i], p.halo_globals.begin() + p.recv_ptr[i + 1]);
}

void append(GlobalSet& to, const GlobalSet& from) { to.insert(to.end(), from.begin(), from.end()); }

// Writes one rank's plan: tracks where every value sits on this rank, receives straight into
// the halo when a message is exactly a run of it, otherwise into the work area followed by
// local copies, and checks at the end that every halo entry is filled exactly once.
class PlanWriter {
 public:
  PlanWriter(int rank, const HaloPattern& me, const Distribution& cols, int nsteps, const char* strategy)
      : rank_(rank), cols_(cols), placed_(me.halo_globals.size(), 0) {
    plan_.rank = rank;
    plan_.nranks = me.nranks;
    plan_.strategy = strategy;
    plan_.n_owned = me.n_owned;
    plan_.n_halo = me.n_halo();
    plan_.steps.resize(nsteps);
    halo_pos_.reserve(me.halo_globals.size());
    for (std::size_t i = 0; i < me.halo_globals.size(); ++i)
      halo_pos_.emplace(me.halo_globals[i], static_cast<std::int32_t>(i));
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
      std::int32_t first = halo_pos_.at(globals[0]);
      st.recv_offset.push_back(plan_.n_owned + first);
      for (std::size_t i = 0; i < globals.size(); ++i) {
        place(first + static_cast<std::int32_t>(i));
        located_[globals[i]] = static_cast<std::int32_t>(plan_.n_owned + first + i);
      }
      return;
    }
    const std::int64_t base = plan_.n_owned + plan_.n_halo + plan_.n_work;
    st.recv_offset.push_back(base);
    plan_.n_work += static_cast<std::int64_t>(globals.size());
    for (std::size_t i = 0; i < globals.size(); ++i) located_[globals[i]] = static_cast<std::int32_t>(base + i);
    copy_needed(globals);
  }

  // Copies into the halo the entries of `globals` this rank needs and holds elsewhere.
  void copy_needed(const GlobalSet& globals) {
    for (std::int64_t g : globals) {
      auto h = halo_pos_.find(g);
      if (h == halo_pos_.end() || placed_[h->second]) continue;
      place(h->second);
      plan_.copy_src.push_back(where(g));
      plan_.copy_dst.push_back(static_cast<std::int32_t>(plan_.n_owned + h->second));
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
    auto it = located_.find(g);
    if (it == located_.end())
      throw std::logic_error(plan_.strategy + " plan of rank " + std::to_string(rank_) + ": value " +
                             std::to_string(g) + " is sent before it arrives");
    return it->second;
  }

  bool contiguous_in_halo(const GlobalSet& globals) const {
    auto first = halo_pos_.find(globals[0]);
    if (first == halo_pos_.end()) return false;
    for (std::size_t i = 1; i < globals.size(); ++i) {
      auto h = halo_pos_.find(globals[i]);
      if (h == halo_pos_.end() || h->second != first->second + static_cast<std::int32_t>(i)) return false;
    }
    for (std::size_t i = 0; i < globals.size(); ++i)
      if (placed_[first->second + i]) return false;
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
  std::unordered_map<std::int64_t, std::int32_t> halo_pos_;  // global -> halo position
  std::unordered_map<std::int64_t, std::int32_t> located_;   // global -> space index, values held here
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

std::map<int, GlobalSet> node_recv_sets(const NodeView& view, const Topology& topo, const Distribution&) {
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

CommPlan node_aware_plan(int rank, const NodeView& view, const Topology& topo, const Distribution& cols,
                         const std::map<int, GlobalSet>& send_sets, const std::map<int, GlobalSet>& recv_sets,
                         const PairAssignment& pairs) {
  const int n = view.node;
  const HaloPattern& me = view.of(rank);
  const auto& local = topo.ranks_on_node(n);
  PlanWriter w(rank, me, cols, 3, "node-aware");

  // Step 1 (gather, Section 5.4.2 "local redistribution of initial data", merged with the
  // fully local values): what t sends to u — values u needs from t itself, plus t's values
  // for every node pair that u sends across the network.
  auto gather = [&](int t, int u) {
    GlobalSet c = halo_from(view.of(u), t);
    for (const auto& [m, e] : send_sets)
      if (pairs.at(n, m).first == u)
        for (std::int64_t g : e)
          if (cols.owner(g) == t) c.push_back(g);
    sort_unique(c);
    return c;
  };
  for (int u : local)
    if (u != rank) w.send(0, u, gather(rank, u));
  for (int t : local)
    if (t != rank) w.recv(0, t, gather(t, rank));

  // Step 2: one message per node pair, each value once.
  for (const auto& [m, e] : send_sets)
    if (pairs.at(n, m).first == rank) w.send(1, pairs.at(n, m).second, e);
  for (const auto& [k, e] : recv_sets)
    if (pairs.at(k, n).second == rank) w.recv(1, pairs.at(k, n).first, e);

  // Step 3 (redistribution of received off-node data): what q forwards to s — the values s
  // needs from every node whose message q received, in node then owner order.
  auto forward = [&](int q, int s) {
    GlobalSet c;
    const HaloPattern& ps = view.of(s);
    for (const auto& [k, e] : recv_sets) {
      if (pairs.at(k, n).second != q) continue;
      for (std::size_t i = 0; i < ps.recv_peers.size(); ++i)
        if (topo.node_of(ps.recv_peers[i]) == k)
          c.insert(c.end(), ps.halo_globals.begin() + ps.recv_ptr[i], ps.halo_globals.begin() + ps.recv_ptr[i + 1]);
    }
    return c;
  };
  for (int s : local) {
    if (s == rank)
      w.copy_needed(forward(rank, rank));
    else
      w.send(2, s, forward(rank, s));
  }
  for (int q : local)
    if (q != rank) w.recv(2, q, forward(q, rank));
  return w.finish();
}

CommPlan node_aware_2step_plan(int rank, const NodeView& view, const Topology& topo, const Distribution& cols) {
  const int n = view.node;
  const HaloPattern& me = view.of(rank);
  const auto& local = topo.ranks_on_node(n);
  PlanWriter w(rank, me, cols, 2, "node-aware-2step");
  auto partner = [&](int t, int m) {
    const auto& on_m = topo.ranks_on_node(m);
    return on_m[topo.local_rank(t) % on_m.size()];
  };

  // Step 1: on-node values go directly; off-node, each rank sends the distinct values node m
  // needs from it to its partner on m.
  for (int u : local)
    if (u != rank) w.send(0, u, halo_from(view.of(u), rank));
  std::map<int, GlobalSet> to_node;
  for (std::size_t i = 0; i < me.send_peers.size(); ++i) {
    int m = topo.node_of(me.send_peers[i]);
    if (m == n) continue;
    for (std::int64_t k = me.send_ptr[i]; k < me.send_ptr[i + 1]; ++k)
      to_node[m].push_back(cols.global_index(rank, me.send_idx[k]));
  }
  for (auto& [m, e] : to_node) {
    sort_unique(e);
    w.send(0, partner(rank, m), e);
  }
  for (int t : local)
    if (t != rank) w.recv(0, t, halo_from(me, t));
  // Off-node owners this rank receives for: needed somewhere on the node, partnered with us.
  std::vector<int> sources;
  for (const HaloPattern& p : view.ranks)
    for (int o : p.recv_peers)
      if (topo.node_of(o) != n && partner(o, n) == rank) sources.push_back(o);
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  for (int t : sources) {
    GlobalSet e;
    for (const HaloPattern& p : view.ranks) append(e, halo_from(p, t));
    sort_unique(e);
    w.recv(0, t, e);
  }

  // Step 2: the partner forwards to each rank of its node what that rank needs, by source.
  auto forward = [&](int q, int s) {
    GlobalSet c;
    const HaloPattern& ps = view.of(s);
    for (std::size_t i = 0; i < ps.recv_peers.size(); ++i) {
      int o = ps.recv_peers[i];
      if (topo.node_of(o) != n && partner(o, n) == q)
        c.insert(c.end(), ps.halo_globals.begin() + ps.recv_ptr[i], ps.halo_globals.begin() + ps.recv_ptr[i + 1]);
    }
    return c;
  };
  for (int s : local) {
    if (s == rank)
      w.copy_needed(forward(rank, rank));
    else
      w.send(1, s, forward(rank, s));
  }
  for (int q : local)
    if (q != rank) w.recv(1, q, forward(q, rank));
  return w.finish();
}

}  // namespace commsolve
