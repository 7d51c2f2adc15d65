#include "direct/trisolve.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "direct/rhs_layout.hpp"

namespace commsolve {

namespace {

constexpr std::int64_t zero_row = std::numeric_limits<std::int64_t>::min();  // no b here: starts at 0
// MPI tags: a phase's messages stay inside its grid, whose ranks share one program (tag:
// first + op index); an inter-grid step's pair of grids agrees on its step and direction.
constexpr int first_phase_tag = 20, first_z_tag = 1000;

}  // namespace

TriSolve::TriSolve(MPI_Comm comm, const Topology& topo, const ProcessGrid3D& grid, SupernodalStructure sym,
                   ForestPartition forests, std::vector<std::int32_t> perm, Distribution dist,
                   const SupernodalLU* lu, const SolveOptions& opts, int root)
    : comm_(comm), topo_(topo), grid_(grid), rank_(comm_.rank()), sym_(std::move(sym)), forests_(std::move(forests)),
      dist_(std::move(dist)) {
  check_grid_3d(grid_);
  const std::string g = std::to_string(grid_.px) + "x" + std::to_string(grid_.py) + "x" + std::to_string(grid_.pz);
  require(grid_.size() == comm_.size(), "distributed solve: a " + g + " grid needs " + std::to_string(grid_.size()) +
                                            " ranks, the communicator has " + std::to_string(comm_.size()));
  require(topo_.size() == comm_.size(), "distributed solve: topology size differs from the communicator's");
  require(forests_.pz == grid_.pz, "distributed solve: forests for Pz = " + std::to_string(forests_.pz) + ", grid " + g);
  require(dist_.nranks() == comm_.size() && dist_.global_size() == sym_.n,
          "distributed solve: the row distribution covers " + std::to_string(dist_.global_size()) + " rows on " +
              std::to_string(dist_.nranks()) + " ranks; need " + std::to_string(sym_.n) + " on " +
              std::to_string(comm_.size()));
  require(static_cast<std::int64_t>(perm.size()) == sym_.n, "distributed solve: permutation of the wrong length");
  forests_.validate(supernodal_etree(sym_));
  blocks_ = supernode_blocks(sym_);
  store_ = block_store_layout(sym_, blocks_, grid_, forests_, rank_);
  distribute_blocks(comm_.get(), root, lu, blocks_, grid_, forests_, store_);
  const std::int64_t ns = static_cast<std::int64_t>(sym_.sn_start.size()) - 1;
  for (std::int64_t s = 0; s < ns; ++s) max_width_ = std::max(max_width_, sym_.sn_start[s + 1] - sym_.sn_start[s]);

  // b's rows reach the rank solving their column; that rank's solve vector reads them from
  // its own rows or its halo (or starts from zero off the lowest grid).
  const std::vector<std::int32_t> solver = column_solvers(sym_, grid_, forests_);
  const HaloPattern pattern = rhs_pattern(rank_, dist_, perm, solver);
  std::unordered_map<std::int64_t, std::int64_t> halo_of;
  for (std::size_t h = 0; h < pattern.halo_globals.size(); ++h) halo_of[pattern.halo_globals[h]] = static_cast<std::int64_t>(h);
  rhs_plan_ = standard_plan(pattern);
  sol_src_.assign(static_cast<std::size_t>(store_.sol_rows), zero_row);
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    for (std::int64_t j = sym_.sn_start[k]; j < sym_.sn_start[k + 1]; ++j) {
      if (solver[j] != rank_) continue;
      const std::int64_t row = store_.sol_off[d] + j - sym_.sn_start[k];
      sol_src_[row] = dist_.owner(perm[j]) == rank_ ? dist_.local_index(perm[j]) : -1 - halo_of.at(perm[j]);
    }
  }
  engine_ = std::make_unique<MessageEngine>(comm_.get(), topo_, max_width_, 64, num_solve_steps);
  set_options(opts);
}

void TriSolve::set_options(const SolveOptions& opts) {
  const int z = grid_.z_of(rank_);
  std::vector<SolveOp> program = solve_program(opts.algorithm, z, forests_.nlev);
  std::vector<PhaseSchedule> phases(program.size());
  std::vector<ZStep> zsteps(program.size());
  const ProcessGrid2D layer = grid_.layer(z);
  for (std::size_t i = 0; i < program.size(); ++i) {
    const SolveOp& op = program[i];
    if (op.kind == SolveOp::phase)
      phases[i] = build_phase(sym_, blocks_, layer, store_.layout, rank_, op.upper, phase_solve_mask(forests_, z, op),
                              phase_context_mask(forests_, z, op), opts.shape, topo_);
    else
      zsteps[i] = build_z_step(forests_, grid_, rank_, op.step, op.kind == SolveOp::z_reduce);
  }
  opts_ = opts;  // only once everything is built: a bad option leaves the solver as it was
  program_ = std::move(program);
  phases_ = std::move(phases);
  zsteps_ = std::move(zsteps);
}

