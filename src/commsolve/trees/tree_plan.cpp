#include "commsolve/trees/tree_plan.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "commsolve/core/error.hpp"

namespace commsolve {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Binary halving over list positions [0, n), position 0 the root: the rest of a subtree's
// range is cut in two, the first element of each half (the larger half first) is a child.
TreeLinks binary_links(const std::vector<int>& order, std::size_t pos) {
  std::size_t head = 0, hi = order.size();
  TreeLinks l;
  while (head != pos) {
    std::size_t a = head + 1, mid = a + (hi - a + 1) / 2;
    l.parent = order[head];
    if (pos < mid) {
      head = a;
      hi = mid;
    } else {
      head = mid;
    }
  }
  std::size_t a = head + 1;
  if (a < hi) {
    std::size_t mid = a + (hi - a + 1) / 2;
    l.children.push_back(order[a]);
    if (mid < hi) l.children.push_back(order[mid]);
  }
  return l;
}

// Binomial over list positions [0, n), position 0 the root (MPICH's and Cray's broadcast): the
// parent of i > 0 is i less its highest bit; the children of i are i + 2^j for 2^j > i, the
// farthest (largest subtree) first.
TreeLinks binomial_links(const std::vector<int>& order, std::size_t pos) {
  TreeLinks l;
  std::size_t high = 1;
  while (high <= pos) high <<= 1;  // the lowest power of two above pos
  if (pos > 0) l.parent = order[pos - (high >> 1)];
  for (std::size_t step = pos == 0 ? 1 : high; pos + step < order.size(); step <<= 1) l.children.push_back(order[pos + step]);
  std::reverse(l.children.begin(), l.children.end());  // the largest subtree first, as MPICH sends
  return l;
}

// [root, receivers in the shape's order].
std::vector<int> ordered(const CollectiveSet& set, std::size_t c, const std::string& shape, std::uint64_t seed) {
  const int root = set.root[c];
  std::vector<int> recv;
  for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
    if (set.part[k] != root) recv.push_back(set.part[k]);
  if (shape != "need-ordered") std::sort(recv.begin(), recv.end());
  if (shape == "shifted-binary" && recv.size() > 1) {
    // Section III: a circular shift at a position every rank derives from (seed, id).
    std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(set.id[c])));
    std::rotate(recv.begin(), recv.begin() + static_cast<std::ptrdiff_t>(h % recv.size()), recv.end());
  }
  recv.insert(recv.begin(), root);
  return recv;
}

}  // namespace

void CollectiveSet::validate(int nranks) const {
  const std::size_t n = id.size();
  require(kind.size() == n && root.size() == n && count.size() == n && part_ptr.size() == n + 1,
          "collectives: id, kind, root, count and part_ptr sizes disagree");
  require(part_ptr[0] == 0 && part_ptr[n] == static_cast<std::int64_t>(part.size()),
          "collectives: part_ptr must start at 0 and end at len(part)");
  std::vector<int> seen(nranks, -1);
  for (std::size_t c = 0; c < n; ++c) {
    const auto which = [&](const std::string& what) { return "collective " + std::to_string(id[c]) + ": " + what; };
    require(kind[c] == 0 || kind[c] == 1, [&] { return which("kind must be broadcast (0) or reduce (1)"); });
    require(count[c] >= 0, [&] { return which("negative count"); });
    require(part_ptr[c + 1] >= part_ptr[c], [&] { return which("part_ptr decreases"); });
    bool has_root = false;
    for (std::int64_t k = part_ptr[c]; k < part_ptr[c + 1]; ++k) {
      int r = part[k];
      require(r >= 0 && r < nranks, [&] {
        return which("participant " + std::to_string(r) + " outside [0, " + std::to_string(nranks) + ")");
      });
      require(seen[r] != static_cast<int>(c), [&] { return which("participant " + std::to_string(r) + " repeated"); });
      seen[r] = static_cast<int>(c);
      has_root |= r == root[c];
    }
    require(has_root, [&] { return which("root " + std::to_string(root[c]) + " is not a participant"); });
  }
}

const std::vector<std::string>& tree_shape_names() {
  static const std::vector<std::string> names = {"flat", "binary", "shifted-binary", "need-ordered", "node-aware",
                                                 "binomial", "rectangular", "auto"};
  return names;
}

