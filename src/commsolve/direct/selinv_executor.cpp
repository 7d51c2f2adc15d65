#include "direct/selinv_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace commsolve {

namespace {

constexpr int prepare_tag = 41, invert_tag = 42;

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

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SelectedInversion2D::SelectedInversion2D(MPI_Comm comm, const Topology& topo, const SolveLayout& layout,
                                         const BlockStore& store, const TreeShape& shape, bool symmetric)
    : sym_(layout.sym()), blocks_(layout.blocks()), store_(store), grid_(layer_of(layout)),
      index_(layout.sym(), layout.blocks(), store), topo_(topo), shape_(shape),
      plan_(selinv_plan(layout.sym(), layout.blocks(), grid_, symmetric)),
      engine_(comm, topo, max_count(plan_), 0, selinv_steps) {
  check_tree_shape(shape);
  MPI_Comm_rank(comm, &rank_);
  int size = 0;
  MPI_Comm_size(comm, &size);
  require(size == grid_.size(), "selected inversion: the grid has " + std::to_string(grid_.size()) +
                                    " ranks, the communicator " + std::to_string(size));
  require(topo.size() == size, "selected inversion: the topology has " + std::to_string(topo.size()) + " ranks");
  x_ = rank_ / grid_.py;
  y_ = rank_ % grid_.py;
  prep_plan_ = build_tree_plan(plan_.prepare.set, rank_, shape, topo);
  inv_plan_ = build_tree_plan(plan_.invert.set, rank_, shape, topo);
  prep_arr_ = plan_arrivals(prep_plan_, plan_.prepare.set);
  inv_arr_ = plan_arrivals(inv_plan_, plan_.invert.set);
}

CommStats SelectedInversion2D::planned() const {
  CommStats s = tree_stats(prep_plan_, plan_.prepare.set, topo_, plan_.prepare.role, selinv_steps);
  const CommStats b = tree_stats(inv_plan_, plan_.invert.set, topo_, plan_.invert.role, selinv_steps);
  for (int k = 0; k < selinv_steps; ++k) s.steps[k] += b.steps[k];
  return s;
}

std::int64_t SelectedInversion2D::slot(const SelinvPhase& ph, const PlanArrivals& arr, std::int64_t k,
                                       SelinvRole role, int x, int y) const {
  for (std::int64_t c = ph.sn_ptr[k]; c < ph.sn_ptr[k + 1]; ++c)
    if (ph.role[c] == role && (x < 0 || ph.gx[c] == x) && (y < 0 || ph.gy[c] == y)) return arr.slot_of[c];
  return -1;
}

// A point-to-point collective's destination is its last participant (its root when alone).
bool SelectedInversion2D::is_destination(const SelinvPhase& ph, std::int64_t c) const {
  return ph.set.part[ph.set.part_ptr[c + 1] - 1] == rank_;
}

void SelectedInversion2D::forward(const TreePlan& plan, const SelinvPhase& ph, std::int64_t s, const double* v,
                                  std::int64_t n) {
  const std::int64_t c = plan.index[s];
  for (int child : plan.links[s].children) engine_.send(child, c, v, n, ph.role[c]);
}

SelectedInversion2D::Times SelectedInversion2D::run() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t ns = sym_.sn_start.size() - 1;
  hat_.assign(static_cast<std::size_t>(store_.layout.total), 0.0);
  z_.assign(static_cast<std::size_t>(store_.layout.total), 0.0);
  lt_.assign(ns, {});
  ut_.assign(ns, {});
  flops_ = 0.0;
  engine_.reset_recorded();

