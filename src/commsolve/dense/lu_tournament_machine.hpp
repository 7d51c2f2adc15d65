// The message-driven logic of 2.5D LU with tournament pivoting on one rank
// (dense/dense_plan.hpp says what moves), written over a backend as dense/lu_machine.hpp is:
// dense/dense_executor runs it on MPI with the numbers.
//
// As without pivoting, layer z eliminates the steps k with k mod c = z, every layer holds a
// share of the trailing matrix and block column k is summed along z before step k. Then the
// tournament picks step k's pivot rows over the panel's process column, the pivots go to
// every rank, and every layer swaps the rows of its share (the pivots are known only now, so
// block row k is summed after the swap, not ahead of it).
//
// Updates stay lazy: a step's trailing update is pending on its layer until applied, block
// column by block column (the next one at once: the next step's sum waits for it; the rest as
// idle work; at most one step's pending when a column share goes). A swap must not lose a
// pending update nor apply one twice: a row that leaves for another rank goes up to date
// first, one that arrives from another comes so and its rows of the pending steps' L are
// zeroed, one that moves within the rank takes its rows of L along; block row k is brought up
// to date when its rows are in (it is final then: the updates to come skip it). A rank swaps
// for step k once it knows the pivots, has swapped for k - 1 and holds L and U of every step
// of its layer before k.
//
// A Backend provides, besides dense/lu_machine.hpp's send, hold, held, release, reduce_add,
// reduce_out, reduce_in, trsm_l, trsm_u, panel_l, panel_u and store (`pend` is the machine's
// list of pending updates):
//   void tour_leaf(std::int64_t k, std::int64_t s);   // this rank's candidates for step k (s: the tournament's slot, or -1)
//   void tour_add(std::int64_t s, const double* v, std::int64_t n);  // a child's candidates
//   const double* tour_out(std::int64_t k, std::int64_t s);  // the winners of own and children's, to the parent
//   void tour_final(std::int64_t k, std::int64_t s);  // at the root: the pivots and the factored diagonal block
//   const double* pivots(std::int64_t k);  void set_pivots(std::int64_t k, const double* v);
//   const double* diag(std::int64_t k);
//   bool put_diag(std::int64_t k);  // the root, once swapped: the diagonal block into place, or the whole
//                                   // panel factored (true) where it was the tournament's only player
//   std::int64_t swap_plan(std::int64_t k);  // from the pivots: the messages this rank will receive for step k
//   void swap_send(std::int64_t k, std::vector<PendingUpdate>& pend);  // rows sent, moved here, L zeroed
//   void swap_arrive(std::int64_t k, int source, const double* v, std::int64_t n);
//   void swap_finish(std::int64_t k, const std::vector<PendingUpdate>& pend);  // rows in, block row k up to date
//   void keep_l(std::int64_t k, std::int64_t lslot);  void drop_l(std::int64_t k);  // a pending step's own copy of L
//   void update(const PendingUpdate& p, std::int64_t r0, std::int64_t c0, std::int64_t c1);
//                                             // local rows [r0, end) x columns [c0, c1) -= L U
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "commsolve/dense/dense_trees.hpp"

namespace commsolve {

struct PendingUpdate {  // a step of this layer whose trailing update is not all applied
  std::int64_t k, uslot;  // uslot -1: U(k, >k) is this rank's own, in place
  std::int64_t bnext;     // block columns < bnext are done
};

template <class Backend>
class TournamentLuMachine {
 public:
  TournamentLuMachine(const DensePlan& dp, const TreePlan& plan, std::int64_t n, std::int64_t nb, const Grid25D& g,
                      int rank, Backend& be, std::int64_t piece_cols = 256)
      : R_{n, nb, g.pr}, C_{n, nb, g.pc}, K_(R_.nblocks()), trees_(dp, plan, K_), nids_(dp.nids), g_(g),
        x_(g.x_of(rank)), y_(g.y_of(rank)), z_(g.z_of(rank)), be_(be),
        piece_cols_(std::max<std::int64_t>(1, piece_cols)), steps_(static_cast<std::size_t>(K_)) {
    mine_ = before(K_);
  }

  // The messages this rank receives: the plan's and, as the pivots come, the swaps'.
  std::int64_t expected() const { return trees_.expected() + swap_messages_; }
  // Every planned message in, every swap done and every update applied: the run may end (the
  // swaps' messages are known only once the pivots are, so the engine runs until this holds).
  bool done() const {
    return planned_got_ == trees_.expected() && swapped_ == K_ && next_col_ == K_ && reg_ == mine_ && pend_.empty();
  }
  std::string state() const {
    std::string s = "swaps done for " + std::to_string(swapped_) + " of " + std::to_string(K_) +
                    " steps, column shares sent for " + std::to_string(next_col_) + ", " + std::to_string(reg_) +
                    " of this layer's " + std::to_string(mine_) + " steps eliminated, " +
                    std::to_string(pend_.size()) + " updates pending";
    if (swapped_ < K_) {
      const Step& st = steps_[static_cast<std::size_t>(swapped_)];
      s += "; step " + std::to_string(swapped_) + ": pivots " + std::to_string(st.piv) + ", swap messages " +
           std::to_string(st.got) + " of " + std::to_string(st.incoming) + (st.sent ? " (sent)" : "");
    }
    return s;
  }

