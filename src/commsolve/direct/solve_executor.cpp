#include "commsolve/direct/solve_executor.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/phase_machine.hpp"

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

void set_phase_engine(MessageEngine& engine, const PhaseSchedule& ph, int tag) {
  const std::int64_t ns = ph.ns;
  const int bcast_kind = ph.upper ? u_broadcast : l_broadcast, reduce_kind = ph.upper ? u_reduce : l_reduce;
  engine.set_tag(tag);
  engine.set_kind_of([=](std::int64_t key) { return key < ns ? bcast_kind : reduce_kind; });
}

void add_lower_rows(const SupernodalStructure& sym, const SupernodeBlocks& blocks, std::int64_t blk,
                    const double* part, std::int64_t M, double* acc, int nrhs) {
  const std::int64_t K = blocks.col[blk], I = blocks.sn[blk], m = blocks.hi[blk] - blocks.lo[blk];
  const std::int64_t wi = sym.sn_start[I + 1] - sym.sn_start[I], fi = sym.sn_start[I];
  const std::int32_t* rows = sym.rows.data() + sym.rows_ptr[K] + blocks.lo[blk];
  for (int c = 0; c < nrhs; ++c)
    for (std::int64_t a = 0; a < m; ++a) acc[c * wi + rows[a] - fi] += part[c * M + a];
}

std::int64_t gather_upper_rows(const SupernodalStructure& sym, const SupernodeBlocks& blocks, std::int64_t blk,
                               const double* x, int nrhs, std::vector<double>& xg) {
  const std::int64_t K = blocks.col[blk], J = blocks.sn[blk], m = blocks.hi[blk] - blocks.lo[blk];
  const std::int64_t wj = sym.sn_start[J + 1] - sym.sn_start[J], fj = sym.sn_start[J];
  const std::int32_t* rows = sym.rows.data() + sym.rows_ptr[K] + blocks.lo[blk];
  xg.resize(static_cast<std::size_t>(m * nrhs));
  for (int c = 0; c < nrhs; ++c)
    for (std::int64_t a = 0; a < m; ++a) xg[c * m + a] = x[c * wj + rows[a] - fj];
  return m;
}

void settle_solution(BlockKernels& kernels, std::int64_t w, int nrhs, const double* acc, const double* inv, double* x,
                     std::vector<double>& tmp) {
  if (acc != nullptr)
    for (std::int64_t a = 0; a < w * nrhs; ++a) x[a] -= acc[a];
  if (inv == nullptr) return;
  tmp.resize(static_cast<std::size_t>(w * nrhs));
  kernels.diagonal(w, nrhs, inv, x, tmp.data());
  std::copy(tmp.begin(), tmp.end(), x);
}

DiagonalFactors diagonal_factors(const SupernodalStructure& sym, const BlockStore& store) {
  const LocalLayout2D& layout = store.layout;
  DiagonalFactors f;
  f.off.reserve(layout.diag_sn.size());
  std::int64_t total = 0;
  for (std::int32_t k : layout.diag_sn) {
    f.off.push_back(total);
    total += (sym.sn_start[k + 1] - sym.sn_start[k]) * (sym.sn_start[k + 1] - sym.sn_start[k]);
  }
  f.lu.resize(static_cast<std::size_t>(total));
  std::vector<double> l, u;
  for (std::size_t d = 0; d < layout.diag_sn.size(); ++d) {
    const std::int64_t w = sym.sn_start[layout.diag_sn[d] + 1] - sym.sn_start[layout.diag_sn[d]];
    const double* inv = store.values.data() + layout.diag_off[d];
    l.assign(inv, inv + w * w);
    u.assign(inv + w * w, inv + 2 * w * w);
    invert_triangles(w, l.data(), u.data());  // the inverses' inverses: L11 and U11
    double* out = f.lu.data() + f.off[d];
    for (std::int64_t j = 0; j < w; ++j)
      for (std::int64_t i = 0; i < w; ++i) out[j * w + i] = i > j ? l[j * w + i] : u[j * w + i];
  }
  return f;
}

namespace {

// The numbers of a phase on this rank, for the PhaseMachine: its partial sums, the solve
// vector, the factors, the message engine.
class NumericBackend {
 public:
  NumericBackend(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                 const PhaseSchedule& ph, MessageEngine& engine, BlockKernels& kernels, double* sol, int nrhs,
                 std::vector<double>& acc, std::vector<double>& work, std::vector<double>& xg, std::vector<double>& tmp,
                 std::vector<double>& packed, const DiagonalFactors* per_block)
      : sym_(sym), blocks_(blocks), store_(store), layout_(store.layout), ph_(ph), engine_(engine),
        kernels_(kernels), sol_(sol), nrhs_(nrhs), acc_(acc), work_(work), xg_(xg), tmp_(tmp), packed_(packed),
        per_block_(per_block) {
    acc_.assign(static_cast<std::size_t>(ph.sum_size * nrhs), 0.0);
  }