  // prepare: the diagonal owners start; the rest comes with the messages
  const SelinvPhase& pp = plan_.prepare;
  engine_.set_tag(prepare_tag);
  engine_.set_kind_of([&pp](std::int64_t key) { return static_cast<int>(pp.role.at(static_cast<std::size_t>(key))); });
  for (std::size_t s = 0; s < prep_plan_.index.size(); ++s) {
    const std::int64_t c = prep_plan_.index[s];
    if (pp.set.root[c] != rank_ || (pp.role[c] != selinv_inv_l && pp.role[c] != selinv_inv_u)) continue;
    const std::int64_t k = pp.sn[c], w = width(k);
    const double* inv = store_.values.data() + store_.layout.diag_off[store_.diag_index[k]];
    prepare_arrival(c, inv + (pp.role[c] == selinv_inv_u ? w * w : 0), w * w);
  }
  engine_.run(prep_arr_.expected, [&](int, std::int64_t key, const double* v, std::int64_t n) {
    prepare_arrival(key, v, n);
  });
  Times t;
  t.prepare = seconds_since(t0);

  // invert
  const auto t1 = std::chrono::steady_clock::now();
  const SelinvPhase& ip = plan_.invert;
  const std::size_t nslots = inv_plan_.index.size();
  held_.assign(nslots, {});
  acc_.assign(nslots, {});
  have_.assign(nslots, 0);
  waiting_.assign(nslots, 0);
  remaining_.assign(ns, 0);
  steps_.clear();
  for (std::size_t s = 0; s < nslots; ++s) {
    const std::int64_t c = inv_plan_.index[s];
    const std::int32_t k = ip.sn[c];
    if (steps_.empty() || steps_.back() != k) steps_.push_back(k);
    const bool reduce = ip.set.kind[c] == static_cast<std::int8_t>(CollectiveKind::reduce);
    if (reduce) waiting_[s] = inv_arr_.waiting[s] + 1;  // the children and this rank
    if ((reduce && ip.set.root[c] == rank_) || (ip.role[c] == selinv_transpose && is_destination(ip, c)))
      ++remaining_[k];
  }
  std::reverse(steps_.begin(), steps_.end());
  frontier_ = static_cast<std::int64_t>(ns);
  outstanding_ = 0;
  next_ = 0;
  entered_ = false;
  engine_.set_tag(invert_tag);
  engine_.set_kind_of([&ip](std::int64_t key) { return static_cast<int>(ip.role.at(static_cast<std::size_t>(key))); });
  engine_.run(
      inv_arr_.expected, [&](int, std::int64_t key, const double* v, std::int64_t n) { invert_arrival(key, v, n); },
      [&] { return step(); });
  if (next_ != steps_.size() ||
      std::any_of(remaining_.begin(), remaining_.end(), [](std::int32_t r) { return r != 0; }))
    throw std::logic_error("selected inversion: work left after every message arrived (step " +
                           std::to_string(next_) + " of " + std::to_string(steps_.size()) + ")");
  held_.clear();
  acc_.clear();
  lt_.clear();
  ut_.clear();
  t.invert = seconds_since(t1);
  t.total = seconds_since(t0);
  return t;
}

// ---- prepare -------------------------------------------------------------------------------

void SelectedInversion2D::prepare_arrival(std::int64_t c, const double* v, std::int64_t n) {
  const SelinvPhase& pp = plan_.prepare;
  const std::int64_t s = prep_arr_.slot_of[c];
  if (s < 0 || n != pp.set.count[c]) throw std::logic_error("selected inversion: unexpected message " + std::to_string(c));
  forward(prep_plan_, pp, s, v, n);
  const std::int64_t k = pp.sn[c];
  switch (pp.role[c]) {
    case selinv_inv_l: make_lhat(k, v); break;
    case selinv_inv_u: make_uhat(k, v); break;
    case selinv_cross_l:
      if (is_destination(pp, c)) place_group(lt_[k], k, pp.gx[c], pp.gy[c], v, false);
      break;
    case selinv_cross_u:
      if (is_destination(pp, c)) place_group(ut_[k], k, pp.gx[c], pp.gy[c], v, true);
      break;
    default: throw std::logic_error("selected inversion: a role outside prepare");
  }
}

