// The message-driven logic of parallel selected inversion on one rank (direct/selinv_plan.hpp
// says what moves), written once for every backend: on MPI with the numbers
// (direct/selinv_executor), and in the simulator with their costs only (sim/selinv_sim).
//
// prepare: the diagonal owners start their inverse triangles' broadcasts; an L (U) owner
// forms its L^ (U^) blocks when L_KK^-1 (U_KK^-1) comes and, in the unsymmetric form, sends
// each group across the diagonal at once.
// invert: the rank enters its supernodes in descending order (a topological order of the
// elimination tree from its root), at most `lookahead` of them at once (256: in the
// simulator, 32 made the 46 x 46 schedule of elasticity3d:30 1.9x as long, 256 as short as no
// limit); entering K starts the broadcasts it roots (their data is known since prepare). An entered K is worked as soon as
// K's broadcasts have reached the rank and the blocks of Z it holds for the supernodes of K's
// structure are final (the blocks its products read are among them), in any order: subtrees
// that do not wait for each other proceed at once. Its products go to K's reductions; they
// run in pieces (product_pieces), one per call of step(), so that the engine handles the
// messages that arrive meanwhile between them. Broadcasts are forwarded as they arrive; a
// reduction goes up its tree once its last contribution is in; its root finishes the block
// of Z (a block of K's column also gives its share of Z(K, K), and in the symmetric form its
// transpose).
//
// A Backend provides (values may be null in a simulation):
//   void send(int dest, std::int64_t c, const double* v, std::int64_t n, int role);
//   const double* diag_inverse(std::int64_t k, bool upper);       // at K's diagonal owner
//   void lhat(std::int64_t k, const double* inv_l);               // L^ of K's panel here
//   void uhat(std::int64_t k, const double* inv_u);               // U^ of K's row here
//   const double* pack(SelinvRole r, std::int64_t k, int x, int y, std::int64_t n);  // a group's blocks
//   void place(SelinvRole r, std::int64_t k, int x, int y, const double* v);      // at its destination
//   const double* bcast_data(SelinvRole r, std::int64_t k);      // a broadcast this rank roots
//   void hold(std::int64_t slot, const double* v, std::int64_t n); // a broadcast's data arrived
//   const double* held(std::int64_t slot);
//   std::int64_t pieces(std::int64_t k);                         // K's products in pieces (product_pieces)
//   void products(std::int64_t k, const double* lt, const double* ut, std::int64_t piece);
//                                                                // Z(R_x, C_y) times them, one piece
//   const double* row_part(); const double* col_part();          // the products' results, all pieces done
//   void add(std::int64_t slot, std::int64_t n, const double* v); // into a reduction's sum (v null: nothing)
//   const double* sum(std::int64_t slot);
//   void release(std::int64_t slot);                             // a sum or held data no longer needed
//   const double* finish_row(std::int64_t k, const double* sum); // Z(R_x, K); returns the share of Z(K, K)
//   void finish_col(std::int64_t k, const double* sum);          // Z(K, C_y)
//   void finish_diag(std::int64_t k, const double* sum);         // Z(K, K)
//   void done_with(std::int64_t k);                              // K's step is over
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/selinv_plan.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

template <class Backend>
class SelinvMachine {
 public:
  static constexpr std::size_t lookahead = 256;  // supernodes entered and not yet worked, at most

  SelinvMachine(const SelinvPlan& plan, const SupernodeBlocks& blocks, const ProcessGrid2D& grid, int rank,
                const TreePlan& prep, const TreePlan& inv, Backend& backend)
      : plan_(plan), blocks_(blocks), grid_(grid), rank_(rank), x_((rank - grid.base) / grid.py),
        y_((rank - grid.base) % grid.py), prep_(prep), inv_(inv), pa_(plan_arrivals(prep, plan.prepare.set)),
        ia_(plan_arrivals(inv, plan.invert.set)), ns_(static_cast<std::int64_t>(blocks.col_ptr.size()) - 1),
        be_(backend) {}

  std::int64_t prepare_expected() const { return pa_.expected; }
  std::int64_t invert_expected() const { return ia_.expected; }

