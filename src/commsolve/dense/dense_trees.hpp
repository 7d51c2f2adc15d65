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

#include "commsolve/dense/dense_plan.hpp"
#include "commsolve/trees/tree_plan.hpp"

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
  // A broadcast's piece s to its children, and a root's whole move s0 (v: all its values, null
  // in a simulation), through be.send(dest, id, values, n, role).
  template <class Backend>
  void forward(Backend& be, std::int64_t s, const double* v) const {
    for (int ch : children(s)) be.send(ch, id(s), v, count(s), role(s));
  }
  template <class Backend>
  void bcast_all(Backend& be, std::int64_t s0, const double* v) const {
    for (std::int64_t s = s0; s < s0 + pieces(s0); ++s) forward(be, s, v == nullptr ? nullptr : v + offset(s));
  }
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

namespace commsolve {

// The sums along z both LU machines make (dense/lu_machine.hpp, dense/lu_tournament_machine.hpp):
// a rank's share of block column or row m, piece by piece up its tree, summed at each node and
// kept at the root (the step's col_ready or row_ready then set; with nothing to sum, at once
// on the eliminating layer). Step: the machine's per-step record.
template <class Backend, class Step>
class LuSums {
 public:
  LuSums(DenseTrees& trees, Backend& be, std::vector<Step>& steps, const Grid25D& g, int z)
      : trees_(trees), be_(be), steps_(steps), c_(g.c), z_(z) {}
  // role: lu_reduce_col (the share of block column m) or lu_reduce_row (of block row m).
  void contribute(std::int64_t m, int role) {
    const std::int64_t s0 = trees_.slot(role, static_cast<std::int32_t>(m));
    if (s0 >= 0) {
      for (std::int64_t s = s0; s < s0 + trees_.pieces(s0); ++s)
        if (trees_.contribute(s)) up(s);
    } else if (z_ == static_cast<int>(m % c_)) {  // nothing to sum (c = 1, or no share): final as it is
      ready(m, role);
    }
  }
  void arrive(std::int64_t s, const double* v, std::int64_t n) {  // a child's piece
    be_.reduce_add(s, v, n);
    if (trees_.contribute(s)) up(s);
  }

 private:
  void ready(std::int64_t k, int role) {
    Step& st = steps_[static_cast<std::size_t>(k)];
    (role == lu_reduce_col ? st.col_ready : st.row_ready) = true;
  }
  void up(std::int64_t s) {  // a piece summed here: kept (root) or passed to the parent
    const int role = trees_.role(s);
    const std::int64_t k = trees_.step(s), off = trees_.offset(s), n = trees_.count(s), s0 = trees_.first(s);
    if (trees_.is_root(s)) {
      be_.reduce_in(s, role, k, off, n);
      if (trees_.piece_done(s)) ready(k, role);
    } else {
      be_.send(trees_.parent(s), trees_.id(s), be_.reduce_out(s0, s, role, k, off, n), n, role);
      if (trees_.piece_done(s)) be_.release(s0);
    }
  }
  DenseTrees& trees_;
  Backend& be_;
  std::vector<Step>& steps_;
  const int c_, z_;
};

}  // namespace commsolve
