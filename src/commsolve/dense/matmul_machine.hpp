// The message-driven logic of the 2.5D multiply on one rank (dense/dense_plan.hpp says what
// moves), written once over a backend: dense/dense_executor runs it on MPI with the numbers,
// sim/dense_sim prices it.
//
// Layer 0 starts the broadcasts of its A and B blocks along z. Once a rank has its A and B it
// roots the broadcasts of the SUMMA panels it owns, at most `lookahead` panels ahead of its own
// products (bounding the panels in flight); broadcasts are forwarded piece by piece as they
// arrive. Its products run in panel order as idle work (one GEMM per call, arrivals handled
// between), and after the last one its C goes up the reduction along z, piece by piece.
//
// A Backend provides (values may be null in a simulation; `s0` names a move by its first slot,
// `off` is where a piece starts in it):
//   void send(int dest, std::int64_t id, const double* v, std::int64_t n, int role);  // id: the collective's
//   const double* replicate_data(int role);   // layer 0: its blocks of A (mm_replicate_a) or B
//   const double* own_panel(int role, std::int64_t q);  // panel q's block columns of A / rows of B here
//   void hold(int role, std::int64_t s0, std::int64_t off, const double* v, std::int64_t n, std::int64_t total);
//                                  // a piece arrived: of A or B (replicate) or of a panel (total values)
//   void release(std::int64_t s0);
//   void gemm(std::int64_t q, std::int64_t aslot, std::int64_t bslot);  // C += panel q's; slot -1: own
//   void reduce_add(std::int64_t s, const double* v, std::int64_t n);   // a child's piece of C
//   const double* reduce_out(std::int64_t s, std::int64_t off, std::int64_t n);  // C's piece + children's
//   void reduce_in(std::int64_t s, std::int64_t off, std::int64_t n);            // the root: C's piece += theirs
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/dense/dense_trees.hpp"

namespace commsolve {

template <class Backend>
class MatmulMachine {
 public:
  static constexpr std::int64_t lookahead = 4;

  MatmulMachine(const DensePlan& dp, const TreePlan& plan, const SummaPanels& panels, const Grid25D& g, int rank,
                Backend& be)
      : trees_(dp, plan, panels.size()), be_(be), have_(plan.index.size(), 0) {
    const int z = g.z_of(rank);
    for (std::int64_t q = 0; q < panels.size(); ++q)
      if (panels.layer[static_cast<std::size_t>(q)] == z) mine_.push_back(static_cast<std::int32_t>(q));
    panels_ = static_cast<std::int64_t>(mine_.size());
  }

  std::int64_t expected() const { return trees_.expected(); }
  bool done() const { return done_ == panels_ && c_done_; }

  void start() {
    for (int role : {mm_replicate_a, mm_replicate_b}) {
      const std::int64_t s = trees_.slot(role, -1);
      bool& ready = role == mm_replicate_a ? a_ready_ : b_ready_;
      ready = s < 0 || trees_.is_root(s);
      if (s >= 0 && trees_.is_root(s)) trees_.bcast_all(be_, s, be_.replicate_data(role));
    }
    start_roots();
    if (panels_ == 0) finish_c();
  }

  void arrive(std::int64_t c, const double* v, std::int64_t n) {
    const std::int64_t s = trees_.slot_of(c, n), s0 = trees_.first(s);
    const int role = trees_.role(s);
    if (role == mm_reduce_c) {
      be_.reduce_add(s, v, n);
      if (trees_.contribute(s)) reduce_up(s);
      return;
    }
    trees_.forward(be_, s, v);
    be_.hold(role, s0, trees_.offset(s), v, n, trees_.total(s0));
    if (!trees_.piece_done(s)) return;
    if (role == mm_replicate_a || role == mm_replicate_b) {
      (role == mm_replicate_a ? a_ready_ : b_ready_) = true;
      start_roots();
    } else {
      have_[static_cast<std::size_t>(s0)] = 1;
    }
  }

  // One panel's product if its data is here; false when there is nothing to do now.
  bool idle() {
    if (done_ == panels_ || started_ <= done_) return false;
    const std::int32_t q = mine_[static_cast<std::size_t>(done_)];
    const std::int64_t sa = source(mm_panel_a, q), sb = source(mm_panel_b, q);
    if (sa == -2 || sb == -2) return false;
    be_.gemm(q, sa, sb);
    for (std::int64_t s : {sa, sb})
      if (s >= 0) be_.release(s);
    ++done_;
    start_roots();
    if (done_ == panels_) finish_c();
    return true;
  }

 private:
  // The move holding a panel's data: -1 this rank's own (or none is needed), -2 not here yet.
  std::int64_t source(int role, std::int32_t q) const {
    const std::int64_t s = trees_.slot(role, q);
    if (s < 0 || trees_.is_root(s)) return -1;
    return have_[static_cast<std::size_t>(s)] ? s : -2;
  }
  void start_roots() {
    while (a_ready_ && b_ready_ && started_ < panels_ && started_ < done_ + lookahead) {
      const std::int32_t q = mine_[static_cast<std::size_t>(started_)];
      for (int role : {mm_panel_a, mm_panel_b}) {
        const std::int64_t s = trees_.slot(role, q);
        if (s >= 0 && trees_.is_root(s)) trees_.bcast_all(be_, s, be_.own_panel(role, q));
      }
      ++started_;
    }
  }
  void finish_c() {
    const std::int64_t s0 = trees_.slot(mm_reduce_c, -1);
    if (s0 < 0) {
      c_done_ = true;
      return;
    }
    for (std::int64_t s = s0; s < s0 + trees_.pieces(s0); ++s)
      if (trees_.contribute(s)) reduce_up(s);
  }
  void reduce_up(std::int64_t s) {  // a piece of C summed here: on to the parent, or kept (root)
    const std::int64_t off = trees_.offset(s), n = trees_.count(s);
    if (trees_.is_root(s))
      be_.reduce_in(s, off, n);
    else
      be_.send(trees_.parent(s), trees_.id(s), be_.reduce_out(s, off, n), n, mm_reduce_c);
    if (trees_.piece_done(s)) c_done_ = true;
  }

  DenseTrees trees_;
  Backend& be_;
  std::vector<char> have_;          // per move (first slot): a panel's pieces all arrived
  std::vector<std::int32_t> mine_;  // this layer's panels, in order
  std::int64_t panels_ = 0, started_ = 0, done_ = 0;  // this layer's panels; roots started; products done
  bool a_ready_ = false, b_ready_ = false, c_done_ = false;
};

}  // namespace commsolve