// L^(R_x, K) = L(R_x, K) L_KK^-1 on (x, K mod Py); the unsymmetric form sends it across.
void SelectedInversion2D::make_lhat(std::int64_t k, const double* inv_l) {
  const std::int64_t col = index_.l_col_of[k], w = width(k);
  if (col < 0) return;  // the diagonal owner without L blocks of K
  const std::int64_t M = store_.layout.l_rows[col], off = store_.layout.l_panel[col];
  double* h = hat_.data() + off;
  std::copy(store_.values.data() + off, store_.values.data() + off + M * w, h);
  if (M > 0)
    cblas_dtrmm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(M),
                static_cast<int>(w), 1.0, inv_l, static_cast<int>(w), h, static_cast<int>(M));
  flops_ += static_cast<double>(M * w * w);
  if (plan_.symmetric) return;
  std::vector<double> packed;  // the blocks of one (x, y) group, transposed: w x m each
  for (int y = 0; y < grid_.py; ++y) {
    packed.clear();
    for (std::int64_t b = blocks_.col_ptr[k]; b < blocks_.col_ptr[k + 1]; ++b) {
      if (blocks_.sn[b] % grid_.px != x_ || blocks_.sn[b] % grid_.py != y) continue;
      const std::int64_t m = blocks_.hi[b] - blocks_.lo[b], r0 = index_.l_row_of[b];
      for (std::int64_t a = 0; a < m; ++a)
        for (std::int64_t j = 0; j < w; ++j) packed.push_back(h[r0 + a + M * j]);
    }
    if (!packed.empty()) send_group(selinv_cross_l, k, x_, y, packed);
  }
}

// U^(K, C_y) = U_KK^-1 U(K, C_y) on (K mod Px, y): the Col-Bcast's data in the symmetric
// form; the unsymmetric form sends it across.
void SelectedInversion2D::make_uhat(std::int64_t k, const double* inv_u) {
  const std::int64_t w = width(k);
  std::int64_t cols = 0;
  for (std::int64_t p = index_.u_row_ptr[k]; p < index_.u_row_ptr[k + 1]; ++p) {
    const std::int64_t b = index_.u_row_block[p], m = blocks_.hi[b] - blocks_.lo[b], off = index_.u_off_of[b];
    double* h = hat_.data() + off;
    std::copy(store_.values.data() + off, store_.values.data() + off + w * m, h);
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(w),
                static_cast<int>(m), 1.0, inv_u, static_cast<int>(w), h, static_cast<int>(w));
    cols += m;
  }
  flops_ += static_cast<double>(w * w * cols);
  if (cols == 0) return;
  if (plan_.symmetric) {  // the blocks of row K here are C_y, ascending
    std::vector<double>& lt = lt_[k];
    lt.resize(static_cast<std::size_t>(w * cols));
    std::int64_t at = 0;
    for (std::int64_t p = index_.u_row_ptr[k]; p < index_.u_row_ptr[k + 1]; ++p) {
      const std::int64_t b = index_.u_row_block[p], n = w * (blocks_.hi[b] - blocks_.lo[b]);
      std::copy(hat_.data() + index_.u_off_of[b], hat_.data() + index_.u_off_of[b] + n, lt.data() + at);
      at += n;
    }
    return;
  }
  std::vector<double> packed;
  for (int x = 0; x < grid_.px; ++x) {
    packed.clear();
    for (std::int64_t p = index_.u_row_ptr[k]; p < index_.u_row_ptr[k + 1]; ++p) {
      const std::int64_t b = index_.u_row_block[p];
      if (blocks_.sn[b] % grid_.px != x) continue;
      const double* h = hat_.data() + index_.u_off_of[b];
      packed.insert(packed.end(), h, h + w * (blocks_.hi[b] - blocks_.lo[b]));
    }
    if (!packed.empty()) send_group(selinv_cross_u, k, x, y_, packed);
  }
}