namespace {

// One collective's tree, built once; answers any participant's links.
class CollectiveTree {
 public:
  CollectiveTree(const CollectiveSet& set, std::size_t c, const TreeShape& shape, const Topology& topo) {
    name_ = shape.name;
    const std::int64_t np = set.part_ptr[c + 1] - set.part_ptr[c];
    if (name_ == "auto") name_ = np <= shape.flat_threshold ? "flat" : "shifted-binary";
    root_ = set.root[c];
    if (name_ == "flat") {
      for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
        if (set.part[k] != root_) flat_children_.push_back(set.part[k]);
      std::sort(flat_children_.begin(), flat_children_.end());
    } else if (name_ == "binary" || name_ == "shifted-binary" || name_ == "need-ordered" || name_ == "binomial") {
      order_ = ordered(set, c, name_, shape.seed);
      index(order_);
    } else if (name_ == "rectangular") {
      rectangular(set, c, topo);
    } else if (name_ == "node-aware") {
      // Between one leader per node (the root on its own node, the lowest participant
      // elsewhere), then inside every node from its leader; binary at both levels.
      std::map<int, std::vector<int>> by_node;
      for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
        by_node[topo.node_of(set.part[k])].push_back(set.part[k]);
      order_.push_back(root_);
      for (auto& [node, ranks] : by_node) {
        std::sort(ranks.begin(), ranks.end());
        int leader = node == topo.node_of(root_) ? root_ : ranks.front();
        if (leader != root_) order_.push_back(leader);
        std::vector<int> local{leader};
        for (int r : ranks)
          if (r != leader) local.push_back(r);
        for (int r : local) node_list_of_.emplace_back(r, static_cast<int>(node_lists_.size()));
        node_lists_.push_back(std::move(local));
      }
      std::sort(order_.begin() + 1, order_.end());
      std::sort(node_list_of_.begin(), node_list_of_.end());
      index(order_);
    } else {
      throw std::invalid_argument("unknown tree shape '" + shape.name + "'");
    }
  }

  TreeLinks links(int rank) const {
    if (name_ == "rectangular") return explicit_[find(pos_, rank)];
    if (name_ == "binomial") return binomial_links(order_, find(pos_, rank));
    if (name_ == "flat") {
      TreeLinks l;
      if (rank == root_)
        l.children = flat_children_;
      else
        l.parent = root_;
      return l;
    }
    if (name_ != "node-aware") return binary_links(order_, find(pos_, rank));
    const std::vector<int>& local = node_lists_[find(node_list_of_, rank)];
    std::size_t at = static_cast<std::size_t>(std::find(local.begin(), local.end(), rank) - local.begin());
    TreeLinks inner = binary_links(local, at);
    if (at != 0) return inner;  // not its node's leader
    TreeLinks outer = binary_links(order_, find(pos_, rank));
    outer.children.insert(outer.children.end(), inner.children.begin(), inner.children.end());
    return outer;
  }

 private:
  void index(const std::vector<int>& order) {
    for (std::size_t i = 0; i < order.size(); ++i) pos_.emplace_back(order[i], static_cast<int>(i));
    std::sort(pos_.begin(), pos_.end());
  }
  static std::size_t find(const std::vector<std::pair<int, int>>& sorted, int rank) {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(rank, -1));
    if (it == sorted.end() || it->first != rank) throw std::logic_error("tree: rank is not a participant");
    return static_cast<std::size_t>(it->second);
  }

