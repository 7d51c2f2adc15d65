#include "direct/trisolve_2d.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace commsolve {

namespace {

constexpr int factors_tag = 3, lower_tag = 11, upper_tag = 12;
constexpr std::int64_t chunk = std::int64_t{1} << 28;  // doubles per MPI call (count is an int)
constexpr std::int64_t small_product = 1 << 16;       // block entries up to which we skip BLAS

// C (m x nrhs) = beta * C + A (m x k) * B (k x nrhs), all column-major and contiguous.
void multiply(std::int64_t m, std::int64_t k, int nrhs, const double* A, const double* B, double beta, double* C) {
  if (m == 0) return;
  if (m * k <= small_product) {  // most blocks: a plain loop beats a BLAS call's overhead
    if (beta == 0.0) std::fill(C, C + m * nrhs, 0.0);
    for (std::int64_t j = 0; j < k; ++j) {  // column j of A once, for every right-hand side
      const double* col = A + j * m;
      for (int c = 0; c < nrhs; ++c) {
        const double bj = B[c * k + j];
        double* out = C + c * m;
        for (std::int64_t i = 0; i < m; ++i) out[i] += col[i] * bj;
      }
    }
    return;
  }
  if (nrhs == 1)
    cblas_dgemv(CblasColMajor, CblasNoTrans, static_cast<int>(m), static_cast<int>(k), 1.0, A, static_cast<int>(m), B,
                1, beta, C, 1);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), nrhs, static_cast<int>(k), 1.0, A,
                static_cast<int>(m), B, static_cast<int>(k), beta, C, static_cast<int>(m));
}

// Copies the blocks `layout` places on one rank out of the serial factors.
void pack(const SupernodalLU& lu, const SupernodeBlocks& blocks, const LocalLayout2D& layout, double* out) {
  const SupernodalStructure& sym = lu.structure();
  auto width = [&](std::int64_t s) { return sym.sn_start[s + 1] - sym.sn_start[s]; };
  for (std::size_t d = 0; d < layout.diag_sn.size(); ++d) {
    const std::int64_t s = layout.diag_sn[d], w2 = width(s) * width(s);
    std::copy(lu.inv_l(s), lu.inv_l(s) + w2, out + layout.diag_off[d]);
    std::copy(lu.inv_u(s), lu.inv_u(s) + w2, out + layout.diag_off[d] + w2);
  }
  const std::size_t ns = sym.sn_start.size() - 1;
  for (std::size_t k = 0; k < ns; ++k) {
    const std::int64_t w = width(static_cast<std::int64_t>(k)), r = sym.rows_ptr[k + 1] - sym.rows_ptr[k];
    const std::int64_t M = layout.l_rows[k];
    for (std::int64_t p = layout.l_ptr[k]; p < layout.l_ptr[k + 1]; ++p) {  // rows lo..hi of L21 (r x w)
      const std::int64_t b = layout.l_block[p], m = blocks.hi[b] - blocks.lo[b];
      for (std::int64_t j = 0; j < w; ++j) {
        const double* src = lu.l21(k) + j * r + blocks.lo[b];
        std::copy(src, src + m, out + layout.l_panel[k] + j * M + layout.l_row[p]);
      }
    }
  }
  for (std::size_t j = 0; j < ns; ++j)
    for (std::int64_t p = layout.u_ptr[j]; p < layout.u_ptr[j + 1]; ++p) {  // columns lo..hi of U12 (w x r)
      const std::int64_t b = layout.u_block[p], k = blocks.col[b], w = width(k);
      const double* src = lu.u12(static_cast<std::size_t>(k)) + blocks.lo[b] * w;
      std::copy(src, src + (blocks.hi[b] - blocks.lo[b]) * w, out + layout.u_off[p]);
    }
}

}  // namespace