void SelectedInversion2D::send_group(SelinvRole role, std::int64_t k, int x, int y, const std::vector<double>& packed) {
  const SelinvPhase& pp = plan_.prepare;
  for (std::int64_t c = pp.sn_ptr[k]; c < pp.sn_ptr[k + 1]; ++c)
    if (pp.role[c] == role && pp.gx[c] == x && pp.gy[c] == y) {
      if (pp.set.root[c] != rank_ || static_cast<std::int64_t>(packed.size()) != pp.set.count[c])
        throw std::logic_error("selected inversion: a cross-diagonal send disagrees with the plan");
      prepare_arrival(c, packed.data(), pp.set.count[c]);
      return;
    }
  throw std::logic_error("selected inversion: a cross-diagonal send the plan does not have");
}

// The blocks of group (x, y) (w x m each, in order) into `to`: L^(C_y)^T (by column position
// in C_y) or U^(R_x) (by_row: by position in R_x), w x (its columns).
void SelectedInversion2D::place_group(std::vector<double>& to, std::int64_t k, int x, int y, const double* v,
                                      bool by_row) {
  const std::int64_t w = width(k);
  split_.compute(blocks_, grid_, k);
  const std::int64_t ncols = by_row ? split_.rows[x_] : split_.cols[y_];
  to.resize(static_cast<std::size_t>(w * ncols));
  for (std::int64_t b = blocks_.col_ptr[k], i = 0; b < blocks_.col_ptr[k + 1]; ++b, ++i) {
    if (blocks_.sn[b] % grid_.px != x || blocks_.sn[b] % grid_.py != y) continue;
    const std::int64_t n = w * (blocks_.hi[b] - blocks_.lo[b]);
    std::copy(v, v + n, to.data() + w * (by_row ? split_.at_row[i] : split_.at_col[i]));
    v += n;
  }
}

// ---- invert --------------------------------------------------------------------------------

void SelectedInversion2D::invert_arrival(std::int64_t c, const double* v, std::int64_t n) {
  const SelinvPhase& ip = plan_.invert;
  const std::int64_t s = inv_arr_.slot_of[c];
  if (s < 0 || n != ip.set.count[c]) throw std::logic_error("selected inversion: unexpected message " + std::to_string(c));
  if (ip.set.kind[c] == static_cast<std::int8_t>(CollectiveKind::reduce)) {
    contribute(s, v);
    return;
  }
  forward(inv_plan_, ip, s, v, n);
  const std::int64_t k = ip.sn[c];
  if (ip.role[c] == selinv_transpose) {
    if (!is_destination(ip, c)) return;
    const std::int64_t w = width(k);
    for (std::int64_t b = blocks_.col_ptr[k]; b < blocks_.col_ptr[k + 1]; ++b) {  // Z(K, J) = Z(J, K)^T
      if (blocks_.sn[b] % grid_.px != ip.gx[c] || blocks_.sn[b] % grid_.py != ip.gy[c]) continue;
      const std::int64_t m = w * (blocks_.hi[b] - blocks_.lo[b]);
      std::copy(v, v + m, z_.data() + index_.u_off_of[b]);
      v += m;
    }
    final_event(k);
    return;
  }
  if (ip.set.root[c] != rank_) held_[s].assign(v, v + n);
  have_[s] = 1;
}

bool SelectedInversion2D::step() {
  if (next_ == steps_.size()) return false;
  const std::int64_t k = steps_[next_];
  if (!entered_) {
    for (; frontier_ > k + 1; --frontier_) outstanding_ += remaining_[frontier_ - 1];
    enter(k);
    entered_ = true;
  }
  if (!ready(k)) return false;
  work(k);
  ++next_;
  entered_ = false;
  return true;
}

// The broadcasts this rank roots for K: their data has been here since prepare.
void SelectedInversion2D::enter(std::int64_t k) {
  const SelinvPhase& ip = plan_.invert;
  for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
    const std::int64_t s = inv_arr_.slot_of[c];
    if (s < 0 || ip.set.root[c] != rank_ || (ip.role[c] != selinv_col_bcast && ip.role[c] != selinv_row_bcast))
      continue;
    const std::vector<double>& data = ip.role[c] == selinv_col_bcast ? lt_[k] : ut_[k];
    if (static_cast<std::int64_t>(data.size()) != ip.set.count[c])
      throw std::logic_error("selected inversion: a broadcast's data is incomplete at its root (supernode " +
                             std::to_string(k) + ")");
    forward(inv_plan_, ip, s, data.data(), ip.set.count[c]);
    have_[s] = 1;
  }
}