  // ---- prepare ---------------------------------------------------------------------------
  void prepare_start() {
    const SelinvPhase& pp = plan_.prepare;
    for (std::size_t s = 0; s < prep_.index.size(); ++s) {
      const std::int64_t c = prep_.index[s];
      if (pp.set.root[c] != rank_ || (pp.role[c] != selinv_inv_l && pp.role[c] != selinv_inv_u)) continue;
      prepare_arrive(c, be_.diag_inverse(pp.sn[c], pp.role[c] == selinv_inv_u), pp.set.count[c]);
    }
  }
  void prepare_arrive(std::int64_t c, const double* v, std::int64_t n) {
    const SelinvPhase& pp = plan_.prepare;
    const std::int64_t s = slot_of(pa_, pp, c, n);
    forward(prep_, pp, s, v, n);
    const std::int64_t k = pp.sn[c];
    switch (pp.role[c]) {
      case selinv_inv_l:
      case selinv_inv_u: {
        const bool upper = pp.role[c] == selinv_inv_u;
        upper ? be_.uhat(k, v) : be_.lhat(k, v);
        if (plan_.symmetric) return;
        const SelinvRole cross = upper ? selinv_cross_u : selinv_cross_l;
        for (std::int64_t g = pp.sn_ptr[k]; g < pp.sn_ptr[k + 1]; ++g)  // its groups, across the diagonal
          if (pp.role[g] == cross && pp.set.root[g] == rank_)
            prepare_arrive(g, be_.pack(cross, k, pp.gx[g], pp.gy[g], pp.set.count[g]), pp.set.count[g]);
        return;
      }
      case selinv_cross_l:
      case selinv_cross_u:
        if (destination(pp, c)) be_.place(static_cast<SelinvRole>(pp.role[c]), k, pp.gx[c], pp.gy[c], v);
        return;
      default: throw std::logic_error("selected inversion: a role outside prepare");
    }
  }

  // ---- invert ----------------------------------------------------------------------------
  void invert_start() {
    const SelinvPhase& ip = plan_.invert;
    const std::size_t nslots = inv_.index.size();
    have_.assign(nslots, 0);
    waiting_.assign(nslots, 0);
    remaining_.assign(static_cast<std::size_t>(ns_), 0);
    steps_.clear();
    for (std::size_t s = 0; s < nslots; ++s) {
      const std::int64_t c = inv_.index[s];
      const std::int32_t k = ip.sn[c];
      if (steps_.empty() || steps_.back() != k) steps_.push_back(k);
      if (is_reduce(ip, c)) waiting_[s] = ia_.waiting[s] + 1;  // its children and this rank
      if ((is_reduce(ip, c) && ip.set.root[c] == rank_) || (ip.role[c] == selinv_transpose && destination(ip, c)))
        ++remaining_[k];
    }
    std::reverse(steps_.begin(), steps_.end());
    active_.clear();
    entered_ = worked_ = 0;
    current_ = -1;
    split_ = 0;
  }
  void invert_arrive(std::int64_t c, const double* v, std::int64_t n) {
    const SelinvPhase& ip = plan_.invert;
    const std::int64_t s = slot_of(ia_, ip, c, n);
    if (is_reduce(ip, c)) {
      contribute(s, v);
      return;
    }
    forward(inv_, ip, s, v, n);
    if (ip.role[c] == selinv_transpose) {
      if (!destination(ip, c)) return;
      be_.place(selinv_transpose, ip.sn[c], ip.gx[c], ip.gy[c], v);
      final_event(ip.sn[c]);
      return;
    }
    if (ip.set.root[c] != rank_) be_.hold(s, v, n);
    have_[s] = 1;
  }
  // One piece of work: the next piece of the products under way; or, after entering
  // supernodes while the lookahead allows, the start of an entered supernode that is ready
  // (the highest). True when it did something.
  bool step() {
    if (current_ >= 0) {
      next_piece();
      return true;
    }
    for (; entered_ < steps_.size() && active_.size() < lookahead; ++entered_) {
      enter(steps_[entered_]);
      active_.push_back(steps_[entered_]);
    }
    for (std::size_t i = 0; i < active_.size(); ++i) {
      const std::int64_t k = active_[i];
      if (!ready(k)) continue;
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
      start(k);
      return true;
    }
    return false;
  }
  bool finished() const {
    return worked_ == steps_.size() && current_ < 0 && std::all_of(remaining_.begin(), remaining_.end(), [](std::int32_t r) { return r == 0; });
  }
  std::size_t steps_done() const { return worked_; }
  std::int64_t split_supernodes() const { return split_; }  // whose products here ran in several pieces
  std::size_t steps() const { return steps_.size(); }

