// The message-driven loop of one solve phase on one rank (SC'23 Algorithm 3), written once
// for every backend: on MPI with the numbers (solve_executor), and in the simulator with
// their costs only (sim/). A supernode's sum is complete once its counter (tree children
// plus local blocks, SuperLU_DIST's fmod/bmod) falls to zero: then it goes up its reduction
// tree, or at the diagonal owner the supernode is solved with its inverted diagonal block,
// its solution forwarded down its broadcast tree and applied to the local blocks that use
// it, which may complete more sums (a work stack, no recursion).
//
// The synchronous part of a phase (PhaseSchedule::order: ICS'19's forests above the leaves
// and its ancestors) is taken one entry at a time in that order, as a rank in a blocking
// MPI_Reduce / MPI_Bcast per supernode does: messages for later entries are added (sums)
// or held (solutions) until their turn. The rest of the phase goes message-driven meanwhile.
//
// A Backend provides (`x`: a solution w x nrhs, nullptr for a backend without numbers):
//   void send(int dest, std::int64_t key, const double* x, std::int64_t n, bool broadcast);
//   const double* lower_panel(std::int32_t col, const double* x);  // panel(col) x: the L blocks of a column
//   void scatter(std::int64_t block, std::int32_t entry, const double* part);  // add an L block's rows
//   void upper_block(std::int64_t block, std::int32_t entry, const double* x);  // add U(K, J) x(J)
//   void add_message(std::int32_t entry, const double* values, std::int64_t n);  // a child's partial sum
//   const double* settle(std::int32_t entry);  // at the root: rhs -= sum; solve if the entry solves
//   const double* known(std::int32_t entry);   // a context supernode's solution (U phases)
//   const double* sum(std::int32_t entry);     // a partial sum to send up
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/solve_schedule.hpp"

namespace commsolve {

template <class Backend>
class PhaseMachine {
 public:
  PhaseMachine(const PhaseSchedule& ph, const LocalLayout2D& layout, Backend& backend)
      : ph_(ph), layout_(layout), b_(backend), pending_(ph.waiting) {}

  // The work that needs no message: sums with nothing to wait for (in solve order) and, in
  // a U phase, the context supernodes whose solution this rank already holds.
  void start() {
    const std::size_t m = ph_.key.size();
    for (std::size_t q = 0; q < m; ++q) {
      const std::size_t e = ph_.upper ? q : m - 1 - q;  // the stack pops the last pushed first
      if (!ph_.is_broadcast(static_cast<std::int64_t>(e)) && pending_[e] == 0 && !ph_.gated[e])
        stack_.push_back(static_cast<std::int32_t>(e));
    }
    for (std::int32_t e : ph_.starts) {
      if (ph_.gated[e]) continue;
      const double* x = b_.known(e);
      forward(e, x);
      use(e, x);
    }
    progress();
  }

  // One message: a supernode's solution (broadcast) or a child's partial sum (reduction).
  void arrive(std::int64_t key, const double* values, std::int64_t len, int nrhs) {
    const std::int64_t e = ph_.entry(key);
    if (e < 0 || len != ph_.width[e] * nrhs)
      throw std::logic_error("solve phase: unexpected message (key " + std::to_string(key) + ")");
    const auto i = static_cast<std::int32_t>(e);
    if (ph_.is_broadcast(e) && ph_.gated[e]) {
      held_[i].assign(values, values == nullptr ? values : values + len);  // the backend's buffer is reused
    } else if (ph_.is_broadcast(e)) {
      forward(i, values);
      use(i, values);
    } else {
      b_.add_message(i, values, len);
      contributed(i);
    }
    progress();
  }

  std::int64_t solved() const { return solved_; }
  // Every entry of the synchronous part taken (true when there is none).
  bool finished() const { return next_ == ph_.order.size(); }

 private:
  void contributed(std::int32_t e) {
    if (--pending_[e] == 0 && !ph_.gated[e]) stack_.push_back(e);
  }
  void forward(std::int32_t e, const double* x) {
    for (std::int64_t c = ph_.child_ptr[e]; c < ph_.child_ptr[e + 1]; ++c)
      b_.send(ph_.children[c], ph_.key[e], x, ph_.width[e], true);
  }
  // This rank's blocks of the phase that use the solution of entry e's supernode.
  void use(std::int32_t e, const double* x) {
    const std::int32_t loc = ph_.local[e];
    if (loc < 0) return;
    if (!ph_.upper) {
      const double* part = b_.lower_panel(loc, x);
      for (std::int64_t p = layout_.l_ptr[loc]; p < layout_.l_ptr[loc + 1]; ++p) {
        b_.scatter(p, ph_.l_target[p], part);
        contributed(ph_.l_target[p]);
      }
    } else {
      for (std::int64_t q = ph_.u_ptr[loc]; q < ph_.u_ptr[loc + 1]; ++q) {
        b_.upper_block(ph_.u_pos[q], ph_.u_target[q], x);
        contributed(ph_.u_target[q]);
      }
    }
  }
  // Every contribution to entry e's sum is in.
  void fire(std::int32_t e) {
    if (ph_.parent[e] >= 0) {
      b_.send(ph_.parent[e], ph_.key[e], b_.sum(e), ph_.width[e], false);
      return;
    }
    const double* x = b_.settle(e);
    if (!ph_.solves[e]) return;  // a context supernode of an L phase: the partial sum stays
    ++solved_;
    const std::int32_t bcast = ph_.bcast[e];  // the broadcast of the same supernode
    if (bcast >= 0) {
      forward(bcast, x);
      use(bcast, x);
    }
  }
  void drain() {
    while (!stack_.empty()) {
      const std::int32_t e = stack_.back();
      stack_.pop_back();
      fire(e);
    }
  }
  // The message-driven work, then the synchronous part's next entries as long as each is
  // complete, until neither can move (one may complete the other's sums).
  void progress() {
    do {
      drain();
      advance();
    } while (!stack_.empty());
  }
  // A broadcast of the synchronous part rooted here is a context supernode's known solution
  // (U); one this rank solves went on with its reduction and is not in the order.
  void advance() {
    for (; next_ < ph_.order.size(); ++next_) {
      const std::int32_t e = ph_.order[next_];
      if (!ph_.is_broadcast(e)) {
        if (pending_[e] != 0) return;
        fire(e);
        continue;
      }
      const bool known = ph_.parent[e] < 0;
      auto it = held_.end();
      if (!known && (it = held_.find(e)) == held_.end()) return;  // its solution has not come yet
      const double* x = known ? b_.known(e) : it->second.empty() ? nullptr : it->second.data();
      forward(e, x);
      use(e, x);
      if (!known) held_.erase(it);
    }
  }

  const PhaseSchedule& ph_;
  const LocalLayout2D& layout_;
  Backend& b_;
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> stack_;
  std::int64_t solved_ = 0;
  std::size_t next_ = 0;                                        // the synchronous part's entry it is at
  std::unordered_map<std::int32_t, std::vector<double>> held_;  // its solutions that came early
};

}  // namespace commsolve
