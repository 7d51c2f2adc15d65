#include "commsolve/direct/selinv_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/structure_share.hpp"
#include "commsolve/core/stopwatch.hpp"

namespace commsolve {

namespace {

// Run r's prepare and invert messages travel under tags first_tag + 2 (r mod tag_cycle) and
// the next: a rank that goes on to its next run while a peer is still in the last one (no
// barrier between runs) cannot have its messages taken for the last run's.
constexpr int first_tag = 100, tag_cycle = 1000;

std::int64_t max_count(const SelinvPlan& p) {
  std::int64_t m = 1;
  for (const SelinvPhase* ph : {&p.prepare, &p.invert})
    for (std::int64_t n : ph->set.count) m = std::max(m, n);
  return m;
}

ProcessGrid2D layer_of(const SolveLayout& layout) {
  const ProcessGrid3D& g = layout.grid();
  require(g.pz == 1, "selected inversion runs on a 2D grid (Pz = 1), got Pz = " + std::to_string(g.pz));
  return ProcessGrid2D{g.px, g.py, 0};
}

// `layout`, made whole where it holds this rank's share (gather_structure: collective).
std::shared_ptr<const SolveLayout> whole_layout(MPI_Comm comm, std::shared_ptr<const SolveLayout> layout) {
  if (!layout->sym().share) return layout;
  return std::make_shared<const SolveLayout>(std::make_shared<const SupernodalStructure>(gather_structure(comm, layout->sym())),
                                             layout->grid(), layout->forests().forest);
}

// Where this rank's factors lie by `layout`'s block ids (no values), checked against `store`'s
// offsets (which a share's layout gives alike).
BlockStore laid_out(MPI_Comm comm, const SolveLayout& layout, const BlockStore& store) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  BlockStore out = block_store_layout(layout.sym(), layout.blocks(), layout.grid(), layout.forests(), rank);
  const LocalLayout2D &a = out.layout, &b = store.layout;
  require(a.total == b.total && static_cast<std::int64_t>(store.values.size()) == b.total && a.diag_off == b.diag_off &&
              a.l_panel == b.l_panel && a.u_off == b.u_off,
          "selected inversion: the factors on rank " + std::to_string(rank) + " are not laid out as its layout says");
  return out;
}

// Position in `list` (ascending, n entries) of each of `want` (ascending, a subset of it).
void positions(const std::int32_t* list, std::int64_t n, const std::int32_t* want, std::int64_t m,
               std::vector<std::int64_t>& out) {
  out.resize(static_cast<std::size_t>(m));
  std::int64_t p = 0;
  for (std::int64_t t = 0; t < m; ++t) {
    while (p < n && list[p] < want[t]) ++p;
    if (p == n || list[p] != want[t])
      throw std::logic_error("selected inversion: the structure is not closed (row " + std::to_string(want[t]) + ")");
    out[t] = p++;
  }
}

// C (m x n) = op(A) op(B), column-major; nothing for an empty product.
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const double* A, std::int64_t lda,
          const double* B, std::int64_t ldb, double beta, double* C) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta,
              C, static_cast<int>(m));
}

}  // namespace


// The machine's backend with the numbers: L^ and U^ beside the factors, Z where the factors
// lie, the broadcasts' data and the reductions' sums per slot.
class SelinvNumbers {
 public:
  explicit SelinvNumbers(SelectedInversion2D& s) : s_(s) {}