 private:
  static bool is_reduce(const SelinvPhase& ph, std::int64_t c) {
    return ph.set.kind[c] == static_cast<std::int8_t>(CollectiveKind::reduce);
  }
  std::int64_t slot_of(const PlanArrivals& a, const SelinvPhase& ph, std::int64_t c, std::int64_t n) const {
    const std::int64_t s = c >= 0 && c < static_cast<std::int64_t>(ph.set.size()) ? a.slot_of[c] : -1;
    if (s < 0 || n != ph.set.count[c])
      throw std::logic_error("selected inversion: unexpected message (collective " + std::to_string(c) + ")");
    return s;
  }
  // A point-to-point collective's destination is its last participant (its root when alone).
  bool destination(const SelinvPhase& ph, std::int64_t c) const {
    return ph.set.part[ph.set.part_ptr[c + 1] - 1] == rank_;
  }
  void forward(const TreePlan& tp, const SelinvPhase& ph, std::int64_t s, const double* v, std::int64_t n) {
    const std::int64_t c = tp.index[s];
    for (int child : tp.links[s].children) be_.send(child, c, v, n, ph.role[c]);
  }
  std::int64_t find(std::int64_t k, SelinvRole role, int x, int y) const {
    const SelinvPhase& ip = plan_.invert;
    for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c)
      if (ip.role[c] == role && (x < 0 || ip.gx[c] == x) && (y < 0 || ip.gy[c] == y)) return c;
    return -1;
  }
  std::int64_t slot(std::int64_t c) const { return c < 0 ? -1 : ia_.slot_of[c]; }
  // The broadcasts this rank roots for K: their data has been here since prepare.
  void enter(std::int64_t k) {
    const SelinvPhase& ip = plan_.invert;
    for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
      const std::int64_t s = ia_.slot_of[c];
      if (s < 0 || ip.set.root[c] != rank_ || (ip.role[c] != selinv_col_bcast && ip.role[c] != selinv_row_bcast))
        continue;
      forward(inv_, ip, s, be_.bcast_data(static_cast<SelinvRole>(ip.role[c]), k), ip.set.count[c]);
      have_[s] = 1;
    }
  }
  bool ready(std::int64_t k) const {
    for (std::int64_t b = blocks_.col_ptr[k]; b < blocks_.col_ptr[k + 1]; ++b)
      if (remaining_[blocks_.sn[b]] != 0) return false;  // a block of Z(C, C) here is not final yet
    const SelinvPhase& ip = plan_.invert;
    for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
      const std::int64_t s = ia_.slot_of[c];
      if (s >= 0 && (ip.role[c] == selinv_col_bcast || ip.role[c] == selinv_row_bcast) && !have_[s]) return false;
    }
    return true;
  }
  const double* bcast(std::int64_t c, std::int64_t k) {
    if (c < 0) return nullptr;
    return plan_.invert.set.root[c] == rank_ ? be_.bcast_data(static_cast<SelinvRole>(plan_.invert.role[c]), k)
                                              : be_.held(slot(c));
  }
  // K is ready: its products here in pieces (step() goes on with them), or, where this rank
  // has none, its zero shares at once.
  void start(std::int64_t k) {
    const std::int64_t cb = find(k, selinv_col_bcast, -1, y_), rb = find(k, selinv_row_bcast, x_, -1);
    const bool product = cb >= 0 && slot(cb) >= 0 && has_rows(k) && (plan_.symmetric || slot(rb) >= 0);
    if (!product) return finish(k, false);
    current_ = k;
    pieces_ = be_.pieces(k);
    piece_ = 0;
    if (pieces_ > 1) ++split_;
    lt_ = bcast(cb, k);  // the data stays where it is until K is finished
    ut_ = plan_.symmetric ? nullptr : bcast(rb, k);
    next_piece();
  }
  void next_piece() {
    const std::int64_t k = current_;
    be_.products(k, lt_, ut_, piece_++);
    if (piece_ < pieces_) return;
    current_ = -1;
    finish(k, true);
  }
  // This rank's products for K to K's reductions; a zero share to a reduction it only roots.
  void finish(std::int64_t k, bool product) {
    ++worked_;
    const std::int64_t rr = slot(find(k, selinv_row_reduce, x_, -1)), cr = slot(find(k, selinv_col_reduce, -1, y_));
    const std::int64_t dr = slot(find(k, selinv_diag_reduce, -1, -1));
    if (product) {
      if (!plan_.symmetric) contribute(cr, be_.col_part());  // before the Row-Reduce may finish here
      contribute(rr, be_.row_part());
    } else {
      if (rr >= 0) contribute(rr, nullptr);
      if (cr >= 0) contribute(cr, nullptr);
    }
    if (dr >= 0 && !has_rows(k)) contribute(dr, nullptr);  // the diagonal owner with no rows of K's column
    const SelinvPhase& ip = plan_.invert;
    for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
      const std::int64_t s = ia_.slot_of[c];
      if (s >= 0 && !is_reduce(ip, c) && ip.role[c] != selinv_transpose && ip.set.root[c] != rank_) be_.release(s);
    }
    be_.done_with(k);
  }
  // This rank's process row holds rows of K's column: it is in the Row-Reduce of (K, x).
  bool has_rows(std::int64_t k) const { return find(k, selinv_row_reduce, x_, -1) >= 0; }
  void contribute(std::int64_t s, const double* v) {
    const std::int64_t c = inv_.index[s], n = plan_.invert.set.count[c];
    be_.add(s, n, v);
    if (--waiting_[s] > 0) return;
    const int parent = inv_.links[s].parent;
    if (parent >= 0) be_.send(parent, c, be_.sum(s), n, plan_.invert.role[c]);
    else finalize(c, be_.sum(s));
    be_.release(s);
  }
  void finalize(std::int64_t c, const double* sum) {
    const SelinvPhase& ip = plan_.invert;
    const std::int64_t k = ip.sn[c];
    switch (ip.role[c]) {
      case selinv_row_reduce: {
        const double* share = be_.finish_row(k, sum);
        if (plan_.symmetric)  // Z(K, J) = Z(J, K)^T to where U(K, J) lies
          for (std::int64_t t = ip.sn_ptr[k]; t < ip.sn_ptr[k + 1]; ++t)
            if (ip.role[t] == selinv_transpose && ip.set.root[t] == rank_)
              invert_arrive(t, be_.pack(selinv_transpose, k, ip.gx[t], ip.gy[t], ip.set.count[t]), ip.set.count[t]);
        final_event(k);
        contribute(slot(find(k, selinv_diag_reduce, -1, -1)), share);
        return;
      }
      case selinv_col_reduce: be_.finish_col(k, sum); break;
      case selinv_diag_reduce: be_.finish_diag(k, sum); break;
      default: throw std::logic_error("selected inversion: a reduction of an unknown role");
    }
    final_event(k);
  }
  void final_event(std::int64_t k) { --remaining_[k]; }

  const SelinvPlan& plan_;
  const SupernodeBlocks& blocks_;
  const ProcessGrid2D grid_;
  int rank_, x_, y_;
  const TreePlan& prep_;
  const TreePlan& inv_;
  PlanArrivals pa_, ia_;
  std::int64_t ns_;
  Backend& be_;
  std::vector<char> have_;               // per invert slot: the broadcast's data is here
  std::vector<int> waiting_;             // per invert slot: contributions still to come (own included)
  std::vector<std::int32_t> steps_;      // the supernodes this rank takes part in, descending
  std::vector<std::int32_t> remaining_;  // per supernode: blocks of Z still to be finished here
  std::vector<std::int32_t> active_;     // entered, not started yet (descending)
  std::size_t entered_ = 0, worked_ = 0;
  std::int64_t current_ = -1, piece_ = 0, pieces_ = 0;  // the supernode whose products are under way
  std::int64_t split_ = 0;
  const double* lt_ = nullptr;  // its broadcast data: L^(C_y, K)^T, U^(K, R_x)
  const double* ut_ = nullptr;
};

}  // namespace commsolve
