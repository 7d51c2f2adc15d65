// One rank's view of a dense plan's trees while it runs, shared by the 2.5D machines
// (dense/matmul_machine.hpp, dense/lu_machine.hpp): the slot of each of its collectives, a
// lookup by (role, step), the children a broadcast forwards to and a reduction waits for.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dense/dense_plan.hpp"
#include "trees/tree_plan.hpp"

namespace commsolve {

class DenseTrees {
 public:
  // nsteps: the steps collectives serve (SUMMA panels or elimination steps).
  DenseTrees(const DensePlan& dp, const TreePlan& plan, std::int64_t nsteps)
      : dp_(dp), plan_(plan), arrivals_(plan_arrivals(plan, dp.set)), nsteps_(nsteps) {
    by_step_.reserve(plan.index.size());
    for (std::size_t s = 0; s < plan.index.size(); ++s) {
      const std::size_t c = static_cast<std::size_t>(plan.index[s]);
      by_step_.emplace_back(key(dp.role[c], dp.step[c]), static_cast<std::int64_t>(s));
    }
    std::sort(by_step_.begin(), by_step_.end());
    waiting_ = arrivals_.waiting;  // a reduction's children; the rank's own share is added by contribute()
    for (std::size_t s = 0; s < plan.index.size(); ++s)
      if (!is_broadcast(s)) ++waiting_[s];
  }

  std::int64_t expected() const { return arrivals_.expected; }
  // This rank's slot of the collective of `role` serving `step` (-1 for none), or -1 if it is in none.
  std::int64_t slot(int role, std::int32_t step) const {
    const std::int64_t k = key(role, step);
    auto it = std::lower_bound(by_step_.begin(), by_step_.end(), std::pair<std::int64_t, std::int64_t>(k, -1));
    return it != by_step_.end() && it->first == k ? it->second : -1;
  }
  std::int64_t slot_of(std::int64_t c, std::int64_t n) const {
    const std::int64_t s = c >= 0 && c < static_cast<std::int64_t>(dp_.set.size()) ? arrivals_.slot_of[c] : -1;
    if (s < 0) throw std::logic_error("dense: a message for a collective this rank is not in");
    if (n != dp_.set.count[static_cast<std::size_t>(c)]) throw std::logic_error("dense: a message of the wrong length");
    return s;
  }
  std::int64_t collective(std::int64_t s) const { return plan_.index[static_cast<std::size_t>(s)]; }
  std::int64_t count(std::int64_t s) const { return dp_.set.count[static_cast<std::size_t>(collective(s))]; }
  int role(std::int64_t s) const { return dp_.role[static_cast<std::size_t>(collective(s))]; }
  std::int32_t step(std::int64_t s) const { return dp_.step[static_cast<std::size_t>(collective(s))]; }
  bool is_broadcast(std::int64_t s) const {
    return dp_.set.kind[static_cast<std::size_t>(collective(s))] == static_cast<std::int8_t>(CollectiveKind::broadcast);
  }
  bool is_root(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].parent < 0; }
  int parent(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].parent; }
  const std::vector<int>& children(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].children; }
  // A reduction's contribution (a child's or this rank's own) is in: true once all are.
  bool contribute(std::int64_t s) {
    if (waiting_[static_cast<std::size_t>(s)] <= 0) throw std::logic_error("dense: a reduction contributed to twice");
    return --waiting_[static_cast<std::size_t>(s)] == 0;
  }

 private:
  std::int64_t key(int role, std::int32_t step) const { return role * (nsteps_ + 1) + step + 1; }
  const DensePlan& dp_;
  const TreePlan& plan_;
  PlanArrivals arrivals_;
  std::vector<std::pair<std::int64_t, std::int64_t>> by_step_;  // (role, step) key -> slot, sorted
  std::vector<int> waiting_;
  std::int64_t nsteps_;
};

}  // namespace commsolve
