#include "commsolve/direct/trisolve.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/rhs_layout.hpp"
#include "commsolve/direct/structure_share.hpp"

namespace commsolve {

namespace {

constexpr std::int64_t zero_row = std::numeric_limits<std::int64_t>::min();  // no b here: starts at 0
// MPI tags: a phase's messages stay inside its grid, whose ranks share one program (tag:
// first + op index); an inter-grid step's pair of grids agrees on its step and direction.
// A grid synchronisation's: first_sync_tag + op index.
constexpr int first_phase_tag = 20, first_z_tag = 1000, first_sync_tag = 2000;

}  // namespace

TriSolve::TriSolve(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout, RhsMap rhs,
                   const SupernodalLU* lu, const SolveOptions& opts, int root)
    : comm_(comm), topo_(topo), layout_(std::move(layout)), sym_(layout_->sym()), grid_(layout_->grid()),
      forests_(layout_->forests()), blocks_(layout_->blocks()), rank_(comm_.rank()), rhs_(std::move(rhs)) {
  check();
  sym_.require_whole("distributing the serial factors");
  store_ = block_store_layout(sym_, blocks_, grid_, forests_, rank_);
  distribute_blocks(comm_.get(), root, lu, blocks_, grid_, forests_, store_);
  finish(opts);
}

TriSolve::TriSolve(MPI_Comm comm, const Topology& topo, std::shared_ptr<const SolveLayout> layout, RhsMap rhs,
                   BlockStore store, const SolveOptions& opts)
    : comm_(comm), topo_(topo), layout_(std::move(layout)), sym_(layout_->sym()), grid_(layout_->grid()),
      forests_(layout_->forests()), blocks_(layout_->blocks()), rank_(comm_.rank()), rhs_(std::move(rhs)),
      store_(std::move(store)) {
  check();
  const BlockStore expected = block_store_layout(sym_, blocks_, grid_, forests_, rank_);
  require(expected.layout.total == store_.layout.total &&
              static_cast<std::int64_t>(store_.values.size()) == store_.layout.total &&
              expected.layout.diag_sn == store_.layout.diag_sn && expected.layout.l_panel == store_.layout.l_panel &&
              expected.layout.u_off == store_.layout.u_off,
          "distributed solve: the factors given on rank " + std::to_string(rank_) +
              " are not laid out for this rank of the grid");
  finish(opts);
}

void TriSolve::check() {
  check_grid_ranks(grid_, comm_.size(), grid_name(grid_));
  require(topo_.size() == comm_.size(), "distributed solve: topology size differs from the communicator's");
  rhs_.check(sym_.n, comm_.size(), "distributed solve");
  const int q = rank_ % grid_.layer_size();
  check_share_of(sym_, grid_.px, grid_.py, q / grid_.py, q % grid_.py, "distributed solve");
}

void TriSolve::finish(const SolveOptions& opts) {
  // b's rows reach the rank solving their factor row; x leaves from it.
  const std::vector<std::int32_t> solver = column_solvers(sym_, grid_, forests_);
  b_move_ = rhs_move(rhs_.row_order, solver);
  shared_move_ = rhs_.row_order == rhs_.col_order;
  if (!shared_move_) x_move_ = rhs_move(rhs_.col_order, solver);
  engine_ = std::make_unique<MessageEngine>(comm_.get(), topo_, 1, 64, num_solve_steps);
  exec_ = std::make_unique<PhaseExecutor>(sym_, blocks_, store_, *engine_, kernels_);
  set_options(opts);
}

void TriSolve::set_options(const SolveOptions& opts) {
  layout_->check(opts);
  const SolveOptions run = effective_options(opts);
  const bool per_block = run.kernels == SolveKernels::per_block;
  require(!per_block || (threads_ == 1 && !device_),
          "distributed solve: kernels='per-block' (3d-baseline-pdgstrs's) run on one thread per rank on the CPU "
          "(threads is " + std::to_string(threads_) + ", device " + device_name_ + ")");
  const int z = grid_.z_of(rank_);
  std::vector<SolveOp> program = solve_program(run.algorithm, z, forests_.nlev, run.leaf_sync);
  std::vector<PhaseSchedule> phases(program.size());
  std::vector<ZStep> zsteps(program.size());
  std::vector<GridSync> syncs(program.size());
  const ProcessGrid2D layer = grid_.layer(z);
  const std::int64_t ns = sym_.nsuper();
  for (std::size_t i = 0; i < program.size(); ++i) {
    const SolveOp& op = program[i];
    if (op.kind == SolveOp::phase) {
      const CollectiveSet set = op_collectives(sym_, blocks_, layer, forests_, z, op);
      const std::vector<char> solve = phase_solve_mask(forests_, z, op);
      const TreePlan plan =
          phase_tree_plan(set, synchronous_collectives(set, ns, solve, op.sync), rank_, run.shape, topo_);
      phases[i] = make_phase(sym_, blocks_, store_.layout, set, plan, op.upper, solve, op.sync);
    } else if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
      syncs[i] = build_grid_sync(sym_, layer, rank_, op);
    } else {
      zsteps[i] = build_z_step(forests_, grid_, rank_, op.step, op.kind == SolveOp::z_reduce);
    }
  }
  DiagonalFactors factors;
  if (per_block) factors = diagonal_factors(sym_, store_);
  std::int64_t widest = 1;
  for (const PhaseSchedule& ph : phases)
    for (std::size_t e = 0; e < ph.key.size(); ++e) {
      const bool receives = ph.is_broadcast(static_cast<std::int64_t>(e)) ? ph.parent[e] >= 0
                                                                           : ph.child_ptr[e + 1] > ph.child_ptr[e];
      if (receives) widest = std::max(widest, ph.width[e]);
    }
  std::vector<SyncFreePhase> plans;
  std::unique_ptr<DeviceSolver> solver;
  const bool one_rank = grid_.layer_size() == 1;
  if (threads_ > 1 && !one_rank)
    for (const PhaseSchedule& ph : phases) check_threaded_phase(ph);
  if ((threads_ > 1 && one_rank) || device_) plans = plan_syncfree(program, phases);
  if (device_) solver = make_device_solver(device_name_, store_, plans);
  opts_ = opts;  // only once everything is built: a bad option leaves the solver as it was
  run_opts_ = run;
  program_ = std::move(program);
  phases_ = std::move(phases);
  zsteps_ = std::move(zsteps);
  syncs_ = std::move(syncs);
  diag_factors_ = std::move(factors);
  max_recv_width_ = widest;
  syncfree_ = std::move(plans);
  if (solver) device_ = std::move(solver);
}