bool SelectedInversion2D::ready(std::int64_t k) const {
  if (outstanding_ != 0) return false;  // a block of Z above K is not final here yet
  const SelinvPhase& ip = plan_.invert;
  for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
    const std::int64_t s = inv_arr_.slot_of[c];
    if (s >= 0 && (ip.role[c] == selinv_col_bcast || ip.role[c] == selinv_row_bcast) && !have_[s]) return false;
  }
  return true;
}

// Z(R_x, C_y) into G (|R_x| x |C_y|): each pair of K's blocks (J in R_x, I in C_y) reads a
// block of Z held here, of I's column (J > I), of J's row (J < I) or diagonal (J = I), at
// the positions of K's rows in it.
void SelectedInversion2D::gather_z(std::int64_t k, std::vector<double>& G) {
  const std::int64_t rx = split_.rows[x_], cy = split_.cols[y_];
  G.assign(static_cast<std::size_t>(rx * cy), 0.0);
  const std::int32_t* R = sym_.rows.data() + sym_.rows_ptr[k];
  const LocalLayout2D& lay = store_.layout;
  std::vector<std::int64_t> pos;
  auto find_block = [&](std::int64_t col, std::int32_t sn) {
    const auto* first = blocks_.sn.data() + blocks_.col_ptr[col];
    const auto* last = blocks_.sn.data() + blocks_.col_ptr[col + 1];
    const auto* it = std::lower_bound(first, last, sn);
    if (it == last || *it != sn) throw std::logic_error("selected inversion: a block of Z(C, C) is missing");
    return blocks_.col_ptr[col] + (it - first);
  };
  for (std::int64_t bj = blocks_.col_ptr[k], i = 0; bj < blocks_.col_ptr[k + 1]; ++bj, ++i) {
    const std::int32_t J = blocks_.sn[bj];
    if (J % grid_.px != x_) continue;
    const std::int64_t mj = blocks_.hi[bj] - blocks_.lo[bj], r0 = split_.at_row[i];
    const std::int32_t* RJ = R + blocks_.lo[bj];
    const std::int64_t fJ = sym_.sn_start[J], wJ = width(J);
    for (std::int64_t bi = blocks_.col_ptr[k], t = 0; bi < blocks_.col_ptr[k + 1]; ++bi, ++t) {
      const std::int32_t I = blocks_.sn[bi];
      if (I % grid_.py != y_) continue;
      const std::int64_t mi = blocks_.hi[bi] - blocks_.lo[bi], c0 = split_.at_col[t];
      const std::int32_t* CI = R + blocks_.lo[bi];
      const std::int64_t fI = sym_.sn_start[I];
      double* g = G.data() + r0 + rx * c0;
      if (J == I) {
        const double* zd = z_.data() + lay.diag_off[store_.diag_index[J]];
        for (std::int64_t b = 0; b < mi; ++b)
          for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zd[(RJ[a] - fJ) + wJ * (CI[b] - fI)];
      } else if (J > I) {  // Z(J, I): rows of I's panel here
        const std::int64_t blk = find_block(I, J), col = index_.l_col_of[I];
        const std::int64_t M = lay.l_rows[col];
        positions(sym_.rows.data() + sym_.rows_ptr[I] + blocks_.lo[blk], blocks_.hi[blk] - blocks_.lo[blk], RJ, mj, pos);
        const double* zp = z_.data() + lay.l_panel[col] + index_.l_row_of[blk];
        for (std::int64_t b = 0; b < mi; ++b) {
          const double* zc = zp + M * (CI[b] - fI);
          for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zc[pos[a]];
        }
      } else {  // Z(J, I): a block of J's row here, w_J x (J's rows in I)
        const std::int64_t blk = find_block(J, I);
        positions(sym_.rows.data() + sym_.rows_ptr[J] + blocks_.lo[blk], blocks_.hi[blk] - blocks_.lo[blk], CI, mi, pos);
        const double* zu = z_.data() + index_.u_off_of[blk];
        for (std::int64_t b = 0; b < mi; ++b) {
          const double* zc = zu + wJ * pos[b];
          for (std::int64_t a = 0; a < mj; ++a) g[a + rx * b] = zc[RJ[a] - fJ];
        }
      }
    }
  }
}