  void send(int dest, std::int64_t c, const double* v, std::int64_t n, int role) { s_.engine_.send(dest, c, v, n, role); }
  const double* diag_inverse(std::int64_t k, bool upper) const {
    return s_.store_.values.data() + s_.lay_.layout.diag_off[s_.lay_.diag_index[k]] + (upper ? w(k) * w(k) : 0);
  }
  // L^(R_x, K) = L(R_x, K) L_KK^-1 on (x, K mod Py).
  void lhat(std::int64_t k, const double* inv_l) {
    const std::int64_t col = s_.index_.l_col_of[k], wk = w(k);
    if (col < 0) return;  // the diagonal owner without L blocks of K
    const std::int64_t M = lay().l_rows[col], off = lay().l_panel[col];
    double* h = s_.hat_.data() + off;
    std::copy(s_.store_.values.data() + off, s_.store_.values.data() + off + M * wk, h);
    if (M > 0)
      cblas_dtrmm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(M),
                  static_cast<int>(wk), 1.0, inv_l, static_cast<int>(wk), h, static_cast<int>(M));
    s_.flops_ += static_cast<double>(M * wk * wk);
  }
  // U^(K, C_y) = U_KK^-1 U(K, C_y) on (K mod Px, y): in the symmetric form, the Col-Bcast's data.
  void uhat(std::int64_t k, const double* inv_u) {
    const std::int64_t wk = w(k);
    std::int64_t cols = 0;
    for (std::int64_t p = s_.index_.u_row_ptr[k]; p < s_.index_.u_row_ptr[k + 1]; ++p) {
      const std::int64_t b = s_.index_.u_row_block[p], m = rows(b), off = s_.index_.u_off_of[b];
      double* h = s_.hat_.data() + off;
      std::copy(s_.store_.values.data() + off, s_.store_.values.data() + off + wk * m, h);
      cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(wk),
                  static_cast<int>(m), 1.0, inv_u, static_cast<int>(wk), h, static_cast<int>(wk));
      cols += m;
    }
    s_.flops_ += static_cast<double>(wk * wk * cols);
    if (!s_.plan_.symmetric || cols == 0) return;
    std::vector<double>& lt = s_.lt_[k];  // the blocks of row K here are C_y, ascending
    lt.clear();
    for (std::int64_t p = s_.index_.u_row_ptr[k]; p < s_.index_.u_row_ptr[k + 1]; ++p) {
      const double* h = s_.hat_.data() + s_.index_.u_off_of[s_.index_.u_row_block[p]];
      lt.insert(lt.end(), h, h + wk * rows(s_.index_.u_row_block[p]));
    }
  }
  // The blocks of K's group (x, y) as their destination stores them, w x m each: L^ rows
  // transposed (cross_l), U^ blocks (cross_u), Z(J, K) rows transposed (transpose).
  const double* pack(SelinvRole role, std::int64_t k, int x, int y, std::int64_t n) {
    const std::int64_t wk = w(k);
    pack_.clear();
    const bool from_panel = role != selinv_cross_u;
    const std::int64_t col = s_.index_.l_col_of[k], M = from_panel && col >= 0 ? lay().l_rows[col] : 0;
    const double* panel = from_panel && col >= 0 ? (role == selinv_cross_l ? s_.hat_ : s_.z_).data() + lay().l_panel[col]
                                                 : nullptr;
    for (std::int64_t b = blk().col_ptr[k]; b < blk().col_ptr[k + 1]; ++b) {
      if (!in_group(b, x, y)) continue;
      if (!from_panel) {
        const double* h = s_.hat_.data() + s_.index_.u_off_of[b];
        pack_.insert(pack_.end(), h, h + wk * rows(b));
        continue;
      }
      const std::int64_t r0 = s_.index_.l_row_of[b];
      for (std::int64_t a = 0; a < rows(b); ++a)
        for (std::int64_t j = 0; j < wk; ++j) pack_.push_back(panel[r0 + a + M * j]);
    }
    if (static_cast<std::int64_t>(pack_.size()) != n)
      throw std::logic_error("selected inversion: a group's blocks disagree with the plan (supernode " +
                             std::to_string(k) + ")");
    return pack_.data();
  }
  void place(SelinvRole role, std::int64_t k, int x, int y, const double* v) {
    const std::int64_t wk = w(k);
    if (role == selinv_transpose) {  // Z(K, J) = Z(J, K)^T, block by block
      for (std::int64_t b = blk().col_ptr[k]; b < blk().col_ptr[k + 1]; ++b)
        if (in_group(b, x, y)) {
          std::copy(v, v + wk * rows(b), s_.z_.data() + s_.index_.u_off_of[b]);
          v += wk * rows(b);
        }
      return;
    }
    // L^(C_y)^T by position in C_y (cross_l), U^(R_x) by position in R_x (cross_u)
    const bool by_row = role == selinv_cross_u;
    std::vector<double>& to = by_row ? s_.ut_[k] : s_.lt_[k];
    s_.split_.compute(blk(), s_.grid_, k);
    to.resize(static_cast<std::size_t>(wk * (by_row ? s_.split_.rows[s_.x_] : s_.split_.cols[s_.y_])));
    for (std::int64_t b = blk().col_ptr[k], i = 0; b < blk().col_ptr[k + 1]; ++b, ++i)
      if (in_group(b, x, y)) {
        std::copy(v, v + wk * rows(b), to.data() + wk * (by_row ? s_.split_.at_row[i] : s_.split_.at_col[i]));
        v += wk * rows(b);
      }
  }
  const double* bcast_data(SelinvRole role, std::int64_t k) const {
    return (role == selinv_col_bcast ? s_.lt_ : s_.ut_)[k].data();
  }
  void hold(std::int64_t slot, const double* v, std::int64_t n) { s_.buf_[slot].assign(v, v + n); }
  const double* held(std::int64_t slot) const { return s_.buf_[slot].data(); }
  std::int64_t pieces(std::int64_t k) {
    bounds_ = product_pieces(blk(), s_.grid_, k, w(k), s_.x_, s_.y_, s_.plan_.symmetric);
    return static_cast<std::int64_t>(bounds_.size()) - 1;
  }
  // One piece of Z(R_x, C_y) L^(C_y, K) (summed over the pieces) and U^(K, R_x) Z(R_x, C_y)
  // (its columns; unsymmetric only): the columns of C_y in the piece's blocks.
  void products(std::int64_t k, const double* lt, const double* ut, std::int64_t piece) {
    const std::int64_t wk = w(k);
    s_.split_.compute(blk(), s_.grid_, k);
    const std::int64_t rx = s_.split_.rows[s_.x_], cy = s_.split_.cols[s_.y_];
    const auto [c0, c1] = gather_z(k, bounds_[piece], bounds_[piece + 1]);
    if (piece == 0) {
      s_.P_.assign(static_cast<std::size_t>(rx * wk), 0.0);
      if (ut != nullptr) s_.Q_.assign(static_cast<std::size_t>(wk * cy), 0.0);
    }
    const std::int64_t nc = c1 - c0;
    gemm(false, true, rx, wk, nc, s_.G_.data(), rx, lt + wk * c0, wk, 1.0, s_.P_.data());
    s_.flops_ += 2.0 * static_cast<double>(rx * nc * wk);
    if (ut == nullptr) return;
    gemm(false, false, wk, nc, rx, ut, wk, s_.G_.data(), rx, 0.0, s_.Q_.data() + wk * c0);
    s_.flops_ += 2.0 * static_cast<double>(rx * nc * wk);
  }
  const double* row_part() const { return s_.P_.data(); }
  const double* col_part() const { return s_.Q_.data(); }
  void add(std::int64_t slot, std::int64_t n, const double* v) {
    std::vector<double>& acc = s_.buf_[slot];
    if (acc.empty()) acc.assign(static_cast<std::size_t>(n), 0.0);
    if (v != nullptr)
      for (std::int64_t a = 0; a < n; ++a) acc[a] += v[a];
  }
  const double* sum(std::int64_t slot) const { return s_.buf_[slot].data(); }
  void release(std::int64_t slot) { std::vector<double>().swap(s_.buf_[slot]); }
  // Z(R_x, K) = -sum; returns this row's share of Z(K, K): U^(K, R_x) Z(R_x, K).
  const double* finish_row(std::int64_t k, const double* sum) {
    const std::int64_t wk = w(k), col = s_.index_.l_col_of[k], M = lay().l_rows[col];
    double* zp = s_.z_.data() + lay().l_panel[col];
    for (std::int64_t a = 0; a < M * wk; ++a) zp[a] = -sum[a];
    s_.share_.resize(static_cast<std::size_t>(wk * wk));
    if (s_.plan_.symmetric)  // U^(K, R_x) = L^(R_x, K)^T
      gemm(true, false, wk, wk, M, s_.hat_.data() + lay().l_panel[col], M, zp, M, 0.0, s_.share_.data());
    else
      gemm(false, false, wk, wk, M, s_.ut_[k].data(), wk, zp, M, 0.0, s_.share_.data());
    std::vector<double>().swap(s_.ut_[k]);  // its last use
    s_.flops_ += 2.0 * static_cast<double>(wk * wk * M);
    return s_.share_.data();
  }
  void finish_col(std::int64_t k, const double* sum) {  // Z(K, C_y) = -sum, block by block (ascending J)
    const std::int64_t wk = w(k);
    for (std::int64_t p = s_.index_.u_row_ptr[k]; p < s_.index_.u_row_ptr[k + 1]; ++p) {
      const std::int64_t b = s_.index_.u_row_block[p], n = wk * rows(b);
      double* zu = s_.z_.data() + s_.index_.u_off_of[b];
      for (std::int64_t a = 0; a < n; ++a) zu[a] = -sum[a];
      sum += n;
    }
  }
  void finish_diag(std::int64_t k, const double* sum) {  // Z(K, K) = U_KK^-1 L_KK^-1 - sum
    const std::int64_t wk = w(k), d = s_.lay_.diag_index[k];
    const double* inv = s_.store_.values.data() + lay().diag_off[d];
    double* zd = s_.z_.data() + lay().diag_off[d];
    gemm(false, false, wk, wk, wk, inv + wk * wk, wk, inv, wk, 0.0, zd);
    for (std::int64_t a = 0; a < wk * wk; ++a) zd[a] -= sum[a];
    s_.flops_ += 2.0 * static_cast<double>(wk * wk * wk);
  }
  void done_with(std::int64_t k) { std::vector<double>().swap(s_.lt_[k]); }

 private:
  std::int64_t w(std::int64_t k) const { return s_.width(k); }
  std::int64_t rows(std::int64_t b) const { return blk().hi[b] - blk().lo[b]; }
  const SupernodeBlocks& blk() const { return s_.blocks_; }
  const LocalLayout2D& lay() const { return s_.lay_.layout; }
  bool in_group(std::int64_t b, int x, int y) const {
    return blk().sn[b] % s_.grid_.px == x && blk().sn[b] % s_.grid_.py == y;
  }
  // Z(R_x, C) into G (|R_x| x the columns of C_y among K's blocks [i0, i1)), returned as
  // [c0, c1) in C_y: each pair of K's blocks (J in R_x, I in C_y) reads a block of Z held
  // here, of I's column (J > I), of J's row (J < I) or diagonal (J = I), at the positions of
  // K's rows in it.
  std::pair<std::int64_t, std::int64_t> gather_z(std::int64_t k, std::int64_t i0, std::int64_t i1) {
    const SupernodalStructure& sym = s_.sym_;
    const SupernodeSplit& sp = s_.split_;
    std::int64_t c0 = sp.cols[s_.y_], c1 = c0;
    for (std::int64_t t = i0; t < i1; ++t)
      if (blk().sn[blk().col_ptr[k] + t] % s_.grid_.py == s_.y_) {
        c0 = std::min(c0, sp.at_col[t]);
        c1 = sp.at_col[t] + rows(blk().col_ptr[k] + t);
      }
    if (c1 < c0) c1 = c0;
    const std::int64_t rx = sp.rows[s_.x_];
    s_.G_.assign(static_cast<std::size_t>(rx * (c1 - c0)), 0.0);
    const std::int32_t* R = sym.rows.data() + sym.rows_ptr[k];
    const double* z = s_.z_.data();
    auto find_block = [&](std::int64_t col, std::int32_t sn) {
      const auto* first = blk().sn.data() + blk().col_ptr[col];
      const auto* last = blk().sn.data() + blk().col_ptr[col + 1];
      const auto* it = std::lower_bound(first, last, sn);
      if (it == last || *it != sn) throw std::logic_error("selected inversion: a block of Z(C, C) is missing");
      return blk().col_ptr[col] + (it - first);
    };
    auto below = [&](std::int64_t b) { return sym.rows.data() + sym.rows_ptr[blk().col[b]] + blk().lo[b]; };
    for (std::int64_t bj = blk().col_ptr[k], i = 0; bj < blk().col_ptr[k + 1]; ++bj, ++i) {
      const std::int32_t J = blk().sn[bj];
      if (J % s_.grid_.px != s_.x_) continue;
      const std::int64_t mj = rows(bj), fJ = sym.sn_start[J], wJ = w(J);
      const std::int32_t* RJ = R + blk().lo[bj];
      for (std::int64_t t = i0; t < i1; ++t) {
        const std::int64_t bi = blk().col_ptr[k] + t;
        const std::int32_t I = blk().sn[bi];
        if (I % s_.grid_.py != s_.y_) continue;
        const std::int64_t mi = rows(bi), fI = sym.sn_start[I];
        const std::int32_t* CI = R + blk().lo[bi];
        double* g = s_.G_.data() + sp.at_row[i] + rx * (sp.at_col[t] - c0);
        if (J == I) {
          const double* zd = z + lay().diag_off[s_.lay_.diag_index[J]];
          for (std::int64_t b = 0; b < mi; ++b)
            for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zd[(RJ[a] - fJ) + wJ * (CI[b] - fI)];
        } else if (J > I) {  // Z(J, I): rows of I's panel here
          const std::int64_t b2 = find_block(I, J), col = s_.index_.l_col_of[I], M = lay().l_rows[col];
          positions(below(b2), rows(b2), RJ, mj, pos_);
          const double* zp = z + lay().l_panel[col] + s_.index_.l_row_of[b2];
          for (std::int64_t b = 0; b < mi; ++b) {
            const double* zc = zp + M * (CI[b] - fI);
            for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zc[pos_[a]];
          }
        } else {  // Z(J, I): a block of J's row here, w_J x (J's rows in I)
          const std::int64_t b2 = find_block(J, I);
          positions(below(b2), rows(b2), CI, mi, pos_);
          const double* zu = z + s_.index_.u_off_of[b2];
          for (std::int64_t b = 0; b < mi; ++b) {
            const double* zc = zu + wJ * pos_[b];
            for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zc[RJ[a] - fJ];
          }
        }
      }
    }
    return {c0, c1};
  }

  SelectedInversion2D& s_;
  std::vector<double> pack_;
  std::vector<std::int64_t> pos_, bounds_;  // scratch; the pieces of the products under way
};