  // Rectangular (Watts and van de Geijn; Solomonik et al.'s BG/P multicasts): one leader per
  // node (the root on its node, the lowest participant elsewhere). Among the leaders, 2d trees
  // on a d-dimensional torus, tree t = id mod 2d going in direction + (t < d) or - and taking
  // the dimensions in the order t mod d, t mod d + 1, ...: at each, every node reached so far
  // starts one chain along its ring through the leaders that differ from it only there. Every
  // hop of a box's tree crosses one link, and the pieces of a long message, dealt to the trees
  // in turn, spread evenly over the root's 2d links (its busiest link carries half the message,
  // not all of it, on a 3D torus; the trees are not edge-disjoint as BG/P's are). Leaders no line
  // reaches (a participant set that is not a box) hang from the root in a binary tree; inside a
  // node, a binary tree from its leader. Without a torus the nodes make one ring.
  void rectangular(const CollectiveSet& set, std::size_t c, const Topology& topo) {
    std::map<int, std::vector<int>> by_node;
    for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
      by_node[topo.node_of(set.part[k])].push_back(set.part[k]);
    const std::vector<int> dims = topo.has_torus() ? topo.torus_dims() : std::vector<int>{topo.num_nodes()};
    const int nd = static_cast<int>(dims.size());
    const auto coord = [&](int node, int d) { return topo.has_torus() ? topo.coord(node, d) : node; };
    std::map<int, int> leader;  // node -> its leader
    for (auto& [node, ranks] : by_node) {
      std::sort(ranks.begin(), ranks.end());
      leader[node] = node == topo.node_of(root_) ? root_ : ranks.front();
    }
    std::map<int, std::vector<int>> kids;  // rank -> children
    const auto link = [&](int parent, int child) { kids[parent].push_back(child); };
    const int root_node = topo.node_of(root_);
    std::vector<int> reached{root_node};
    std::map<int, bool> done{{root_node, true}};
    const int tree = static_cast<int>(set.id[c] % (2 * nd)), first = tree % nd, sign = tree < nd ? 1 : -1;
    for (int level = 0; level < nd; ++level) {
      const int d = (first + level) % nd, L = dims[d];
      // A node's ring in dimension d: its coordinates but d's (at most one reached node on each).
      int stride = 1;
      for (int e = 0; e < d && topo.has_torus(); ++e) stride *= dims[e];
      const auto ring = [&](int node) { return node - coord(node, d) * stride; };
      std::map<int, int> on_ring;  // ring -> the reached node on it
      for (int u : reached) on_ring.emplace(ring(u), u);
      std::map<int, std::vector<std::pair<int, int>>> line;  // reached node -> (steps away, node) on its ring
      for (const auto& [node, lead] : leader) {
        if (done.count(node)) continue;
        auto it = on_ring.find(ring(node));
        if (it != on_ring.end())
          line[it->second].emplace_back(((coord(node, d) - coord(it->second, d)) * sign % L + L) % L, node);
      }
      for (auto& [u, on] : line) {
        std::sort(on.begin(), on.end());
        int prev = leader[u];
        for (const auto& [steps, node] : on) {
          link(prev, leader[node]);
          prev = leader[node];
          reached.push_back(node);
          done[node] = true;
        }
      }
    }
    std::vector<int> rest{root_};
    for (const auto& [node, lead] : leader)
      if (!done.count(node)) rest.push_back(lead);
    for (std::size_t i = 1; i < rest.size(); ++i) link(binary_links(rest, i).parent, rest[i]);
    for (const auto& [node, ranks] : by_node) {  // inside each node, from its leader
      std::vector<int> local{leader[node]};
      for (int r : ranks)
        if (r != leader[node]) local.push_back(r);
      for (std::size_t i = 1; i < local.size(); ++i) link(binary_links(local, i).parent, local[i]);
    }
    for (const auto& [node, ranks] : by_node)
      for (int r : ranks) order_.push_back(r);
    std::sort(order_.begin(), order_.end());
    index(order_);
    explicit_.assign(order_.size(), TreeLinks{});
    for (auto& [parent, children] : kids) {
      explicit_[find(pos_, parent)].children = children;
      for (int ch : children) explicit_[find(pos_, ch)].parent = parent;
    }
  }

  std::string name_;
  int root_ = 0;
  std::vector<TreeLinks> explicit_;  // rectangular: links by position in order_
  std::vector<int> flat_children_, order_;
  std::vector<std::pair<int, int>> pos_;  // (rank, position in order_), sorted
  std::vector<std::vector<int>> node_lists_;
  std::vector<std::pair<int, int>> node_list_of_;  // (rank, node list), sorted
};

void add_stats(StepStats& st, int rank, const TreeLinks& l, std::int8_t kind, std::int64_t count,
               const Topology& topo) {
  add_link_stats(st, rank, l.parent, l.children.data(), l.children.size(),
                 kind == static_cast<std::int8_t>(CollectiveKind::broadcast), 8 + 8 * count, topo);
}
void check_steps(const CollectiveSet& set, const std::vector<std::int8_t>& step, int nsteps) {
  require(step.size() == set.size(), "collectives: one step per collective");
  for (std::int8_t s : step) require(s >= 0 && s < nsteps, "collectives: a step outside [0, nsteps)");
}

// Every rank's statistics, collective c's messages in step `step[c]` (its kind where `step` is
// empty), `count_scale` times its count each.
std::vector<CommStats> stats_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                                     const std::vector<std::int8_t>& step, int nsteps, std::int64_t count_scale) {
  check_tree_shape(shape);
  set.validate(topo.size());
  std::vector<CommStats> stats(topo.size());
  for (auto& s : stats) s.steps.resize(static_cast<std::size_t>(nsteps));
  for (std::size_t c = 0; c < set.size(); ++c) {
    CollectiveTree tree(set, c, shape, topo);
    const std::int8_t st = step.empty() ? set.kind[c] : step[c];
    for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
      add_stats(stats[set.part[k]].steps[st], set.part[k], tree.links(set.part[k]), set.kind[c],
                set.count[c] * count_scale, topo);
  }
  return stats;
}

