// The message-driven logic of the 2.5D multiply on one rank (dense/dense_plan.hpp says what
// moves), written once over a backend: dense/dense_executor runs it on MPI with the numbers.
//
// Layer 0 starts the broadcasts of its A and B blocks along z. Once a rank has its A and B it
// roots the broadcasts of the SUMMA panels it owns, at most `lookahead` panels ahead of its own
// products (bounding the panels in flight); broadcasts are forwarded as they arrive. Its
// products run in panel order as idle work (one GEMM per call, arrivals handled between), and
// after the last one its C goes up the reduction along z.
//
// A Backend provides (values may be null in a simulation):
//   void send(int dest, std::int64_t c, const double* v, std::int64_t n, int role);
//   const double* replicate_data(int role);   // layer 0: its blocks of A (mm_replicate_a) or B
//   void replicated(int role, const double* v);  // another layer: they arrived
//   const double* own_panel(int role, std::int64_t q);  // panel q's block columns of A / rows of B here
//   void hold(std::int64_t slot, const double* v, std::int64_t n);   // a panel arrived
//   void release(std::int64_t slot);
//   void gemm(std::int64_t q, std::int64_t aslot, std::int64_t bslot);  // C += panel q's; slot -1: own
//   void reduce_add(std::int64_t slot, const double* v, std::int64_t n);  // a child's partial C
//   const double* reduce_out(std::int64_t slot);   // C plus the children's, to the parent
//   void reduce_in(std::int64_t slot);             // the root: C += the children's
#pragma once

#include <cstdint>
#include <vector>

#include "dense/dense_trees.hpp"

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
      if (s >= 0 && trees_.is_root(s)) bcast(s, be_.replicate_data(role));
    }
    start_roots();
    if (panels_ == 0) finish_c();
  }

  void arrive(std::int64_t c, const double* v, std::int64_t n) {
    const std::int64_t s = trees_.slot_of(c, n);
    switch (trees_.role(s)) {
      case mm_replicate_a:
      case mm_replicate_b:
        bcast(s, v);
        be_.replicated(trees_.role(s), v);
        (trees_.role(s) == mm_replicate_a ? a_ready_ : b_ready_) = true;
        start_roots();
        return;
      case mm_panel_a:
      case mm_panel_b:
        bcast(s, v);
        be_.hold(s, v, n);
        have_[static_cast<std::size_t>(s)] = 1;
        return;
      default:
        be_.reduce_add(s, v, n);
        if (trees_.contribute(s)) reduce_up(s);
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
  void bcast(std::int64_t s, const double* v) {
    const std::int64_t c = trees_.collective(s);
    for (int ch : trees_.children(s)) be_.send(ch, c, v, trees_.count(s), trees_.role(s));
  }
  // The slot holding a panel's data: -1 this rank's own (or none is needed), -2 not here yet.
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
        if (s >= 0 && trees_.is_root(s)) bcast(s, be_.own_panel(role, q));
      }
      ++started_;
    }
  }
  void finish_c() {
    const std::int64_t s = trees_.slot(mm_reduce_c, -1);
    if (s < 0) {
      c_done_ = true;
    } else if (trees_.contribute(s)) {
      reduce_up(s);
    }
  }
  void reduce_up(std::int64_t s) {
    if (trees_.is_root(s))
      be_.reduce_in(s);
    else
      be_.send(trees_.parent(s), trees_.collective(s), be_.reduce_out(s), trees_.count(s), mm_reduce_c);
    c_done_ = true;
  }

  DenseTrees trees_;
  Backend& be_;
  std::vector<char> have_;
  std::vector<std::int32_t> mine_;  // this layer's panels, in order
  std::int64_t panels_ = 0, started_ = 0, done_ = 0;  // this layer's panels; roots started; products done
  bool a_ready_ = false, b_ready_ = false, c_done_ = false;
};

}  // namespace commsolve
