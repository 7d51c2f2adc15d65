// One rank's view of a dense plan's trees while it runs, shared by the 2.5D machines
// (dense/matmul_machine.hpp, dense/lu_machine.hpp): the slot of each of its collectives, the
// moves they make up (a move of several pieces is consecutive slots: its first slot names it),
// a lookup of moves by (role, step), the children a broadcast forwards to and the
// contributions a reduction waits for. Nothing here is sized by the whole plan: the simulator
// keeps one per rank.
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
  DenseTrees(const DensePlan& dp, const TreePlan& plan, std::int64_t nsteps) : dp_(dp), plan_(plan), nsteps_(nsteps) {
    const std::size_t ns = plan.index.size();
    waiting_.assign(ns, 0);
    first_.assign(ns, 0);
    offset_.assign(ns, 0);
    left_.assign(ns, 0);
    for (std::size_t s = 0; s < ns; ++s) {
      const std::size_t c = static_cast<std::size_t>(plan.index[s]);
      ids_.push_back(dp.set.id[c]);
      if (dp.piece[c] == 0) {
        first_[s] = static_cast<std::int64_t>(s);
        by_step_.emplace_back(key(dp.role[c], dp.step[c]), static_cast<std::int64_t>(s));
      } else {
        first_[s] = first_[s - 1];
        offset_[s] = offset_[s - 1] + count(static_cast<std::int64_t>(s) - 1);
      }
      ++left_[static_cast<std::size_t>(first_[s])];
      const TreeLinks& l = plan.links[s];
      if (is_broadcast(static_cast<std::int64_t>(s))) {
        expected_ += l.parent >= 0 ? 1 : 0;
      } else {  // its children, and this rank's own share (contribute())
        waiting_[s] = static_cast<int>(l.children.size()) + 1;
        expected_ += static_cast<std::int64_t>(l.children.size());
      }
    }
    for (std::size_t s = 0; s < ns; ++s) pieces_.push_back(left_[static_cast<std::size_t>(first_[s])]);
    std::sort(by_step_.begin(), by_step_.end());
  }

  std::int64_t expected() const { return expected_; }
  // The move of `role` serving `step` (-1 for none) this rank takes part in (its first slot), or -1.
  std::int64_t slot(int role, std::int32_t step) const {
    const std::int64_t k = key(role, step);
    auto it = std::lower_bound(by_step_.begin(), by_step_.end(), std::pair<std::int64_t, std::int64_t>(k, -1));
    return it != by_step_.end() && it->first == k ? it->second : -1;
  }
  // The slot of the collective a message names by its id.
  std::int64_t slot_of(std::int64_t id, std::int64_t n) const {
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);  // ascending
    if (it == ids_.end() || *it != id) throw std::logic_error("dense: a message for a collective this rank is not in");
    const std::int64_t s = it - ids_.begin();
    if (n != count(s)) throw std::logic_error("dense: a message of the wrong length");
    return s;
  }
  std::int64_t collective(std::int64_t s) const { return plan_.index[static_cast<std::size_t>(s)]; }  // in the set
  std::int64_t id(std::int64_t s) const { return ids_[static_cast<std::size_t>(s)]; }  // what messages carry
  std::int64_t count(std::int64_t s) const { return dp_.set.count[static_cast<std::size_t>(collective(s))]; }
  int role(std::int64_t s) const { return dp_.role[static_cast<std::size_t>(collective(s))]; }
  std::int32_t step(std::int64_t s) const { return dp_.step[static_cast<std::size_t>(collective(s))]; }
  // The move a slot belongs to (its first slot), its pieces, and where a piece starts in it.
  std::int64_t first(std::int64_t s) const { return first_[static_cast<std::size_t>(s)]; }
  std::int64_t pieces(std::int64_t s) const { return pieces_[static_cast<std::size_t>(s)]; }
  std::int64_t offset(std::int64_t s) const { return offset_[static_cast<std::size_t>(s)]; }
  std::int64_t total(std::int64_t s0) const {
    const std::int64_t last = s0 + pieces(s0) - 1;
    return offset(last) + count(last);
  }
  bool is_broadcast(std::int64_t s) const {
    return dp_.set.kind[static_cast<std::size_t>(collective(s))] == static_cast<std::int8_t>(CollectiveKind::broadcast);
  }
  bool is_root(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].parent < 0; }
  int parent(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].parent; }
  const std::vector<int>& children(std::int64_t s) const { return plan_.links[static_cast<std::size_t>(s)].children; }
  // A reduction piece's contribution (a child's or this rank's own) is in: true once all are.
  bool contribute(std::int64_t s) {
    if (waiting_[static_cast<std::size_t>(s)] <= 0) throw std::logic_error("dense: a reduction contributed to twice");
    return --waiting_[static_cast<std::size_t>(s)] == 0;
  }
  // One piece of the move of slot s is through (arrived, or summed and passed on): true once
  // all are.
  bool piece_done(std::int64_t s) {
    std::int64_t& left = left_[static_cast<std::size_t>(first(s))];
    if (left <= 0) throw std::logic_error("dense: a piece of a move done twice");
    return --left == 0;
  }

 private:
  std::int64_t key(int role, std::int32_t step) const { return role * (nsteps_ + 1) + step + 1; }
  const DensePlan& dp_;
  const TreePlan& plan_;
  std::vector<std::pair<std::int64_t, std::int64_t>> by_step_;  // (role, step) key -> first slot, sorted
  std::vector<int> waiting_;
  std::vector<std::int64_t> ids_, first_, offset_, left_, pieces_;
  std::int64_t nsteps_;
  std::int64_t expected_ = 0;
};

}  // namespace commsolve