SelectedInversion2D::SelectedInversion2D(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout,
                                         const BlockStore& store, const TreeShape& shape, bool symmetric)
    : layout_(whole_layout(comm, std::move(layout))), sym_(layout_->sym()), blocks_(layout_->blocks()), store_(store),
      lay_(laid_out(comm, *layout_, store)), grid_(layer_of(*layout_)), index_(sym_, blocks_, lay_), topo_(topo),
      plan_(selinv_plan(sym_, blocks_, grid_, symmetric)), engine_(comm, topo, max_count(plan_), 0, selinv_steps) {
  check_tree_shape(shape);
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(size == grid_.size(), "selected inversion: the grid has " + std::to_string(grid_.size()) +
                                    " ranks, the communicator " + std::to_string(size));
  require(topo.size() == size, "selected inversion: the topology has " + std::to_string(topo.size()) + " ranks");
  x_ = rank_ / grid_.py;
  y_ = rank_ % grid_.py;
  prep_plan_ = build_tree_plan(plan_.prepare.set, rank_, shape, topo);
  inv_plan_ = build_tree_plan(plan_.invert.set, rank_, shape, topo);
  // at most this many sends handed to MPI at once (the factorization's reason: a peer busy
  // computing leaves thousands unreceived, and Open MPI walks its pending sends at every call)
  engine_.set_window(std::max<std::int64_t>(64, 8 * (grid_.px + grid_.py)));
}