void check_solve_threads(int threads) {
  require(threads >= 1, "distributed solve: threads must be at least 1, got " + std::to_string(threads));
}

void check_device_grid(const ProcessGrid3D& grid) {
  require(grid.px * grid.py == 1, "distributed solve: a device (the sync-free kernel) needs a grid whose layers are "
                                  "one rank (1x1xPz); this one is " + std::to_string(grid.px) + "x" +
                                  std::to_string(grid.py) + "x" + std::to_string(grid.pz) + ": use grid 1x1x" +
                                  std::to_string(grid.size()));
}

std::vector<SyncFreePhase> TriSolve::plan_syncfree(const std::vector<SolveOp>& program,
                                                   const std::vector<PhaseSchedule>& phases) const {
  std::vector<SyncFreePhase> plans(program.size());
  for (std::size_t i = 0; i < program.size(); ++i)
    if (program[i].kind == SolveOp::phase) plans[i] = make_syncfree_phase(sym_, blocks_, store_, phases[i]);
  return plans;
}

void TriSolve::set_threads(int threads, ScheduleChaos chaos) {
  check_solve_threads(threads);
  require(threads == 1 || run_opts_.kernels != SolveKernels::per_block,
          "distributed solve: kernels='per-block' (3d-baseline-pdgstrs's) run on one thread per rank");
  const bool one_rank = grid_.layer_size() == 1;
  if (threads > 1 && !one_rank)
    for (const PhaseSchedule& ph : phases_) check_threaded_phase(ph);
  // Everything new is built first: a failure leaves the solver as it was.
  std::unique_ptr<ThreadTeam> team;
  if (threads != threads_ && threads > 1) team = std::make_unique<ThreadTeam>(threads);
  std::vector<SyncFreePhase> plans;
  if (threads > 1 && one_rank && syncfree_.empty()) plans = plan_syncfree(program_, phases_);
  if (threads > 1 && !one_rank && !probe_engine_)  // collective: every rank of the grid sets the same threads
    probe_engine_ = std::make_unique<MessageEngine>(comm_.get(), topo_, 1, 0, num_solve_steps);
  if (threads != threads_) team_ = std::move(team);
  if (!plans.empty()) syncfree_ = std::move(plans);
  if (threads == 1 && !device_) syncfree_.clear();
  threads_ = threads;
  chaos_ = chaos;
}

void TriSolve::to_device(const std::string& device) {
  if (device == "cpu") {
    device_.reset();
    device_name_ = device;
    if (threads_ == 1) syncfree_.clear();
    return;
  }
  check_device_grid(grid_);
  require(run_opts_.kernels != SolveKernels::per_block,
          "distributed solve: kernels='per-block' (3d-baseline-pdgstrs's) run on the CPU");
  std::vector<SyncFreePhase> plans = syncfree_.empty() ? plan_syncfree(program_, phases_) : syncfree_;
  std::unique_ptr<DeviceSolver> solver = make_device_solver(device, store_, plans);  // may throw: nothing changed yet
  syncfree_ = std::move(plans);
  device_ = std::move(solver);
  device_name_ = device;
}