  void start() { progress(); }

  void arrive(int source, std::int64_t c, const double* v, std::int64_t n) {
    if (c >= nids_) {  // a swap's rows
      const std::int64_t k = c - nids_;
      if (k >= K_) throw std::logic_error("LU: a message for swap " + std::to_string(k) + " of " + std::to_string(K_));
      be_.swap_arrive(k, source, v, n);
      ++steps_[static_cast<std::size_t>(k)].got;
      progress();
      return;
    }
    ++planned_got_;
    const std::int64_t s = trees_.slot_of(c, n), s0 = trees_.first(s);
    const int role = trees_.role(s);
    const std::int64_t k = trees_.step(s);
    Step& st = steps_[static_cast<std::size_t>(k)];
    if (role == lu_reduce_col || role == lu_reduce_row) {
      sums_.arrive(s, v, n);
    } else if (role == lu_tournament) {
      be_.tour_add(s, v, n);
      if (trees_.contribute(s)) tour_up(k, s);
    } else if (role == lu_pivots) {
      trees_.forward(be_, s, v);
      be_.set_pivots(k, v);
      pivots_known(k);
    } else {
      trees_.forward(be_, s, v);
      if (z_ != layer(k)) {  // layer 0 keeps a factor block eliminated on another layer
        be_.store(role, k, trees_.offset(s), v, n);
      } else {
        be_.hold(s0, trees_.offset(s), v, n, trees_.total(s0));
        if (trees_.piece_done(s)) (role == lu_diag ? st.dslot : role == lu_panel_l ? st.lslot : st.uslot) = s0;
      }
    }
    progress();
  }

  // One piece of the oldest pending update (up to the next column share at once if that is
  // what it waits for); false when there is nothing to do.
  bool idle() {
    if (pend_.empty()) return false;
    const PendingUpdate& p = pend_[0];
    std::int64_t to = p.bnext;
    if (pend_.size() == 1 && next_col_ < K_ && p.bnext <= next_col_) {
      to = next_col_ + 1;
    } else {  // at least piece_cols local columns, whole blocks
      while (to < K_ && col_at(to) - col_at(p.bnext) < piece_cols_) ++to;
      to = std::max(to, p.bnext + 1);
    }
    apply(0, to);
    progress();
    return true;
  }

 private:
  struct Step {
    bool col_ready = false, row_ready = false, cand = false, piv = false, diag = false, diag_put = false, l = false,
         u = false, sent = false;
    std::int64_t dslot = -1, lslot = -1, uslot = -1;  // broadcasts' data held here
    std::int64_t incoming = 0, got = 0;  // swap messages due and arrived
  };

  int layer(std::int64_t k) const { return static_cast<int>(k % g_.c); }
  std::int64_t row_at(std::int64_t b) const { return R_.local_start(x_, b); }
  std::int64_t col_at(std::int64_t b) const { return C_.local_start(y_, b); }
  std::int64_t rows_after(std::int64_t k) const { return R_.local_size(x_) - row_at(k + 1); }
  std::int64_t cols_after(std::int64_t k) const { return C_.local_size(y_) - col_at(k + 1); }
  std::int64_t before(std::int64_t m) const { return m > z_ ? (m - z_ + g_.c - 1) / g_.c : 0; }

  void bcast_root(int role, std::int64_t k, const double* v) {
    const std::int64_t s0 = trees_.slot(role, static_cast<std::int32_t>(k));
    if (s0 >= 0) trees_.bcast_all(be_, s0, v);
  }

  void pivots_known(std::int64_t k) {
    Step& st = steps_[static_cast<std::size_t>(k)];
    st.piv = true;
    st.incoming = be_.swap_plan(k);
    swap_messages_ += st.incoming;
  }