// This rank's products for K: Z(R_x, C_y) L^(C_y, K) to the Row-Reduce, U^(K, R_x) Z(R_x, C_y)
// to the Col-Reduce; nothing (a zero share) to a reduction it only roots.
void SelectedInversion2D::work(std::int64_t k) {
  const SelinvPhase& ip = plan_.invert;
  const std::int64_t w = width(k);
  split_.compute(blocks_, grid_, k);
  const std::int64_t rx = split_.rows[x_], cy = split_.cols[y_];
  const std::int64_t rr = slot(ip, inv_arr_, k, selinv_row_reduce, x_, -1);
  const std::int64_t cr = slot(ip, inv_arr_, k, selinv_col_reduce, -1, y_);
  const std::int64_t dr = slot(ip, inv_arr_, k, selinv_diag_reduce, -1, -1);
  if (rx > 0 && cy > 0) {
    gather_z(k, G_);
    const std::int64_t cb = slot(ip, inv_arr_, k, selinv_col_bcast, -1, y_);
    const double* lt = ip.set.root[inv_plan_.index[cb]] == rank_ ? lt_[k].data() : held_[cb].data();
    P_.resize(static_cast<std::size_t>(rx * w));
    gemm(false, true, rx, w, cy, G_.data(), rx, lt, w, 0.0, P_.data());
    flops_ += 2.0 * static_cast<double>(rx * cy * w);
    if (!plan_.symmetric) {  // before the Row-Reduce may finish here and free U^(K, R_x)
      const std::int64_t rb = slot(ip, inv_arr_, k, selinv_row_bcast, x_, -1);
      const double* ut = ip.set.root[inv_plan_.index[rb]] == rank_ ? ut_[k].data() : held_[rb].data();
      Q_.resize(static_cast<std::size_t>(w * cy));
      gemm(false, false, w, cy, rx, ut, w, G_.data(), rx, 0.0, Q_.data());
      flops_ += 2.0 * static_cast<double>(rx * cy * w);
      contribute(cr, Q_.data());
    }
    contribute(rr, P_.data());
  } else {
    if (rr >= 0) contribute(rr, nullptr);
    if (cr >= 0) contribute(cr, nullptr);
  }
  if (dr >= 0 && rx == 0) contribute(dr, nullptr);  // the diagonal owner with no rows of K's column
  for (std::int64_t c = ip.sn_ptr[k]; c < ip.sn_ptr[k + 1]; ++c) {
    const std::int64_t s = inv_arr_.slot_of[c];
    if (s >= 0 && ip.set.kind[c] == static_cast<std::int8_t>(CollectiveKind::broadcast)) std::vector<double>().swap(held_[s]);
  }
  std::vector<double>().swap(lt_[k]);  // sent and used
}

void SelectedInversion2D::contribute(std::int64_t s, const double* v) {
  const std::int64_t c = inv_plan_.index[s], n = plan_.invert.set.count[c];
  std::vector<double>& acc = acc_[s];
  if (acc.empty()) acc.assign(static_cast<std::size_t>(n), 0.0);
  if (v != nullptr)
    for (std::int64_t a = 0; a < n; ++a) acc[a] += v[a];
  if (--waiting_[s] > 0) return;
  const int parent = inv_plan_.links[s].parent;
  if (parent >= 0) engine_.send(parent, c, acc.data(), n, plan_.invert.role[c]);
  else finalize(c);
  std::vector<double>().swap(acc);
}