  void send(int dest, std::int64_t key, const double* x, std::int64_t n, bool broadcast) {
    const int kind = ph_.upper ? (broadcast ? u_broadcast : u_reduce) : (broadcast ? l_broadcast : l_reduce);
    engine_.send(dest, key, x, n * nrhs_, kind);
  }
  const double* lower_panel(std::int32_t col, const double* x) {
    col_ = col;
    x_ = x;
    if (per_block_ != nullptr) return nullptr;  // each block's product in scatter
    const std::int64_t M = layout_.l_rows[col];
    work_.resize(static_cast<std::size_t>(M * nrhs_));
    kernels_.lower_panel(M, width(layout_.l_col[col]), nrhs_, store_.values.data() + layout_.l_panel[col], x,
                         work_.data());
    return work_.data();
  }
  // L(I, K)'s rows of the panel product, added to I's partial sum.
  void scatter(std::int64_t p, std::int32_t e, const double* part) {
    if (per_block_ != nullptr) {  // this block's rows of the panel, one dgemm (lda: the panel's rows)
      const std::int64_t blk = layout_.l_block[p], m = blocks_.hi[blk] - blocks_.lo[blk], M = layout_.l_rows[col_];
      const std::int64_t w = width(layout_.l_col[col_]);
      work_.resize(static_cast<std::size_t>(m * nrhs_));
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), nrhs_, static_cast<int>(w), 1.0,
                  store_.values.data() + layout_.l_panel[col_] + layout_.l_row[p], static_cast<int>(M), x_,
                  static_cast<int>(w), 0.0, work_.data(), static_cast<int>(m));
      add_lower_rows(sym_, blocks_, blk, work_.data(), m, sum_of(e), nrhs_);
      return;
    }
    add_lower_rows(sym_, blocks_, layout_.l_block[p], part + layout_.l_row[p], layout_.l_rows[col_], sum_of(e), nrhs_);
  }
  // usum(K) += U(K, J) x(J), with the rows of x(J) the block reads.
  void upper_block(std::int64_t p, std::int32_t e, const double* x) {
    const std::int64_t blk = layout_.u_block[p];
    const std::int64_t m = gather_upper_rows(sym_, blocks_, blk, x, nrhs_, xg_);
    if (per_block_ != nullptr) {  // packed into a buffer first (dpackUblock), then one dgemm
      const std::int64_t w = width(blocks_.col[blk]);
      const double* U = store_.values.data() + layout_.u_off[p];
      packed_.assign(U, U + w * m);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(w), nrhs_, static_cast<int>(m), 1.0,
                  packed_.data(), static_cast<int>(w), xg_.data(), static_cast<int>(m), 1.0, sum_of(e),
                  static_cast<int>(w));
      return;
    }
    kernels_.upper_block(width(blocks_.col[blk]), m, nrhs_, store_.values.data() + layout_.u_off[p], xg_.data(),
                         sum_of(e));
  }
  void add_message(std::int32_t e, const double* values, std::int64_t n) {
    double* acc = sum_of(e);
    for (std::int64_t a = 0; a < n; ++a) acc[a] += values[a];
  }
  // At the diagonal owner: rhs -= sum, then (a supernode this phase solves) x = inv * rhs.
  const double* settle(std::int32_t e) {
    const std::int32_t d = ph_.diag[e];
    const std::int64_t k = store_.layout.diag_sn[d], w = width(k);
    double* x = sol_ + store_.sol_off[d] * nrhs_;
    if (per_block_ != nullptr) {  // x -= sum, then dtrsm with L11 or U11
      settle_solution(kernels_, w, nrhs_, sum_of(e), nullptr, x, tmp_);
      if (ph_.solves[e])
        cblas_dtrsm(CblasColMajor, CblasLeft, ph_.upper ? CblasUpper : CblasLower, CblasNoTrans,
                    ph_.upper ? CblasNonUnit : CblasUnit, static_cast<int>(w), nrhs_, 1.0,
                    per_block_->lu.data() + per_block_->off[d], static_cast<int>(w), x, static_cast<int>(w));
      return x;
    }
    const double* inv = store_.values.data() + layout_.diag_off[d] + (ph_.upper ? w * w : 0);
    settle_solution(kernels_, w, nrhs_, sum_of(e), ph_.solves[e] ? inv : nullptr, x, tmp_);
    return x;
  }
  const double* known(std::int32_t e) {
    return sol_ + store_.sol_off[store_.diag_index[ph_.supernode(e)]] * nrhs_;
  }
  const double* sum(std::int32_t e) { return sum_of(e); }

 private:
  std::int64_t width(std::int64_t s) const { return sym_.sn_start[s + 1] - sym_.sn_start[s]; }
  double* sum_of(std::int32_t e) { return acc_.data() + ph_.sum_off[e] * nrhs_; }

  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  const BlockStore& store_;
  const LocalLayout2D& layout_;
  const PhaseSchedule& ph_;
  MessageEngine& engine_;
  BlockKernels& kernels_;
  double* sol_;
  int nrhs_;
  std::vector<double>& acc_;
  std::vector<double>& work_;
  std::vector<double>& xg_;
  std::vector<double>& tmp_;
  std::vector<double>& packed_;
  const DiagonalFactors* per_block_;
  std::int32_t col_ = -1;     // the local column of the last panel product
  const double* x_ = nullptr;  // and the solution it multiplies
};

}  // namespace