void TriSolve::ensure_rhs_executor(int nrhs) {
  if (!rhs_exec_ || rhs_exec_->block() != nrhs) {
    rhs_exec_.reset();
    rhs_exec_ = std::make_unique<HaloExecutor>(rhs_plan_, topo_, comm_.get(), nrhs);
  }
}

TriSolve::Times TriSolve::solve(const double* b, double* x, int nrhs) {
  require(nrhs >= 1, "distributed solve: nrhs must be at least 1");
  ensure_rhs_executor(nrhs);
  engine_->reserve(max_width_ * nrhs);
  engine_->reset_recorded();
  rhs_exec_->reset_recorded();
  recorded_ = CommStats{std::vector<StepStats>(num_solve_steps)};
  const std::int64_t n_local = local_rows();
  check_mpi(MPI_Barrier(comm_.get()), "MPI_Barrier");
  Times t;
  const double t0 = MPI_Wtime();

  rhs_exec_->begin(b);
  const double* halo = rhs_exec_->end();
  sol_.assign(static_cast<std::size_t>(store_.sol_rows * nrhs), 0.0);
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    const std::int64_t w = sym_.sn_start[k + 1] - sym_.sn_start[k], off = store_.sol_off[d];
    double* out = sol_.data() + off * nrhs;
    for (std::int64_t a = 0; a < w; ++a) {
      const std::int64_t src = sol_src_[off + a];
      if (src == zero_row) continue;
      const double* in = src >= 0 ? b + src * nrhs : halo + (-1 - src) * nrhs;
      for (int c = 0; c < nrhs; ++c) out[c * w + a] = in[c];
    }
  }
  const double t1 = MPI_Wtime();

  PhaseExecutor exec(sym_, blocks_, store_, *engine_, kernels_);
  for (std::size_t i = 0; i < program_.size(); ++i) {
    const SolveOp& op = program_[i];
    const double ts = MPI_Wtime();
    if (op.kind == SolveOp::phase) {
      exec.run(phases_[i], sol_.data(), nrhs, first_phase_tag + static_cast<int>(i));
      (op.upper ? t.u_solve : t.l_solve) += MPI_Wtime() - ts;
    } else {
      const bool reduce = op.kind == SolveOp::z_reduce;
      run_z_step(comm_.get(), zsteps_[i], reduce, opts_.packed_z, sym_, store_, sol_.data(), nrhs,
                 first_z_tag + 2 * op.step + (reduce ? 0 : 1), topo_, rank_, recorded_);
      t.z_comm += MPI_Wtime() - ts;
    }
  }
  const double t2 = MPI_Wtime();

  // x goes back by the same plan in reverse: own rows directly, the others' through the halo.
  std::fill(x, x + n_local * nrhs, 0.0);
  double* hx = rhs_exec_->halo();
  for (std::size_t d = 0; d < store_.layout.diag_sn.size(); ++d) {
    const std::int32_t k = store_.layout.diag_sn[d];
    const std::int64_t w = sym_.sn_start[k + 1] - sym_.sn_start[k], off = store_.sol_off[d];
    const double* in = sol_.data() + off * nrhs;
    for (std::int64_t a = 0; a < w; ++a) {
      const std::int64_t src = sol_src_[off + a];
      if (src == zero_row) continue;
      double* to = src >= 0 ? x + src * nrhs : hx + (-1 - src) * nrhs;
      for (int c = 0; c < nrhs; ++c) to[c] = in[c * w + a];
    }
  }
  rhs_exec_->reverse_begin();
  rhs_exec_->reverse_end(x);
  const double t3 = MPI_Wtime();

  const CommStats& engine = engine_->recorded();
  for (int s : {l_broadcast, l_reduce, u_broadcast, u_reduce}) recorded_.steps[s] = engine.steps[s];
  recorded_.steps[b_to_diagonal] = rhs_exec_->recorded_forward().steps[0];
  recorded_.steps[x_from_diagonal] = rhs_exec_->recorded_reverse().steps[0];
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
      const CommStats t = tree_stats(phases_[i].plan, phases_[i].set, topo_, nrhs);
      s.steps[op.upper ? u_broadcast : l_broadcast] += t.steps[0];
      s.steps[op.upper ? u_reduce : l_reduce] += t.steps[1];
    } else {
      add_z_stats(s, zsteps_[i], sym_, topo_, rank_, op.kind == SolveOp::z_reduce, opts_.packed_z, nrhs);
    }
  }
  const CommStats b = plan_stats(rhs_plan_, topo_, 8 * nrhs);
  s.steps[b_to_diagonal] = b.steps[0];
  s.steps[x_from_diagonal] = b.reversed().steps[0];
  return s;
}

}  // namespace commsolve