// The program's phases and inter-grid steps, each phase message-driven, sync-free on this
// rank's threads or on its device (the solve vector uploaded before a run of phases and
// downloaded before an inter-grid step and at the end, within the phases' times).
void TriSolve::run_phases(int nrhs, Times& t) {
  bool on_device = false;
  for (std::size_t i = 0; i < program_.size(); ++i) {
    const SolveOp& op = program_[i];
    const double ts = MPI_Wtime();
    if (op.kind == SolveOp::phase) {
      if (device_) {
        if (!on_device) device_->upload(sol_.data(), store_.sol_rows, nrhs);
        on_device = true;
        const double tk = MPI_Wtime();
        t.device_copy += tk - ts;
        device_->run(i, nrhs);
        if (i + 1 == program_.size()) {
          const double td = MPI_Wtime();
          device_->download(sol_.data(), store_.sol_rows, nrhs);
          t.device_copy += MPI_Wtime() - td;
        }
      } else if (threads_ > 1 && grid_.layer_size() == 1) {
        run_syncfree(syncfree_[i], store_.values.data(), sol_.data(), nrhs, *team_, kernels_, chaos_);
      } else if (threads_ > 1) {
        run_threaded_phase(sym_, blocks_, store_, phases_[i], *probe_engine_, kernels_, *team_, sol_.data(), nrhs,
                           first_phase_tag + static_cast<int>(i));
      } else {
        exec_->run(phases_[i], sol_.data(), nrhs, first_phase_tag + static_cast<int>(i),
                   run_opts_.kernels == SolveKernels::per_block ? &diag_factors_ : nullptr);
      }
      (op.upper ? t.u_solve : t.l_solve) += MPI_Wtime() - ts;
    } else if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
      // the counters of the leaf phase that follows (a barrier carries none)
      std::vector<std::int32_t> counters = op.kind == SolveOp::counters
                                               ? leaf_counters(phases_[i + 1], syncs_[i], grid_.px)
                                               : std::vector<std::int32_t>{};
      run_grid_sync(comm_.get(), syncs_[i], counters, first_sync_tag + static_cast<int>(i), topo_, rank_, recorded_);
      if (op.kind == SolveOp::counters && run_opts_.shape.name == "flat")  // the sums' senders, as pdgstrs3d reads them
        check_leaf_counters(phases_[i + 1], counters, grid_.px);
      (op.upper ? t.u_solve : t.l_solve) += MPI_Wtime() - ts;
    } else {
      double td = ts;
      if (on_device) {  // the last phase's result back to the host, in that phase's time
        device_->download(sol_.data(), store_.sol_rows, nrhs);
        on_device = false;
        td = MPI_Wtime();
        (program_[i - 1].upper ? t.u_solve : t.l_solve) += td - ts;
        t.device_copy += td - ts;
      }
      const bool reduce = op.kind == SolveOp::z_reduce;
      run_z_step(comm_.get(), zsteps_[i], reduce, run_opts_.packed_z, sym_, store_, sol_.data(), nrhs,
                 first_z_tag + 2 * op.step + (reduce ? 0 : 1), topo_, rank_, recorded_);
      t.z_comm += MPI_Wtime() - td;
    }
  }
}

TriSolve::RhsMove TriSolve::rhs_move(const std::vector<std::int32_t>& order,
                                     const std::vector<std::int32_t>& solver) const {
  const HaloPattern pattern = rhs_pattern(rank_, rhs_.dist, order, solver);
  std::unordered_map<std::int64_t, std::int64_t> halo_of;
  for (std::size_t h = 0; h < pattern.halo_globals.size(); ++h) halo_of[pattern.halo_globals[h]] = static_cast<std::int64_t>(h);
  RhsMove m;
  m.plan = standard_plan(pattern);
  m.src.assign(static_cast<std::size_t>(store_.sol_rows), zero_row);
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    for (std::int64_t j = sym_.sn_start[k]; j < sym_.sn_start[k + 1]; ++j) {
      if (solver[j] != rank_) continue;
      const std::int64_t row = store_.sol_off[d] + j - sym_.sn_start[k], g = order[j];
      m.src[row] = rhs_.dist.owner(g) == rank_ ? rhs_.dist.local_index(g) : -1 - halo_of.at(g);
    }
  }
  return m;
}

