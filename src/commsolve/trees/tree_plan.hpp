// Restricted collectives (broadcast / reduce-sum among any subset of ranks, no
// sub-communicators) and the trees that carry them (PSelInv paper, section III).
//
// A CollectiveSet lists the collectives as plain arrays. A tree shape turns each one into
// parent/children links, computed by every rank on its own from (shape, seed, collective
// id) with no communication; a TreePlan is one rank's links for every collective it is in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

enum class CollectiveKind : std::int8_t { broadcast = 0, reduce = 1 };

struct CollectiveSet {
  std::vector<std::int64_t> id;
  std::vector<std::int8_t> kind;       // CollectiveKind
  std::vector<int> root;
  std::vector<std::int64_t> part_ptr{0};  // participants of c: part[part_ptr[c], part_ptr[c+1])
  std::vector<int> part;                  // in "need order" for need-ordered trees; root anywhere
  std::vector<std::int64_t> count;        // doubles carried

  std::size_t size() const { return id.size(); }
  // Throws std::invalid_argument naming the collective for a root outside its participants,
  // a repeated participant, a rank outside [0, nranks), a negative count, or bad array sizes.
  void validate(int nranks) const;
};

struct TreeShape {
  // flat | binary | shifted-binary | need-ordered | node-aware | auto
  std::string name = "binary";
  std::uint64_t seed = 0;
  int flat_threshold = 8;  // auto: flat up to this many participants, shifted-binary above
};

const std::vector<std::string>& tree_shape_names();
// Throws std::invalid_argument naming the known shapes unless `shape` is one of them (and
// its auto threshold positive): the one check every entry point below runs.
void check_tree_shape(const TreeShape& shape);

struct TreeLinks {
  int parent = -1;  // -1 at the root
  std::vector<int> children;
};

// Parent and children of `rank` (a participant) in collective c. O(p log p) to order the
// participants, O(log p) for the links.
TreeLinks tree_links(const CollectiveSet& set, std::size_t c, int rank, const TreeShape& shape,
                     const Topology& topo);

// One rank's part: for each collective it takes part in (ascending index), its links.
struct TreePlan {
  int rank = 0;
  int nranks = 0;
  std::vector<std::int64_t> index;  // collective index in the set
  std::vector<TreeLinks> links;
};

// One participant's messages in one collective, into `step`: a broadcast receives from its
// parent and sends to its children, a reduction the other way; `bytes` per message.
void add_link_stats(StepStats& step, int rank, int parent, const int* children, std::size_t nchildren, bool broadcast,
                    std::int64_t bytes, const Topology& topo);

// Planned statistics: step 0 broadcasts, step 1 reductions; each message carries an 8-byte
// header (the collective index) and the payload, `count_scale` times the set's count
// (e.g. the number of right-hand sides).
CommStats tree_stats(const TreePlan& plan, const CollectiveSet& set, const Topology& topo,
                     std::int64_t count_scale = 1);

TreePlan build_tree_plan(const CollectiveSet& set, int rank, const TreeShape& shape, const Topology& topo);

// What running one rank's plan waits for: where each collective sits in the plan (-1: not
// in it), per plan entry the children a reduction waits for, and the messages it receives.
struct PlanArrivals {
  std::vector<std::int64_t> slot_of;
  std::vector<int> waiting;
  std::int64_t expected = 0;
};
PlanArrivals plan_arrivals(const TreePlan& plan, const CollectiveSet& set);
// Every rank's planned statistics without keeping the plans (for analysis at scale).
std::vector<CommStats> tree_stats_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                                          std::int64_t count_scale = 1);
// The same with each collective's messages in its own step: step[c] < nsteps (a workload of
// several kinds of collective, e.g. selected inversion's roles).
std::vector<CommStats> tree_stats_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                                          const std::vector<std::int8_t>& step, int nsteps);
CommStats tree_stats(const TreePlan& plan, const CollectiveSet& set, const Topology& topo,
                     const std::vector<std::int8_t>& step, int nsteps);
std::vector<TreePlan> build_tree_plans_virtual(const CollectiveSet& set, const TreeShape& shape, const Topology& topo);

}  // namespace commsolve