  // Block columns [p.bnext, to) of pending update i, on the rows not final yet (block rows >= swapped_).
  void apply(std::size_t i, std::int64_t to) {
    PendingUpdate& p = pend_[i];
    to = std::min(to, K_);
    if (col_at(to) > col_at(p.bnext))
      be_.update(p, row_at(std::max(p.k + 1, swapped_)), col_at(p.bnext), col_at(to));
    p.bnext = to;
    if (p.bnext >= K_) {
      be_.drop_l(p.k);
      if (p.uslot >= 0) be_.release(p.uslot);
      pend_.erase(pend_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  void tour_up(std::int64_t k, std::int64_t s) {  // s < 0: the root is the tournament's only player
    if (s >= 0 && !trees_.is_root(s)) {
      be_.send(trees_.parent(s), trees_.id(s), be_.tour_out(k, s), trees_.count(s), lu_tournament);
      return;
    }
    be_.tour_final(k, s);
    pivots_known(k);
    steps_[static_cast<std::size_t>(k)].diag = true;
    bcast_root(lu_pivots, k, be_.pivots(k));
    bcast_root(lu_diag, k, be_.diag(k));
  }

  // Column share m: every swap before m done, and every update of this layer's steps before m
  // applied (the last one's up to block column m): at most one update pending, so that a
  // swap's catching up stays one step's work.
  bool can_contribute_col(std::int64_t m) const {
    if (swapped_ < m || reg_ < before(m) || pend_.size() > 1) return false;
    return pend_.empty() || pend_[0].bnext > m;
  }

  // Swap k here: started once allowed, finished once its rows are in.
  bool swap() {
    if (swapped_ >= K_) return false;
    const std::int64_t k = swapped_;
    Step& st = steps_[static_cast<std::size_t>(k)];
    bool did = false;
    if (!st.sent && st.piv && reg_ >= before(k)) {
      be_.swap_send(k, pend_);
      st.sent = did = true;
    }
    if (st.sent && st.got == st.incoming) {
      be_.swap_finish(k, pend_);
      ++swapped_;  // block row k is up to date: no pending update may touch it again
      if (x_ == R_.owner(k)) sums_.contribute(k, lu_reduce_row);
      did = true;
    }
    return did;
  }

  void progress() {
    for (bool more = true; more;) {
      more = swap();
      while (next_col_ < K_ && can_contribute_col(next_col_)) {
        sums_.contribute(next_col_++, lu_reduce_col);
        more = true;
      }
      const std::int64_t k = z_ + g_.c * reg_;  // this layer's next step
      if (k < K_) more |= advance(k);
    }
  }

  // Step k on its layer: what its data allows; true if anything was done.
  bool advance(std::int64_t k) {
    Step& st = steps_[static_cast<std::size_t>(k)];
    const bool in_col = y_ == C_.owner(k), in_row = x_ == R_.owner(k), root = in_col && in_row;
    const std::int64_t ra = rows_after(k), ca = cols_after(k);
    bool did = false;
    if (in_col && !st.cand && st.col_ready && (root || R_.local_size(x_) > row_at(k))) {
      st.cand = did = true;
      const std::int64_t s = trees_.slot(lu_tournament, static_cast<std::int32_t>(k));
      be_.tour_leaf(k, s);
      if (s < 0 || trees_.contribute(s)) tour_up(k, s);
    }
    const bool swapped = swapped_ > k;
    if (root && swapped && !st.diag_put) {
      st.diag_put = did = true;
      if (be_.put_diag(k) && ra > 0) {  // its partial pivoting factored the whole panel: L is there
        st.l = true;
        bcast_root(lu_panel_l, k, be_.panel_l(k));
      }
    }
    const bool have_diag = root ? st.diag : st.dslot >= 0;
    const auto d = [&] { return root ? be_.diag(k) : be_.held(st.dslot); };
    if (in_col && ra > 0 && !st.l && swapped && have_diag) {
      be_.trsm_l(k, d());
      st.l = did = true;
      bcast_root(lu_panel_l, k, be_.panel_l(k));
    }
    if (in_row && ca > 0 && !st.u && st.row_ready && have_diag) {
      be_.trsm_u(k, d());
      st.u = did = true;
      bcast_root(lu_panel_u, k, be_.panel_u(k));
    }
    if (!swapped || (root && !st.diag_put)) return did;
    const bool update = ra > 0 && ca > 0;
    const bool have_l = in_col ? (ra == 0 || st.l) : (!update || st.lslot >= 0);
    const bool have_u = in_row ? (ca == 0 || st.u) : (!update || st.uslot >= 0);
    if (!have_l || !have_u) return did;
    if (st.dslot >= 0) be_.release(st.dslot);
    ++reg_;
    if (update) {
      be_.keep_l(k, in_col ? -1 : st.lslot);
      pend_.push_back({k, in_row ? -1 : st.uslot, k + 1});
      apply(pend_.size() - 1, k + 2);  // the next step's block column at once: its sum waits for it
    } else {
      for (std::int64_t s : {st.lslot, st.uslot})
        if (s >= 0) be_.release(s);
    }
    return true;
  }

  const Cyclic1D R_, C_;
  const std::int64_t K_;
  DenseTrees trees_;
  const std::int64_t nids_;
  const Grid25D g_;
  const int x_, y_, z_;
  Backend& be_;
  const std::int64_t piece_cols_;
  std::vector<Step> steps_;
  LuSums<Backend, Step> sums_{trees_, be_, steps_, g_, z_};
  std::vector<PendingUpdate> pend_;
  std::int64_t mine_ = 0, planned_got_ = 0, swap_messages_ = 0;
  std::int64_t swapped_ = 0;     // swaps done here (steps 0 .. swapped_ - 1): block rows before are final
  std::int64_t next_col_ = 0;    // the next step this rank sends its share of a block column to
  std::int64_t reg_ = 0;         // this layer's steps whose update is pending or applied
};

}  // namespace commsolve