// Collective when it builds a new executor (every rank solves with the same nrhs): one per
// nrhs for the last few used, so that alternating nrhs does not rebuild them.
HaloExecutor& TriSolve::executor(RhsMove& m, int nrhs) {
  for (auto& [k, e] : m.execs)
    if (k == nrhs) return *e;
  if (m.execs.size() >= 4) m.execs.erase(m.execs.begin());
  m.execs.emplace_back(nrhs, std::make_unique<HaloExecutor>(m.plan, topo_, comm_.get(), nrhs));
  return *m.execs.back().second;
}

TriSolve::Times TriSolve::solve(const double* b, double* x, int nrhs) {
  require(nrhs >= 1, "distributed solve: nrhs must be at least 1");
  HaloExecutor& bx = executor(b_move_, nrhs);
  HaloExecutor& xx = executor(x_move(), nrhs);
  // Receive buffers for the widest message this rank can get; fewer of them posted when
  // they are large (at most about 32 MiB in all, at least 4 posted).
  const std::int64_t max_values = max_recv_width_ * nrhs;
  const std::int64_t fit = (std::int64_t{32} << 20) / (8 * (max_values + 1));
  engine_->reserve(max_values, static_cast<int>(std::clamp<std::int64_t>(fit, 4, 64)));
  MessageEngine& phase_engine = threads_ > 1 && grid_.layer_size() > 1 ? *probe_engine_ : *engine_;
  phase_engine.reset_recorded();
  bx.reset_recorded();
  xx.reset_recorded();
  recorded_ = CommStats{std::vector<StepStats>(num_solve_steps)};
  const std::int64_t n_local = local_rows();
  check_mpi(MPI_Barrier(comm_.get()), "MPI_Barrier");
  Times t;
  const double t0 = MPI_Wtime();

  bx.begin(b);
  const double* halo = bx.end();
  sol_.assign(static_cast<std::size_t>(store_.sol_rows * nrhs), 0.0);
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    const std::int64_t w = sym_.sn_start[k + 1] - sym_.sn_start[k], off = store_.sol_off[d];
    double* out = sol_.data() + off * nrhs;
    for (std::int64_t a = 0; a < w; ++a) {
      const std::int64_t src = b_move_.src[off + a];
      if (src == zero_row) continue;
      const double* in = src >= 0 ? b + src * nrhs : halo + (-1 - src) * nrhs;
      for (int c = 0; c < nrhs; ++c) out[c * w + a] = in[c];
    }
  }
  const double t1 = MPI_Wtime();

  run_phases(nrhs, t);
  const double t2 = MPI_Wtime();

  // x goes back by the same plan in reverse: own rows directly, the others' through the halo.
  std::fill(x, x + n_local * nrhs, 0.0);
  const std::vector<std::int64_t>& dst = x_move().src;
  double* hx = xx.halo();
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    const std::int64_t w = sym_.sn_start[k + 1] - sym_.sn_start[k], off = store_.sol_off[d];
    const double* in = sol_.data() + off * nrhs;
    for (std::int64_t a = 0; a < w; ++a) {
      const std::int64_t src = dst[off + a];
      if (src == zero_row) continue;
      double* to = src >= 0 ? x + src * nrhs : hx + (-1 - src) * nrhs;
      for (int c = 0; c < nrhs; ++c) to[c] = in[c * w + a];
    }
  }
  xx.reverse_begin();
  xx.reverse_end(x);
  const double t3 = MPI_Wtime();

  const CommStats& engine = phase_engine.recorded();
  for (int s : {l_broadcast, l_reduce, u_broadcast, u_reduce}) recorded_.steps[s] = engine.steps[s];
  recorded_.steps[b_to_diagonal] = bx.recorded_forward().steps[0];
  recorded_.steps[x_from_diagonal] = xx.recorded_reverse().steps[0];
  t.redistribute_b = t1 - t0;
  t.redistribute_x = t3 - t2;
  t.total = t3 - t0;
  return t;
}

CommStats TriSolve::planned(int nrhs) const {
  CommStats s{std::vector<StepStats>(num_solve_steps)};
  for (std::size_t i = 0; i < program_.size(); ++i) {
    const SolveOp& op = program_[i];
    if (op.kind == SolveOp::phase) {
      add_phase_stats(s, phases_[i], rank_, topo_, nrhs);
    } else if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
      add_sync_stats(s, syncs_[i], topo_, rank_);
    } else {
      add_z_stats(s, zsteps_[i], sym_, topo_, rank_, op.kind == SolveOp::z_reduce, run_opts_.packed_z, nrhs);
    }
  }
  s.steps[b_to_diagonal] = plan_stats(b_move_.plan, topo_, 8 * nrhs).steps[0];
  const CommPlan& xp = shared_move_ ? b_move_.plan : x_move_.plan;
  s.steps[x_from_diagonal] = plan_stats(xp, topo_, 8 * nrhs).reversed().steps[0];
  return s;
}

}  // namespace commsolve
