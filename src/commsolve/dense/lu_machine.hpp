// The message-driven logic of 2.5D LU without pivoting on one rank (dense/dense_plan.hpp says
// what moves), written once over a backend: dense/dense_executor runs it on MPI with the
// numbers.
//
// Every layer holds a share of the trailing matrix; layer z eliminates the steps k with
// k mod c = z. Once a rank's share of block column k and block row k is final (every update
// of its layer's earlier steps has reached them) it sends it up the sums along z. On layer
// z_k the diagonal owner factors the summed diagonal block and broadcasts it, the panel's
// column and row solve for L(>k, k) and U(k, >k) and broadcast them, and every rank of the
// layer updates its trailing share in two parts: first the next c block rows and columns
// (which the next c steps' sums need: the "eager" part, one block row and column at a time,
// the next step's at once and the others as idle work), then the rest (the "bulk", as idle
// work in column pieces, between arrivals). So while one layer eliminates, the others finish
// their bulk updates: the flops of the trailing updates are shared by c layers.
//
// Contribution rule: for step m, this layer's last step j < m must have its eager update up to
// block m's column (for the share of block column m) or row (of block row m) done (m <= j + c),
// and every earlier step of this layer its bulk (rows and columns > j).
//
// A Backend provides (values may be null in a simulation; `s0` names a move by its first slot,
// `s` is one of its pieces, starting at `off` in it):
//   void send(int dest, std::int64_t id, const double* v, std::int64_t n, int role);  // id: the collective's
//   void hold(std::int64_t s0, std::int64_t off, const double* v, std::int64_t n, std::int64_t total);
//                                             // a piece arrived (of total values)
//   const double* held(std::int64_t s0);  void release(std::int64_t s0);
//   void reduce_add(std::int64_t s, const double* v, std::int64_t n);  // a child's piece of a share
//   const double* reduce_out(std::int64_t s0, std::int64_t s, int role, std::int64_t k, std::int64_t off,
//                            std::int64_t n);  // own share's piece + children's
//   void reduce_in(std::int64_t s, int role, std::int64_t k, std::int64_t off, std::int64_t n);
//                                             // the root: own share's piece += children's
//   void factor_diag(std::int64_t k);  const double* diag(std::int64_t k);  // at the diagonal owner
//   void trsm_l(std::int64_t k, const double* d);  const double* panel_l(std::int64_t k);  // L(>k, k) here
//   void trsm_u(std::int64_t k, const double* d);  const double* panel_u(std::int64_t k);  // U(k, >k) here
//   void store(int role, std::int64_t k, std::int64_t off, const double* v, std::int64_t n);
//                                             // layer 0: a piece of a factor block eliminated elsewhere
//   void update(std::int64_t k, std::int64_t lslot, std::int64_t uslot, std::int64_t r0, std::int64_t r1,
//               std::int64_t c0, std::int64_t c1);  // local rows [r0, r1) x columns [c0, c1) -= L U; slot -1: own
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "commsolve/dense/dense_trees.hpp"

namespace commsolve {

template <class Backend>
class LuMachine {
 public:
  // piece_cols: columns of one bulk update piece.
  LuMachine(const DensePlan& dp, const TreePlan& plan, std::int64_t n, std::int64_t nb, const Grid25D& g, int rank,
            Backend& be, std::int64_t piece_cols = 256)
      : R_{n, nb, g.pr}, C_{n, nb, g.pc}, K_(R_.nblocks()), trees_(dp, plan, K_), g_(g), x_(g.x_of(rank)),
        y_(g.y_of(rank)), z_(g.z_of(rank)), be_(be), piece_cols_(std::max<std::int64_t>(1, piece_cols)),
        steps_(static_cast<std::size_t>(K_)) {
    mine_ = K_ > z_ ? (K_ - z_ + g.c - 1) / g.c : 0;
  }

  std::int64_t expected() const { return trees_.expected(); }
  bool done() const { return next_[0] == K_ && next_[1] == K_ && eager_count_ == mine_ && bulk_count_ == mine_; }
  // Where the rank stands (for the message of a run that ended early).
  std::string state() const {
    const std::int64_t k = z_ + g_.c * eager_count_;
    std::string s = "shares sent for " + std::to_string(next_[0]) + " (columns) and " + std::to_string(next_[1]) +
                    " (rows) of " + std::to_string(K_) + " steps, " +
                    std::to_string(eager_count_) + " of this layer's " + std::to_string(mine_) +
                    " steps eliminated, " + std::to_string(bulk_count_) + " bulk updates done";
    if (k < K_) {
      const Step& st = steps_[static_cast<std::size_t>(k)];
      s += "; step " + std::to_string(k) + ": col_ready " + std::to_string(st.col_ready) + " row_ready " +
           std::to_string(st.row_ready) + " diag " + std::to_string(st.diag) + "/" + std::to_string(st.dslot) +
           " l " + std::to_string(st.l) + "/" + std::to_string(st.lslot) + " u " + std::to_string(st.u) + "/" +
           std::to_string(st.uslot);
    }
    return s;
  }