// One rank's, likewise.
CommStats rank_stats(const TreePlan& plan, const CollectiveSet& set, const Topology& topo,
                     const std::vector<std::int8_t>& step, int nsteps, std::int64_t count_scale) {
  CommStats s;
  s.steps.resize(static_cast<std::size_t>(nsteps));
  for (std::size_t i = 0; i < plan.index.size(); ++i) {
    const std::size_t c = static_cast<std::size_t>(plan.index[i]);
    add_stats(s.steps[step.empty() ? set.kind[c] : step[c]], plan.rank, plan.links[i], set.kind[c],
              set.count[c] * count_scale, topo);
  }
  return s;
}

}  // namespace

void check_tree_shape(const TreeShape& shape) {
  const auto& names = tree_shape_names();
  require(std::find(names.begin(), names.end(), shape.name) != names.end(),
          "unknown tree shape '" + shape.name +
              "' (known: flat, binary, shifted-binary, need-ordered, node-aware, binomial, rectangular, auto)");
  require(shape.flat_threshold >= 1, "tree shape: flat_threshold must be at least 1, got " +
                                         std::to_string(shape.flat_threshold));
}

void add_link_stats(StepStats& st, int rank, int parent, const int* children, std::size_t nchildren, bool broadcast,
                    std::int64_t bytes, const Topology& topo) {
  for (std::size_t i = 0; i < nchildren; ++i)
    broadcast ? st.add_send(locality(topo, rank, children[i]), bytes) : st.add_recv(locality(topo, rank, children[i]), bytes);
  if (parent >= 0)
    broadcast ? st.add_recv(locality(topo, rank, parent), bytes) : st.add_send(locality(topo, rank, parent), bytes);
}

TreeLinks tree_links(const CollectiveSet& set, std::size_t c, int rank, const TreeShape& shape, const Topology& topo) {
  return CollectiveTree(set, c, shape, topo).links(rank);
}

std::vector<CommStats> tree_stats_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                                          std::int64_t count_scale) {
  return stats_virtual(set, shape, topo, {}, 2, count_scale);
}

std::vector<CommStats> tree_stats_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                                          const std::vector<std::int8_t>& step, int nsteps) {
  check_steps(set, step, nsteps);
  return stats_virtual(set, shape, topo, step, nsteps, 1);
}

CommStats tree_stats(const TreePlan& plan, const CollectiveSet& set, const Topology& topo,
                     const std::vector<std::int8_t>& step, int nsteps) {
  check_steps(set, step, nsteps);
  return rank_stats(plan, set, topo, step, nsteps, 1);
}

TreePlan build_tree_plan(const CollectiveSet& set, int rank, const TreeShape& shape, const Topology& topo) {
  check_tree_shape(shape);
  TreePlan plan;
  plan.rank = rank;
  plan.nranks = topo.size();
  for (std::size_t c = 0; c < set.size(); ++c)
    for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k)
      if (set.part[k] == rank) {
        plan.index.push_back(static_cast<std::int64_t>(c));
        plan.links.push_back(tree_links(set, c, rank, shape, topo));
        break;
      }
  return plan;
}

std::vector<TreePlan> build_tree_plans_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo) {
  check_tree_shape(shape);
  set.validate(topo.size());
  // One pass over the collectives, building every participant's links.
  std::vector<TreePlan> plans(topo.size());
  for (int r = 0; r < topo.size(); ++r) {
    plans[r].rank = r;
    plans[r].nranks = topo.size();
  }
  for (std::size_t c = 0; c < set.size(); ++c) {
    CollectiveTree tree(set, c, shape, topo);
    for (std::int64_t k = set.part_ptr[c]; k < set.part_ptr[c + 1]; ++k) {
      int r = set.part[k];
      plans[r].index.push_back(static_cast<std::int64_t>(c));
      plans[r].links.push_back(tree.links(r));
    }
  }
  return plans;
}

PlanArrivals plan_arrivals(const TreePlan& plan, const CollectiveSet& set) {
  PlanArrivals a;
  a.slot_of.assign(set.size(), -1);
  a.waiting.assign(plan.index.size(), 0);
  for (std::size_t i = 0; i < plan.index.size(); ++i) {
    const std::size_t c = static_cast<std::size_t>(plan.index[i]);
    a.slot_of[c] = static_cast<std::int64_t>(i);
    const TreeLinks& l = plan.links[i];
    if (set.kind[c] == static_cast<std::int8_t>(CollectiveKind::broadcast)) {
      a.expected += l.parent >= 0 ? 1 : 0;
    } else {
      a.waiting[i] = static_cast<int>(l.children.size());
      a.expected += static_cast<std::int64_t>(l.children.size());
    }
  }
  return a;
}

CommStats tree_stats(const TreePlan& plan, const CollectiveSet& set, const Topology& topo, std::int64_t count_scale) {
  return rank_stats(plan, set, topo, {}, 2, count_scale);
}

}  // namespace commsolve