CommStats SelectedInversion2D::planned() const {
  CommStats s = tree_stats(prep_plan_, plan_.prepare.set, topo_, plan_.prepare.role, selinv_steps);
  const CommStats b = tree_stats(inv_plan_, plan_.invert.set, topo_, plan_.invert.role, selinv_steps);
  for (int k = 0; k < selinv_steps; ++k) s.steps[k] += b.steps[k];
  return s;
}

SelectedInversion2D::Times SelectedInversion2D::run() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t ns = sym_.nsuper();
  hat_.assign(static_cast<std::size_t>(lay_.layout.total), 0.0);
  z_.assign(static_cast<std::size_t>(lay_.layout.total), 0.0);
  lt_.assign(static_cast<std::size_t>(ns), {});
  ut_.assign(static_cast<std::size_t>(ns), {});
  buf_.assign(inv_plan_.index.size(), {});
  flops_ = 0.0;
  engine_.reset_recorded();
  SelinvNumbers numbers(*this);
  SelinvMachine<SelinvNumbers> machine(plan_, blocks_, grid_, rank_, prep_plan_, inv_plan_, numbers);
  auto kinds = [](const SelinvPhase& ph) {
    return [&ph](std::int64_t key) { return static_cast<int>(ph.role.at(static_cast<std::size_t>(key))); };
  };

  const int tag = first_tag + 2 * (runs_++ % tag_cycle);
  engine_.set_tag(tag);
  engine_.set_kind_of(kinds(plan_.prepare));
  machine.prepare_start();
  engine_.run(machine.prepare_expected(),
              [&](int, std::int64_t key, const double* v, std::int64_t n) { machine.prepare_arrive(key, v, n); });
  Times t;
  t.prepare = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  engine_.set_tag(tag + 1);
  engine_.set_kind_of(kinds(plan_.invert));
  machine.invert_start();
  engine_.run(
      machine.invert_expected(),
      [&](int, std::int64_t key, const double* v, std::int64_t n) { machine.invert_arrive(key, v, n); },
      [&] { return machine.step(); });
  if (!machine.finished())
    throw std::logic_error("selected inversion: work left after every message arrived (step " +
                           std::to_string(machine.steps_done()) + " of " + std::to_string(machine.steps()) + ")");
  split_supernodes_ = machine.split_supernodes();
  buf_.clear();
  lt_.clear();
  ut_.clear();
  t.invert = seconds_since(t1);
  t.total = seconds_since(t0);
  return t;
}