  void start() { progress(); }

  void arrive(std::int64_t c, const double* v, std::int64_t n) {
    const std::int64_t s = trees_.slot_of(c, n), s0 = trees_.first(s);
    const int role = trees_.role(s);
    const std::int64_t k = trees_.step(s);
    if (role == lu_reduce_col || role == lu_reduce_row) {
      sums_.arrive(s, v, n);
    } else {
      trees_.forward(be_, s, v);
      if (z_ != layer(k)) {  // layer 0 keeps a factor block eliminated on another layer
        be_.store(role, k, trees_.offset(s), v, n);
      } else {
        be_.hold(s0, trees_.offset(s), v, n, trees_.total(s0));
        if (trees_.piece_done(s)) {
          Step& st = steps_[static_cast<std::size_t>(k)];
          (role == lu_diag ? st.dslot : role == lu_panel_l ? st.lslot : st.uslot) = s0;
        }
      }
    }
    progress();
  }

  // One part of an eager update, or one piece of a bulk update: the bulk first where the next
  // share to send waits for it (an earlier step's), the eager parts otherwise; false when
  // there is nothing to do.
  bool idle() {
    const std::int64_t next = std::min(next_[0], next_[1]);
    const bool bulk_first = !bulk_.empty() && next < K_ && bulk_count_ + 1 < before(next);
    if (eager_.k >= 0 && !bulk_first) {
      eager_half();
      progress();
      return true;
    }
    if (bulk_.empty()) return false;
    Bulk& b = bulk_.front();
    const std::int64_t to = std::min(b.cend, b.cnext + piece_cols_);
    if (b.rend > b.r1 && to > b.cnext) be_.update(b.k, b.lslot, b.uslot, b.r1, b.rend, b.cnext, to);
    b.cnext = to;
    if (b.cnext >= b.cend) {
      for (std::int64_t s : {b.lslot, b.uslot})
        if (s >= 0) be_.release(s);
      bulk_.pop_front();
      ++bulk_count_;
      progress();
    }
    return true;
  }

 private:
  struct Step {
    bool col_ready = false, row_ready = false, diag = false, l = false, u = false;
    std::int64_t dslot = -1, lslot = -1, uslot = -1;  // broadcasts' data held here
  };
  struct Bulk {
    std::int64_t k, lslot, uslot, r1, rend, cnext, cend;
  };
  struct Eager {  // the step whose eager parts are under way (k = -1: none)
    std::int64_t k = -1, ls = -1, us = -1, halves = 0;
    bool update = false;
  };

  int layer(std::int64_t k) const { return static_cast<int>(k % g_.c); }
  std::int64_t rows_after(std::int64_t k) const { return R_.local_size(x_) - R_.local_start(x_, k + 1); }
  std::int64_t cols_after(std::int64_t k) const { return C_.local_size(y_) - C_.local_start(y_, k + 1); }

  void bcast_root(int role, std::int64_t k, const double* v) {  // every piece
    const std::int64_t s0 = trees_.slot(role, static_cast<std::int32_t>(k));
    if (s0 >= 0) trees_.bcast_all(be_, s0, v);
  }

  std::int64_t before(std::int64_t m) const { return m > z_ ? (m - z_ + g_.c - 1) / g_.c : 0; }  // this layer's steps < m
  // role: lu_reduce_col (the share of block column m) or lu_reduce_row (of block row m).
  bool can_contribute(std::int64_t m, int role) const {
    const std::int64_t n = before(m);
    if (n == 0) return true;
    if (bulk_count_ + 1 < n) return false;  // the bulk of all but the last of them
    if (eager_count_ >= n) return true;      // the last one's eager update, whole
    const std::int64_t last = z_ + g_.c * (n - 1);
    // or its halves up to block m's column (odd) or row (even)
    return eager_.k == last && eager_.halves >= 2 * (m - last) - (role == lu_reduce_col ? 1 : 0);
  }

  void progress() {
    for (bool more = true; more;) {
      more = false;
      for (int role : {lu_reduce_col, lu_reduce_row}) {
        std::int64_t& next = next_[role == lu_reduce_col ? 0 : 1];
        while (next < K_ && can_contribute(next, role)) {
          sums_.contribute(next++, role);
          more = true;
        }
      }
      const std::int64_t k = z_ + g_.c * eager_count_;  // this layer's next step to eliminate
      if (k < K_ && std::min(next_[0], next_[1]) > k) more |= advance(k);
    }
  }

