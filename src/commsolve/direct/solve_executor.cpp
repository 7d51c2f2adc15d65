#include "direct/solve_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace commsolve {

namespace {

constexpr std::int64_t small_product = 1 << 16;  // block entries up to which we skip BLAS

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

}  // namespace

void CpuKernels::diagonal(std::int64_t w, int nrhs, const double* inv, const double* rhs, double* sol) {
  multiply(w, w, nrhs, inv, rhs, 0.0, sol);
}

void CpuKernels::lower_panel(std::int64_t m, std::int64_t w, int nrhs, const double* panel, const double* x,
                             double* out) {
  multiply(m, w, nrhs, panel, x, 0.0, out);
}

void CpuKernels::upper_block(std::int64_t w, std::int64_t m, int nrhs, const double* U, const double* x, double* acc) {
  multiply(w, m, nrhs, U, x, 1.0, acc);
}

void PhaseExecutor::run(const PhaseSchedule& ph, double* sol, int nrhs, int tag) {
  const std::int64_t ns = static_cast<std::int64_t>(sym_.sn_start.size()) - 1;
  const bool upper = ph.upper;
  const LocalLayout2D& layout = store_.layout;
  const int bcast_kind = upper ? u_broadcast : l_broadcast, reduce_kind = upper ? u_reduce : l_reduce;
  engine_.set_tag(tag);
  engine_.set_kind_of([=](std::int64_t key) { return key < ns ? bcast_kind : reduce_kind; });
  const std::vector<std::int32_t>& slot = ph.slot;
  acc_.assign(static_cast<std::size_t>(ph.sum_size * nrhs), 0.0);
  auto sum_of = [&](std::int64_t i) { return acc_.data() + ph.sum_off[i] * nrhs; };  // w x nrhs
  auto sol_of = [&](std::int64_t k) { return sol + store_.sol_off[store_.diag_index[k]] * nrhs; };
  pending_ = ph.arrivals.waiting;
  stack_.clear();
  std::int64_t solved = 0;

  auto contributed = [&](std::int64_t target) {
    if (--pending_[slot[ns + target]] == 0) stack_.push_back(target);
  };
  // This rank's blocks of the phase that use supernode k's solution x (w_k x nrhs).
  auto use = [&](std::int64_t k, const double* x) {
    const std::int64_t wk = width(k);
    if (!upper) {  // lsum(I) += L(I, K) y(K) for every local block: one product for the panel
      const std::int64_t M = layout.l_rows[k];
      if (M == 0) return;
      work_.resize(static_cast<std::size_t>(M * nrhs));
      kernels_.lower_panel(M, wk, nrhs, store_.values.data() + layout.l_panel[k], x, work_.data());
      for (std::int64_t p = layout.l_ptr[k]; p < layout.l_ptr[k + 1]; ++p) {
        const std::int64_t blk = layout.l_block[p], I = blocks_.sn[blk], m = blocks_.hi[blk] - blocks_.lo[blk];
        const std::int64_t wi = width(I), fi = sym_.sn_start[I];
        double* acc = sum_of(slot[ns + I]);
        const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[k] + blocks_.lo[blk];
        const double* part = work_.data() + layout.l_row[p];
        for (int c = 0; c < nrhs; ++c)
          for (std::int64_t a = 0; a < m; ++a) acc[c * wi + rows[a] - fi] += part[c * M + a];
        contributed(I);
      }
    } else {
      const std::int64_t fk = sym_.sn_start[k];
      for (std::int64_t q = ph.u_ptr[k]; q < ph.u_ptr[k + 1]; ++q) {  // usum(K) += U(K, J) x(J)
        const std::int64_t p = ph.u_pos[q];
        const std::int64_t blk = layout.u_block[p], K = blocks_.col[blk], m = blocks_.hi[blk] - blocks_.lo[blk];
        const std::int32_t* rows = sym_.rows.data() + sym_.rows_ptr[K] + blocks_.lo[blk];
        xg_.resize(static_cast<std::size_t>(m * nrhs));
        for (int c = 0; c < nrhs; ++c)
          for (std::int64_t a = 0; a < m; ++a) xg_[c * m + a] = x[c * wk + rows[a] - fk];
        kernels_.upper_block(width(K), m, nrhs, store_.values.data() + layout.u_off[p], xg_.data(),
                             sum_of(slot[ns + K]));
        contributed(K);
      }
    }
  };
  auto forward = [&](std::int64_t k, const double* x) {
    for (int child : ph.plan.links[slot[k]].children) engine_.send(child, k, x, width(k) * nrhs, bcast_kind);
  };
  // Every contribution to supernode k's sum is in: pass it up, or (at the diagonal owner)
  // solve with the inverted diagonal block and broadcast the solution, or (a context
  // supernode of the L phase) keep the partial sum for a later phase or grid.
  auto fire = [&](std::int64_t k) {
    const std::int64_t i = slot[ns + k], w = width(k);
    double* acc = sum_of(i);
    const int parent = ph.plan.links[i].parent;
    if (parent >= 0) {
      engine_.send(parent, ns + k, acc, w * nrhs, reduce_kind);
      return;
    }
    double* x = sol_of(k);
    for (std::int64_t a = 0; a < w * nrhs; ++a) x[a] -= acc[a];
    if (!ph.solves[i]) return;
    const double* inv = store_.values.data() + layout.diag_off[store_.diag_index[k]] + (upper ? w * w : 0);
    sol_tmp_.resize(static_cast<std::size_t>(w * nrhs));
    kernels_.diagonal(w, nrhs, inv, x, sol_tmp_.data());
    std::copy(sol_tmp_.begin(), sol_tmp_.begin() + w * nrhs, x);
    ++solved;
    forward(k, x);
    use(k, x);
  };
  auto drain = [&] {
    while (!stack_.empty()) {
      const std::int64_t k = stack_.back();
      stack_.pop_back();
      fire(k);
    }
  };
  // Reductions with nothing to wait for start it, in solve order (the stack pops the last);
  // in a U phase so do the context supernodes whose solution this rank already holds.
  const std::size_t nslots = ph.plan.index.size();
  for (std::size_t q = 0; q < nslots; ++q) {
    const std::size_t i = upper ? q : nslots - 1 - q;
    const std::int64_t key = ph.set.id[ph.plan.index[i]] - (upper ? 2 * ns : 0);
    if (key >= ns && pending_[i] == 0) stack_.push_back(key - ns);
  }
  for (std::int32_t j : ph.starts) {
    forward(j, sol_of(j));
    use(j, sol_of(j));
  }
  drain();
  engine_.run(ph.arrivals.expected, [&](int, std::int64_t key, const double* values, std::int64_t len) {
    const std::int64_t i = key >= 0 && key < 2 * ns ? slot[key] : -1;
    const std::int64_t k = key < ns ? key : key - ns;
    if (i < 0 || len != width(k) * nrhs) throw std::logic_error("solve phase: unexpected message");
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
  if (solved != ph.solved_here)
    throw std::logic_error("solve phase: " + std::to_string(ph.solved_here - solved) +
                           " supernodes left unsolved after all messages arrived");
}

void run_z_step(MPI_Comm comm, const ZStep& st, bool reduce, bool packed, const SupernodalStructure& sym,
                const BlockStore& store, double* sol, int nrhs, int tag, const Topology& topo, int rank,
                CommStats& recorded) {
  if (st.peer < 0 || st.sn.empty()) return;
  StepStats& rec = recorded.steps[reduce ? z_reduce : z_broadcast];
  const Locality where = locality(topo, rank, st.peer);
  auto entry = [&](std::int32_t k) {
    return std::make_pair(sol + store.sol_off[store.diag_index[k]] * nrhs,
                          (sym.sn_start[k + 1] - sym.sn_start[k]) * nrhs);
  };
  auto count_recv = [&](const MPI_Status& s) {
    int bytes = 0;
    check_mpi(MPI_Get_count(&s, MPI_BYTE, &bytes), "MPI_Get_count");
    rec.add_recv(locality(topo, rank, s.MPI_SOURCE), bytes);
  };
  auto receive = [&](double* buf, std::int64_t n) {
    MPI_Status s;
    check_mpi(MPI_Recv(buf, static_cast<int>(n), MPI_DOUBLE, st.peer, tag, comm, &s), "MPI_Recv");
    count_recv(s);
  };
  auto merge = [&](double* to, const double* from, std::int64_t n) {
    if (reduce)
      for (std::int64_t a = 0; a < n; ++a) to[a] += from[a];
    else
      std::copy(from, from + n, to);
  };
  std::vector<double> buf;
  if (packed) {
    for (std::int32_t k : st.sn) {
      const auto [x, n] = entry(k);
      if (st.send) buf.insert(buf.end(), x, x + n);
      else buf.resize(buf.size() + static_cast<std::size_t>(n));
    }
    if (st.send) {
      check_mpi(MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_DOUBLE, st.peer, tag, comm), "MPI_Send");
      rec.add_send(where, 8 * static_cast<std::int64_t>(buf.size()));
      return;
    }
    receive(buf.data(), static_cast<std::int64_t>(buf.size()));
    std::int64_t at = 0;
    for (std::int32_t k : st.sn) {
      const auto [x, n] = entry(k);
      merge(x, buf.data() + at, n);
      at += n;
    }
    return;
  }
  for (std::int32_t k : st.sn) {  // MPI keeps the order of messages between a pair
    const auto [x, n] = entry(k);
    if (st.send) {
      check_mpi(MPI_Send(x, static_cast<int>(n), MPI_DOUBLE, st.peer, tag, comm), "MPI_Send");
      rec.add_send(where, 8 * n);
    } else {
      buf.resize(static_cast<std::size_t>(n));
      receive(buf.data(), n);
      merge(x, buf.data(), n);
    }
  }
}

}  // namespace commsolve