void PhaseExecutor::run(const PhaseSchedule& ph, double* sol, int nrhs, int tag, const DiagonalFactors* per_block) {
  set_phase_engine(engine_, ph, tag);
  NumericBackend backend(sym_, blocks_, store_, ph, engine_, kernels_, sol, nrhs, acc_, work_, xg_, sol_tmp_, packed_,
                         per_block);
  PhaseMachine<NumericBackend> machine(ph, store_.layout, backend);
  machine.start();
  engine_.run(ph.expected, [&](int, std::int64_t key, const double* values, std::int64_t len) {
    machine.arrive(key, values, len, nrhs);
  });
  if (machine.solved() != ph.solved_here || !machine.finished())
    throw std::logic_error("solve phase: " + std::to_string(ph.solved_here - machine.solved()) +
                           " supernodes left unsolved after all messages arrived" +
                           (machine.finished() ? "" : ", its synchronous part unfinished"));
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

void run_grid_sync(MPI_Comm comm, const GridSync& gs, std::vector<std::int32_t>& counters, int tag,
                   const Topology& topo, int rank, CommStats& recorded) {
  const int n = static_cast<int>(gs.bytes / 4);
  require(static_cast<int>(counters.size()) == n, "grid synchronisation: counters of the wrong size");
  StepStats& rec = recorded.steps[grid_sync];
  std::vector<std::int32_t> in(static_cast<std::size_t>(n));
  for (std::size_t j = 0; j < gs.steps.size(); ++j) {
    const GridSync::Exchange& x = gs.steps[j];
    const Locality where = locality(topo, rank, x.peer);
    if (x.send && x.recv)
      check_mpi(MPI_Sendrecv(counters.data(), n, MPI_INT32_T, x.peer, tag, in.data(), n, MPI_INT32_T, x.peer, tag, comm,
                             MPI_STATUS_IGNORE), "MPI_Sendrecv");
    else if (x.send)
      check_mpi(MPI_Send(counters.data(), n, MPI_INT32_T, x.peer, tag, comm), "MPI_Send");
    else
      check_mpi(MPI_Recv(in.data(), n, MPI_INT32_T, x.peer, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    if (x.send) rec.add_send(where, gs.bytes);
    if (!x.recv) continue;
    rec.add_recv(where, gs.bytes);
    // a lone receive after the exchanges brings the result back; any other adds a part
    const bool result = !x.send && j > 0;
    for (int a = 0; a < n; ++a) counters[a] = result ? in[a] : counters[a] + in[a];
  }
}

std::vector<std::int32_t> leaf_counters(const PhaseSchedule& ph, const GridSync& gs, int px) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(gs.bytes / 4), 0);
  for (std::size_t e = 0; e < ph.key.size(); ++e) {
    const auto i = static_cast<std::int64_t>(e);
    if (ph.is_broadcast(i) || ph.parent[e] < 0 || ph.gated[e]) continue;
    const std::int64_t lk = ph.supernode(i) / px;
    if (lk < static_cast<std::int64_t>(out.size())) out[static_cast<std::size_t>(lk)] = 1;
  }
  return out;
}

void check_leaf_counters(const PhaseSchedule& ph, const std::vector<std::int32_t>& counters, int px) {
  for (std::size_t e = 0; e < ph.key.size(); ++e) {
    const auto i = static_cast<std::int64_t>(e);
    if (ph.is_broadcast(i) || ph.parent[e] >= 0 || ph.gated[e]) continue;
    const std::int64_t k = ph.supernode(i), lk = k / px, children = ph.child_ptr[e + 1] - ph.child_ptr[e];
    if (lk >= static_cast<std::int64_t>(counters.size()) || counters[static_cast<std::size_t>(lk)] != children)
      throw std::logic_error("leaf synchronisation: supernode " + std::to_string(k) + " expects " +
                             std::to_string(children) + " partial sums, the counters say " +
                             (lk < static_cast<std::int64_t>(counters.size())
                                  ? std::to_string(counters[static_cast<std::size_t>(lk)])
                                  : std::string("nothing")));
  }
}

}  // namespace commsolve