TriSolve2D::TriSolve2D(MPI_Comm comm, const Topology& topo, const ProcessGrid2D& grid, SupernodalStructure sym,
                       const SupernodalLU* lu, const TreeShape& shape, int root)
    : comm_(comm), topo_(topo), grid_(grid), rank_(comm_.rank()), sym_(std::move(sym)) {
  require(grid_.px >= 1 && grid_.py >= 1 && grid_.size() == comm_.size(),
          "2D solve: a " + std::to_string(grid_.px) + " x " + std::to_string(grid_.py) + " grid needs " +
              std::to_string(grid_.size()) + " ranks, the communicator has " + std::to_string(comm_.size()));
  require(topo_.size() == comm_.size(), "2D solve: topology size differs from the communicator's");
  if ((rank_ == root) != (lu != nullptr))
    throw std::logic_error("2D solve: the factors must be given on the root rank, and only there");
  const std::int64_t ns = static_cast<std::int64_t>(sym_.sn_start.size()) - 1;
  blocks_ = supernode_blocks(sym_);
  layout_ = local_layout_2d(sym_, blocks_, grid_, rank_);
  diag_index_.assign(static_cast<std::size_t>(ns), -1);
  for (std::size_t d = 0; d < layout_.diag_sn.size(); ++d) diag_index_[layout_.diag_sn[d]] = static_cast<std::int64_t>(d);
  for (std::int64_t s = 0; s < ns; ++s) max_width_ = std::max(max_width_, width(s));

  values_.resize(static_cast<std::size_t>(layout_.total));
  auto transfer = [&](double* data, std::int64_t count, int peer, bool send) {
    for (std::int64_t at = 0; at < count; at += chunk) {
      const int c = static_cast<int>(std::min(chunk, count - at));
      if (send)
        check_mpi(MPI_Send(data + at, c, MPI_DOUBLE, peer, factors_tag, comm_.get()), "MPI_Send");
      else
        check_mpi(MPI_Recv(data + at, c, MPI_DOUBLE, peer, factors_tag, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv");
    }
  };
  if (rank_ == root) {
    HugeVector<double> buf;
    for (int r = 0; r < comm_.size(); ++r) {
      if (r == root) {
        pack(*lu, blocks_, layout_, values_.data());
        continue;
      }
      const LocalLayout2D theirs = local_layout_2d(sym_, blocks_, grid_, r);
      buf.resize(static_cast<std::size_t>(theirs.total));  // pack writes every entry
      pack(*lu, blocks_, theirs, buf.data());
      transfer(buf.data(), theirs.total, r, true);
    }
  } else {
    transfer(values_.data(), layout_.total, root, false);
  }
  lower_.set = triangular_solve_collectives(sym_, blocks_, grid_, false);
  upper_.set = triangular_solve_collectives(sym_, blocks_, grid_, true);
  engine_ = std::make_unique<MessageEngine>(comm_.get(), topo_, max_width_, 64, 4);
  set_tree(shape);
}

void TriSolve2D::set_tree(const TreeShape& shape) {
  plan_phase(lower_, shape, false);
  plan_phase(upper_, shape, true);
}

void TriSolve2D::plan_phase(Phase& ph, const TreeShape& shape, bool upper) const {
  const std::int64_t ns = static_cast<std::int64_t>(sym_.sn_start.size()) - 1;
  ph.plan = build_tree_plan(ph.set, rank_, shape, topo_);
  ph.arrivals = plan_arrivals(ph.plan, ph.set);
  // Every local block adds to one reduction: L(I, K) to I's, U(K, J) to K's.
  for (std::int64_t b : upper ? layout_.u_block : layout_.l_block) {
    const std::int64_t target = upper ? blocks_.col[b] : blocks_.sn[b];
    const std::int64_t i = ph.arrivals.slot_of[ns + target];
    if (i < 0) throw std::logic_error("2D solve: a local block outside this rank's reductions");
    ++ph.arrivals.waiting[i];
  }
  ph.sum_off.assign(ph.plan.index.size(), -1);
  ph.sum_size = 0;
  for (std::size_t i = 0; i < ph.plan.index.size(); ++i)
    if (ph.plan.index[i] >= ns) {
      ph.sum_off[i] = ph.sum_size;
      ph.sum_size += width(ph.plan.index[i] - ns);
    }
}

void TriSolve2D::run_phase(Phase& ph, bool upper, double* b, int nrhs) {
  const std::int64_t ns = static_cast<std::int64_t>(sym_.sn_start.size()) - 1, n = sym_.n;
  const int bcast_kind = upper ? 2 : 0, reduce_kind = bcast_kind + 1;
  engine_->set_tag(upper ? upper_tag : lower_tag);
  engine_->set_kind_of([=](std::int64_t key) { return key < ns ? bcast_kind : reduce_kind; });
  const std::vector<std::int64_t>& slot_of = ph.arrivals.slot_of;
  acc_.assign(static_cast<std::size_t>(ph.sum_size * nrhs), 0.0);
  auto sum_of = [&](std::int64_t i) { return acc_.data() + ph.sum_off[i] * nrhs; };  // w x nrhs
  std::vector<int> pending = ph.arrivals.waiting;
  stack_.clear();
  std::vector<double>& sol = sol_;  // the supernode solved last, w x nrhs
  sol.resize(static_cast<std::size_t>(max_width_ * nrhs));
  std::int64_t solved = 0;

  auto contributed = [&](std::int64_t target) {
    if (--pending[slot_of[ns + target]] == 0) stack_.push_back(target);
  };
  // This rank's blocks that use supernode k's solution x (w_k x nrhs).
  auto use = [&](std::int64_t k, const double* x) {
    const std::int64_t wk = width(k);
    if (!upper) {  // lsum(I) += L(I, K) y(K) for every local block: one product for the panel
      const std::int64_t M = layout_.l_rows[k];
      work_.resize(static_cast<std::size_t>(M * nrhs));
      multiply(M, wk, nrhs, values_.data() + layout_.l_panel[k], x, 0.0, work_.data());
      for (std::int64_t p = layout_.l_ptr[k]; p < layout_.l_ptr[k + 1]; ++p) {
        const std::int64_t blk = layout_.l_block[p], I = blocks_.sn[blk], m = blocks_.hi[blk] - blocks_.lo[blk];
        const std::int64_t wi = width(I), fi = sym_.sn_start[I];
        double* acc = sum_of(slot_of[ns + I]);
        const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[k] + blocks_.lo[blk];
        const double* part = work_.data() + layout_.l_row[p];
        for (int c = 0; c < nrhs; ++c)
          for (std::int64_t a = 0; a < m; ++a) acc[c * wi + rows[a] - fi] += part[c * M + a];
        contributed(I);
      }
    } else {
      const std::int64_t fk = sym_.sn_start[k];
      for (std::int64_t p = layout_.u_ptr[k]; p < layout_.u_ptr[k + 1]; ++p) {  // usum(K) += U(K, J) x(J)
        const std::int64_t blk = layout_.u_block[p], K = blocks_.col[blk], m = blocks_.hi[blk] - blocks_.lo[blk];
        const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[K] + blocks_.lo[blk];
        work_.resize(static_cast<std::size_t>(m * nrhs));
        for (int c = 0; c < nrhs; ++c)
          for (std::int64_t a = 0; a < m; ++a) work_[c * m + a] = x[c * wk + rows[a] - fk];
        multiply(width(K), m, nrhs, values_.data() + layout_.u_off[p], work_.data(), 1.0,
                 sum_of(slot_of[ns + K]));
        contributed(K);
      }
    }
  };
  auto forward = [&](std::int64_t k, const double* x) {
    for (int child : ph.plan.links[slot_of[k]].children) engine_->send(child, k, x, width(k) * nrhs, bcast_kind);
  };
  // Every contribution to supernode k's sum is in: pass it up, or (at the diagonal owner)
  // solve with the inverted diagonal block and broadcast the solution.
  auto fire = [&](std::int64_t k) {
    const std::int64_t i = slot_of[ns + k], w = width(k), f = sym_.sn_start[k];
    double* acc = sum_of(i);
    const int parent = ph.plan.links[i].parent;
    if (parent >= 0) {
      engine_->send(parent, ns + k, acc, w * nrhs, reduce_kind);
      return;
    }
    for (int c = 0; c < nrhs; ++c)
      for (std::int64_t a = 0; a < w; ++a) acc[c * w + a] = b[c * n + f + a] - acc[c * w + a];
    const double* inv = values_.data() + layout_.diag_off[diag_index_[k]] + (upper ? w * w : 0);
    multiply(w, w, nrhs, inv, acc, 0.0, sol.data());
    for (int c = 0; c < nrhs; ++c) std::copy(sol.data() + c * w, sol.data() + (c + 1) * w, b + c * n + f);
    ++solved;
    forward(k, sol.data());
    use(k, sol.data());
  };
  auto drain = [&] {
    while (!stack_.empty()) {
      const std::int64_t k = stack_.back();
      stack_.pop_back();
      fire(k);
    }
  };
  // Reductions with nothing to wait for start it, in solve order (the stack pops the last).
  const std::size_t nslots = ph.plan.index.size();
  for (std::size_t q = 0; q < nslots; ++q) {
    const std::size_t i = upper ? q : nslots - 1 - q;
    if (ph.plan.index[i] >= ns && pending[i] == 0) stack_.push_back(ph.plan.index[i] - ns);
  }
  drain();
  engine_->run(ph.arrivals.expected, [&](int, std::int64_t key, const double* values, std::int64_t len) {
    const std::int64_t i = key >= 0 && key < 2 * ns ? slot_of[key] : -1;
    const std::int64_t k = key < ns ? key : key - ns;
    if (i < 0 || len != width(k) * nrhs) throw std::logic_error("2D solve: unexpected message");
    if (key < ns) {
      forward(k, values);
      use(k, values);
    } else {
      double* acc = sum_of(i);
      for (std::int64_t a = 0; a < len; ++a) acc[a] += values[a];
      contributed(k);
    }
    drain();
  });
  if (solved != static_cast<std::int64_t>(layout_.diag_sn.size()))
    throw std::logic_error("2D solve: " + std::to_string(layout_.diag_sn.size() - solved) +
                           " supernodes left unsolved after all messages arrived");
}

TriSolve2D::Times TriSolve2D::solve(double* b, int nrhs) {
  require(nrhs >= 1, "2D solve: nrhs must be at least 1");
  engine_->reserve(max_width_ * nrhs);
  engine_->reset_recorded();
  check_mpi(MPI_Barrier(comm_.get()), "MPI_Barrier");
  Times t;
  double t0 = MPI_Wtime();
  run_phase(lower_, false, b, nrhs);
  double t1 = MPI_Wtime();
  run_phase(upper_, true, b, nrhs);
  double t2 = MPI_Wtime();
  if (comm_.size() > 1) {  // every rank gets the whole solution: own supernodes, summed
    const std::int64_t n = sym_.n, total = n * nrhs;
    gathered_.assign(static_cast<std::size_t>(total), 0.0);
    for (std::int32_t s : layout_.diag_sn)
      for (int c = 0; c < nrhs; ++c)
        std::copy(b + c * n + sym_.sn_start[s], b + c * n + sym_.sn_start[s + 1],
                  gathered_.data() + c * n + sym_.sn_start[s]);
    for (std::int64_t at = 0; at < total; at += chunk)
      check_mpi(MPI_Allreduce(gathered_.data() + at, b + at, static_cast<int>(std::min(chunk, total - at)), MPI_DOUBLE,
                              MPI_SUM, comm_.get()),
                "MPI_Allreduce");
  }
  t.lsolve = t1 - t0;
  t.usolve = t2 - t1;
  t.gather = MPI_Wtime() - t2;
  return t;
}

CommStats TriSolve2D::planned(int nrhs) const {
  const CommStats l = tree_stats(lower_.plan, lower_.set, topo_, nrhs);
  const CommStats u = tree_stats(upper_.plan, upper_.set, topo_, nrhs);
  CommStats s;
  s.steps = {l.steps[0], l.steps[1], u.steps[0], u.steps[1]};
  return s;
}

}  // namespace commsolve