  // Step k on its layer: what its data allows; true if anything was done.
  bool advance(std::int64_t k) {
    if (eager_.k == k) return false;  // its eager parts are under way (idle work)
    Step& st = steps_[static_cast<std::size_t>(k)];
    const bool in_col = y_ == C_.owner(k), in_row = x_ == R_.owner(k);
    const std::int64_t ra = rows_after(k), ca = cols_after(k);
    bool did = false;
    if (in_col && in_row && !st.diag && st.col_ready) {
      be_.factor_diag(k);
      st.diag = true;
      bcast_root(lu_diag, k, be_.diag(k));
      did = true;
    }
    const bool have_diag = (in_col && in_row) ? st.diag : st.dslot >= 0;
    const auto d = [&] { return (in_col && in_row) ? be_.diag(k) : be_.held(st.dslot); };  // only when used
    if (in_col && ra > 0 && !st.l && st.col_ready && have_diag) {
      be_.trsm_l(k, d());
      st.l = true;
      bcast_root(lu_panel_l, k, be_.panel_l(k));
      did = true;
    }
    if (in_row && ca > 0 && !st.u && st.row_ready && have_diag) {
      be_.trsm_u(k, d());
      st.u = true;
      bcast_root(lu_panel_u, k, be_.panel_u(k));
      did = true;
    }
    if (in_col && in_row && !st.diag) return did;  // the diagonal owner's own work comes first
    const bool update = ra > 0 && ca > 0;  // this rank has a trailing share to update
    const bool have_l = in_col ? (ra == 0 || st.l) : (!update || st.lslot >= 0);
    const bool have_u = in_row ? (ca == 0 || st.u) : (!update || st.uslot >= 0);
    if (!have_l || !have_u) return did;
    if (st.dslot >= 0) be_.release(st.dslot);
    eager_ = {k, in_col ? -1 : st.lslot, in_row ? -1 : st.uslot, 0, update};
    eager_half();  // the next step's block column at once (its row next, as idle work): the critical path
    return true;
  }

  // Local rows (columns) of block rows (columns) >= b.
  std::int64_t row_at(std::int64_t b) const { return R_.local_start(x_, b); }
  std::int64_t col_at(std::int64_t b) const { return C_.local_start(y_, b); }

  // Half h of step k's eager update, block b = k + (h + 1) / 2: odd h, block column b from block
  // row b down (after it, this layer's share of column b is final); even h, block row b right of
  // block column b (its share of row b). Halves 1..2c make the L-shape of the next c blocks;
  // after them, the rest is bulk.
  void eager_half() {
    Eager& e = eager_;
    const std::int64_t h = ++e.halves, k = e.k, b = k + (h + 1) / 2, rend = R_.local_size(x_),
                       cend = C_.local_size(y_);
    if (e.update) {
      if (h % 2 == 1 && rend > row_at(b) && col_at(b + 1) > col_at(b))
        be_.update(k, e.ls, e.us, row_at(b), rend, col_at(b), col_at(b + 1));
      if (h % 2 == 0 && row_at(b + 1) > row_at(b) && cend > col_at(b + 1))
        be_.update(k, e.ls, e.us, row_at(b), row_at(b + 1), col_at(b + 1), cend);
    }
    if (e.halves < 2 * g_.c && e.update && (h % 2 == 1 || b + 1 < K_)) return;
    const std::int64_t r1 = row_at(k + 1 + g_.c), c1 = col_at(k + 1 + g_.c);
    bulk_.push_back({k, e.ls, e.us, r1, e.update ? rend : r1, e.update ? c1 : cend, cend});
    ++eager_count_;
    e = Eager{};
  }

  const Cyclic1D R_, C_;
  const std::int64_t K_;
  DenseTrees trees_;
  const Grid25D g_;
  const int x_, y_, z_;
  Backend& be_;
  const std::int64_t piece_cols_;
  std::vector<Step> steps_;
  LuSums<Backend, Step> sums_{trees_, be_, steps_, g_, z_};
  std::deque<Bulk> bulk_;
  Eager eager_;
  std::int64_t mine_ = 0;          // steps this layer eliminates
  std::int64_t next_[2] = {0, 0};  // the next step this rank sends its share of a block column, of a block row to
  std::int64_t eager_count_ = 0, bulk_count_ = 0;  // this layer's steps with those parts done
};

}  // namespace commsolve