// At a reduction's root: the block of Z is final (minus the sum), and what follows from it.
void SelectedInversion2D::finalize(std::int64_t c) {
  const SelinvPhase& ip = plan_.invert;
  const std::int64_t k = ip.sn[c], w = width(k);
  const std::vector<double>& acc = acc_[inv_arr_.slot_of[c]];
  const LocalLayout2D& lay = store_.layout;
  switch (ip.role[c]) {
    case selinv_row_reduce: {  // Z(R_x, K) = -sum, then its share of Z(K, K)
      const std::int64_t col = index_.l_col_of[k], M = lay.l_rows[col];
      double* zp = z_.data() + lay.l_panel[col];
      for (std::int64_t a = 0; a < M * w; ++a) zp[a] = -acc[a];
      std::vector<double> d(static_cast<std::size_t>(w * w));
      if (plan_.symmetric)  // U^(K, R_x) = L^(R_x, K)^T
        gemm(true, false, w, w, M, hat_.data() + lay.l_panel[col], M, zp, M, 0.0, d.data());
      else
        gemm(false, false, w, w, M, ut_[k].data(), w, zp, M, 0.0, d.data());
      std::vector<double>().swap(ut_[k]);  // its last use
      flops_ += 2.0 * static_cast<double>(w * w * M);
      const std::int64_t dr = slot(ip, inv_arr_, k, selinv_diag_reduce, -1, -1);
      if (plan_.symmetric)  // Z(K, J) = Z(J, K)^T to where U(K, J) lies
        for (std::int64_t t = ip.sn_ptr[k]; t < ip.sn_ptr[k + 1]; ++t) {
          if (ip.role[t] != selinv_transpose || ip.set.root[t] != rank_) continue;
          std::vector<double> packed;
          for (std::int64_t b = blocks_.col_ptr[k]; b < blocks_.col_ptr[k + 1]; ++b) {
            if (blocks_.sn[b] % grid_.px != x_ || blocks_.sn[b] % grid_.py != ip.gy[t]) continue;
            const std::int64_t m = blocks_.hi[b] - blocks_.lo[b], r0 = index_.l_row_of[b];
            for (std::int64_t a = 0; a < m; ++a)
              for (std::int64_t j = 0; j < w; ++j) packed.push_back(zp[r0 + a + M * j]);
          }
          invert_arrival(t, packed.data(), static_cast<std::int64_t>(packed.size()));
        }
      final_event(k);
      contribute(dr, d.data());
      return;
    }
    case selinv_col_reduce: {  // Z(K, C_y) = -sum, block by block (ascending J)
      std::int64_t at = 0;
      for (std::int64_t p = index_.u_row_ptr[k]; p < index_.u_row_ptr[k + 1]; ++p) {
        const std::int64_t b = index_.u_row_block[p], n = w * (blocks_.hi[b] - blocks_.lo[b]);
        double* zu = z_.data() + index_.u_off_of[b];
        for (std::int64_t a = 0; a < n; ++a) zu[a] = -acc[at + a];
        at += n;
      }
      final_event(k);
      return;
    }
    case selinv_diag_reduce: {  // Z(K, K) = U_KK^-1 L_KK^-1 - sum
      const std::int64_t d = store_.diag_index[k];
      const double* inv = store_.values.data() + lay.diag_off[d];
      double* zd = z_.data() + lay.diag_off[d];
      gemm(false, false, w, w, w, inv + w * w, w, inv, w, 0.0, zd);
      for (std::int64_t a = 0; a < w * w; ++a) zd[a] -= acc[a];
      flops_ += 2.0 * static_cast<double>(w * w * w);
      final_event(k);
      return;
    }
    default: throw std::logic_error("selected inversion: a reduction of an unknown role");
  }
}

void SelectedInversion2D::final_event(std::int64_t k) {
  --remaining_[k];
  if (k >= frontier_) --outstanding_;
}

SelectedEntries SelectedInversion2D::entries() const {
  SelectedEntries out;
  const LocalLayout2D& lay = store_.layout;
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