SelectedEntries SelectedInversion2D::entries() const {
  SelectedEntries out;
  const LocalLayout2D& lay = lay_.layout;
  out.row.reserve(static_cast<std::size_t>(lay.total));
  out.col.reserve(static_cast<std::size_t>(lay.total));
  out.value.reserve(static_cast<std::size_t>(lay.total));
  auto put = [&](std::int64_t i, std::int64_t j, double v) {
    out.row.push_back(static_cast<std::int32_t>(i));
    out.col.push_back(static_cast<std::int32_t>(j));
    out.value.push_back(v);
  };
  for (std::size_t d = 0; d < lay.diag_sn.size(); ++d) {
    const std::int64_t k = lay.diag_sn[d], f = sym_.sn_start[k], w = width(k);
    for (std::int64_t j = 0; j < w; ++j)
      for (std::int64_t i = 0; i < w; ++i) put(f + i, f + j, z_[lay.diag_off[d] + i + w * j]);
  }
  for (std::size_t c = 0; c < lay.l_col.size(); ++c) {
    const std::int64_t k = lay.l_col[c], f = sym_.sn_start[k], w = width(k), M = lay.l_rows[c];
    for (std::int64_t p = lay.l_ptr[c]; p < lay.l_ptr[c + 1]; ++p) {
      const std::int64_t b = lay.l_block[p];
      const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[k] + blocks_.lo[b];
      for (std::int64_t j = 0; j < w; ++j)
        for (std::int64_t a = 0; a < blocks_.hi[b] - blocks_.lo[b]; ++a)
          put(rows[a], f + j, z_[lay.l_panel[c] + lay.l_row[p] + a + M * j]);
    }
  }
  for (std::size_t p = 0; p < lay.u_block.size(); ++p) {
    const std::int64_t b = lay.u_block[p], k = blocks_.col[b], f = sym_.sn_start[k], w = width(k);
    const std::int32_t* cols = sym_.rows.data() + sym_.rows_ptr[k] + blocks_.lo[b];
    for (std::int64_t t = 0; t < blocks_.hi[b] - blocks_.lo[b]; ++t)
      for (std::int64_t i = 0; i < w; ++i) put(f + i, cols[t], z_[lay.u_off[p] + i + w * t]);
  }
  return out;
}

}  // namespace commsolve
