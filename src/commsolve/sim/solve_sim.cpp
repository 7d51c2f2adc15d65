#include "commsolve/sim/solve_sim.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/phase_machine.hpp"
#include "commsolve/direct/rhs_layout.hpp"

namespace commsolve::sim {

const std::vector<std::string>& solve_categories() {
  static const std::vector<std::string> names = {"fp", "xy_comm", "z_comm", "redistribute"};
  return names;
}

namespace {

// Message tags as TriSolve's: a phase is first_phase_tag + its index in the grid's program,
// an inter-grid step first_z_tag + 2 step + direction, a grid synchronisation first_sync_tag
// + its index; b and x have their own.
constexpr int b_tag = 1, x_tag = 2, first_phase_tag = 20, first_z_tag = 1000, first_sync_tag = 2000;

// One rank's side of a move of right-hand-side rows (a halo exchange).
struct RowMove {
  std::vector<std::pair<int, std::int64_t>> sends;  // (peer, rows)
  std::int64_t recvs = 0;                           // messages it receives
  std::int64_t packed = 0, unpacked = 0;            // rows packed before sending, handled after receiving
};

struct RankProgram {
  const std::vector<SolveOp>* ops = nullptr;  // its grid's program
  LocalLayout2D layout;
  std::vector<PhaseSchedule> phases;  // per op (phases only)
  std::vector<ZStep> zsteps;          // per op (inter-grid steps only)
  std::vector<GridSync> syncs;        // per op (grid synchronisations only)
  std::int64_t sol_rows = 0;
  RowMove b, x;
};

struct Shared {
  const SupernodalStructure& sym;
  const SupernodeBlocks& blocks;
  int nrhs;
  bool packed_z;
  bool per_block;  // SolveKernels::per_block
  double width(std::int64_t s) const { return static_cast<double>(sym.sn_start[s + 1] - sym.sn_start[s]); }
};

// The PhaseMachine's backend in the simulator: every product and sum priced on the rank's
// clock, every message sent through the simulated network. No numbers (null pointers).
class SimBackend {
 public:
  SimBackend(Simulator& sim, int rank, const Shared& sh, const PhaseSchedule& ph, const LocalLayout2D& layout, int tag)
      : sim_(sim), rank_(rank), sh_(sh), ph_(ph), layout_(layout), tag_(tag), nrhs_(sh.nrhs) {}

  void send(int dest, std::int64_t key, const double*, std::int64_t n, bool broadcast) {
    const int step = ph_.upper ? (broadcast ? u_broadcast : u_reduce) : (broadcast ? l_broadcast : l_reduce);
    sim_.send(rank_, {.dest = dest, .op = tag_, .step = step, .key = key, .values = n * nrhs_,
                      .bytes = 8 + 8 * n * nrhs_, .category = xy_comm, .receives = Receives::any_source});
  }
  const double* lower_panel(std::int32_t col, const double*) {
    col_ = col;
    if (sh_.per_block) return nullptr;  // one product per block, in scatter
    const double M = static_cast<double>(layout_.l_rows[col]), w = sh_.width(layout_.l_col[col]);
    sim_.compute(rank_, 2 * M * w * nrhs_, 8 * (M * w + (M + w) * nrhs_), fp);
    return nullptr;
  }
  void scatter(std::int64_t p, std::int32_t, const double*) {
    const std::int64_t blk = layout_.l_block[p];
    const double m = static_cast<double>(sh_.blocks.hi[blk] - sh_.blocks.lo[blk]);
    if (sh_.per_block) {
      const double w = sh_.width(layout_.l_col[col_]);
      sim_.compute(rank_, 2 * m * w * nrhs_, 8 * (m * w + (m + w) * nrhs_), fp);
    }
    sim_.copy(rank_, 16.0 * m * nrhs_, fp);
  }
  void upper_block(std::int64_t p, std::int32_t, const double*) {
    const std::int64_t blk = layout_.u_block[p];
    const double w = sh_.width(sh_.blocks.col[blk]), m = static_cast<double>(sh_.blocks.hi[blk] - sh_.blocks.lo[blk]);
    if (sh_.per_block) sim_.copy(rank_, 16 * w * m, fp);  // packed into a buffer first
    sim_.compute(rank_, 2 * w * m * nrhs_, 8 * (w * m + 2 * (m + w) * nrhs_), fp);  // with the gather of x's rows
  }
  void add_message(std::int32_t, const double*, std::int64_t n) { sim_.copy(rank_, 16.0 * static_cast<double>(n), fp); }
  const double* settle(std::int32_t e) {
    const double w = static_cast<double>(ph_.width[e]);
    sim_.copy(rank_, 16 * w * nrhs_, fp);
    if (!ph_.solves[e]) return nullptr;
    if (sh_.per_block)  // dtrsm: w^2 flops per right-hand side over one triangle, at the triangular rate
      sim_.compute(rank_, w * w * nrhs_, 8 * (w * (w + 1) / 2 + 2 * w * nrhs_), fp, true);
    else
      sim_.compute(rank_, 2 * w * w * nrhs_, 8 * (w * w + 2 * w * nrhs_), fp);
    return nullptr;
  }
  const double* known(std::int32_t) { return nullptr; }
  const double* sum(std::int32_t) { return nullptr; }

 private:
  Simulator& sim_;
  int rank_;
  const Shared& sh_;
  const PhaseSchedule& ph_;
  const LocalLayout2D& layout_;
  int tag_, nrhs_;
  std::int32_t col_ = -1;  // the local column whose solution the blocks in scatter multiply
};

// One rank of the solve: stage -1 moves b, stages 0..n-1 are its grid's program, stage n
// moves x back, n + 1 is done. A stage ends once its messages are in; messages of a later
// stage (a faster peer) wait in their tag's queue, as MPI's unexpected messages do.
class SolveProcess final : public Process {
 public:
  SolveProcess(const Shared& sh, const RankProgram& prog) : sh_(sh), p_(prog), n_(static_cast<int>(prog.ops->size())) {}

  void start(Simulator& sim, int rank) override {
    sim_ = &sim;
    rank_ = rank;
    stage_ = -1;
    enter_move(p_.b, b_tag, b_to_diagonal);
    advance();
  }
  void receive(Simulator&, const Message& msg) override {
    if (msg.op != tag_) {
      early_[msg.op].push_back(msg);
      return;
    }
    handle(msg);
    advance();
  }
  bool done() const override { return stage_ > n_; }
  int waiting_category() const override { return category_; }

 private:
  double rows_bytes(std::int64_t rows) const { return 8.0 * static_cast<double>(rows) * sh_.nrhs; }

  void enter_move(const RowMove& m, int tag, int step) {
    tag_ = tag;
    category_ = redistribute;
    got_ = 0;
    need_ = m.recvs;
    sim_->copy(rank_, 2 * rows_bytes(m.packed), redistribute);
    for (const auto& [peer, rows] : m.sends)
      sim_->send(rank_, {.dest = peer, .op = tag, .step = step, .values = rows * sh_.nrhs,
                         .bytes = static_cast<std::int64_t>(rows_bytes(rows)), .category = redistribute});
  }

  void enter_op(int i) {
    const SolveOp& op = (*p_.ops)[i];
    got_ = 0;
    if (op.kind == SolveOp::phase) {
      tag_ = first_phase_tag + i;
      category_ = xy_comm;
      const PhaseSchedule& ph = p_.phases[i];
      need_ = ph.expected;
      machine_.reset();
      backend_.emplace(*sim_, rank_, sh_, ph, p_.layout, tag_);
      machine_.emplace(ph, p_.layout, *backend_);
      machine_->start();
      return;
    }
    if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
      tag_ = first_sync_tag + i;
      category_ = xy_comm;
      const GridSync& gs = p_.syncs[i];
      need_ = 0;
      for (const GridSync::Exchange& x : gs.steps) need_ += x.recv ? 1 : 0;
      sync_ = &gs;
      sync_at_ = 0;
      sync_sent_ = false;
      sync_got_.clear();
      sync_progress();
      return;
    }
    const bool reduce = op.kind == SolveOp::z_reduce;
    tag_ = first_z_tag + 2 * op.step + (reduce ? 0 : 1);
    category_ = z_comm;
    need_ = 0;
    const ZStep& st = p_.zsteps[i];
    if (st.peer < 0 || st.sn.empty()) return;
    if (!st.send) {
      need_ = sh_.packed_z ? 1 : static_cast<std::int64_t>(st.sn.size());
      return;
    }
    const int step = reduce ? z_reduce : z_broadcast;
    std::int64_t total = 0;
    for (std::int32_t k : st.sn) {
      const std::int64_t n = (sh_.sym.sn_start[k + 1] - sh_.sym.sn_start[k]) * sh_.nrhs;
      total += n;
      if (!sh_.packed_z)
        sim_->send(rank_, {.dest = st.peer, .op = tag_, .step = step, .key = k, .values = n, .bytes = 8 * n,
                           .category = z_comm});
    }
    if (sh_.packed_z) {
      sim_->copy(rank_, 16.0 * static_cast<double>(total), z_comm);
      sim_->send(rank_, {.dest = st.peer, .op = tag_, .step = step, .values = total, .bytes = 8 * total,
                         .category = z_comm});
    }
  }

  // The grid synchronisation's exchanges in order, as far as the messages that came allow:
  // each sends (if it does), then takes its partner's message (if it receives one).
  void sync_progress() {
    for (; sync_at_ < sync_->steps.size(); ++sync_at_) {
      const GridSync::Exchange& x = sync_->steps[sync_at_];
      if (x.send && !sync_sent_) {
        sim_->send(rank_, {.dest = x.peer, .op = tag_, .step = grid_sync, .bytes = sync_->bytes, .category = xy_comm});
        sync_sent_ = true;
      }
      if (x.recv) {
        auto it = sync_got_.find(x.peer);
        if (it == sync_got_.end() || it->second == 0) return;
        --it->second;
        sim_->copy(rank_, 3.0 * static_cast<double>(sync_->bytes), xy_comm);  // the counters added
      }
      sync_sent_ = false;
    }
  }

  void leave() {  // the current stage is complete
    if (sync_ != nullptr && sync_at_ != sync_->steps.size())
      throw std::logic_error("simulated grid synchronisation: rank " + std::to_string(rank_) + " left it unfinished");
    sync_ = nullptr;
    if (stage_ >= 0 && stage_ < n_ && (*p_.ops)[stage_].kind == SolveOp::phase) {
      if (machine_->solved() != p_.phases[stage_].solved_here || !machine_->finished())
        throw std::logic_error("simulated solve phase: rank " + std::to_string(rank_) + " left " +
                               std::to_string(p_.phases[stage_].solved_here - machine_->solved()) +
                               " supernodes unsolved after all messages arrived" +
                               (machine_->finished() ? "" : ", its synchronous part unfinished"));
      machine_.reset();
      backend_.reset();
    }
    if (stage_ == -1) sim_->copy(rank_, 2 * rows_bytes(p_.sol_rows), redistribute);  // b into the solve vector
    ++stage_;
    if (stage_ < n_) {
      enter_op(stage_);
    } else if (stage_ == n_) {
      sim_->copy(rank_, 2 * rows_bytes(p_.sol_rows), redistribute);  // the solve vector into x and its halo
      enter_move(p_.x, x_tag, x_from_diagonal);
    } else {
      sim_->copy(rank_, 2 * rows_bytes(p_.x.unpacked), redistribute);  // the halo's rows added into x
      tag_ = -1;
    }
  }

  void handle(const Message& msg) {
    ++got_;
    if (stage_ >= 0 && stage_ < n_) {
      if (machine_) {
        machine_->arrive(msg.key, nullptr, msg.values, sh_.nrhs);
      } else if (sync_ != nullptr) {
        ++sync_got_[msg.src];
        sync_progress();
      } else {
        sim_->copy(rank_, 16.0 * static_cast<double>(msg.values), z_comm);  // added or copied into place
      }
    }
    if (got_ > need_)
      throw std::logic_error("simulated solve: rank " + std::to_string(rank_) + " got an unexpected message (tag " +
                             std::to_string(msg.op) + ")");
  }

  // Moves on through every stage that is complete, feeding each the messages that came
  // early for it.
  void advance() {
    while (!done()) {
      if (got_ < need_) {
        auto it = early_.find(tag_);
        if (it == early_.end()) return;
        const Message m = it->second.front();
        it->second.pop_front();
        if (it->second.empty()) early_.erase(it);
        handle(m);
        continue;
      }
      leave();
    }
  }

  const Shared& sh_;
  const RankProgram& p_;
  const int n_;
  Simulator* sim_ = nullptr;
  int rank_ = 0, stage_ = -1, tag_ = -1, category_ = idle;
  std::int64_t got_ = 0, need_ = 0;
  std::optional<SimBackend> backend_;
  std::optional<PhaseMachine<SimBackend>> machine_;
  std::unordered_map<int, std::deque<Message>> early_;
  const GridSync* sync_ = nullptr;  // the grid synchronisation under way
  std::size_t sync_at_ = 0;         // its exchange this rank is at
  bool sync_sent_ = false;          // that exchange's send is out
  std::unordered_map<int, int> sync_got_;  // its messages in, not yet taken, by source
};

// Every rank's side of the move of b (forward: owners send their rows to the solvers) or of
// x (the x plan in reverse: solvers send, owners add).
void set_moves(std::vector<RankProgram>& progs, const std::vector<HaloPattern>& patterns, bool reverse) {
  for (const HaloPattern& p : patterns) {
    RowMove& m = reverse ? progs[p.rank].x : progs[p.rank].b;
    const auto& peers = reverse ? p.recv_peers : p.send_peers;
    const auto& ptr = reverse ? p.recv_ptr : p.send_ptr;
    for (std::size_t i = 0; i < peers.size(); ++i) m.sends.emplace_back(peers[i], ptr[i + 1] - ptr[i]);
    m.recvs = static_cast<std::int64_t>(reverse ? p.send_peers.size() : p.recv_peers.size());
    m.packed = reverse ? p.n_halo() : static_cast<std::int64_t>(p.send_idx.size());
    m.unpacked = reverse ? static_cast<std::int64_t>(p.send_idx.size()) : p.n_halo();
  }
}

}  // namespace

SimResult simulate_solve(const SolveLayout& layout, const SolveOptions& opts, int nrhs, const RhsMap* rhs,
                         const Topology& topo, const NetworkModel& net, const ComputeModel& cpu, Recording keep) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  layout.check(opts);
  const SupernodalStructure& sym = layout.sym();
  const ForestPartition& forests = layout.forests();
  const ProcessGrid3D& grid = layout.grid();
  const SupernodeBlocks& blocks = layout.blocks();
  require(topo.size() == grid.size(), "simulated solve: topology of " + std::to_string(topo.size()) +
                                          " ranks for a grid of " + std::to_string(grid.size()));
  require(nrhs >= 1, "simulated solve: nrhs must be at least 1");

  const SolveOptions run = effective_options(opts);
  std::vector<RankProgram> progs(static_cast<std::size_t>(grid.size()));
  std::vector<std::vector<SolveOp>> programs(static_cast<std::size_t>(grid.pz));
  for (int z = 0; z < grid.pz; ++z) {
    const ProcessGrid2D layer = grid.layer(z);
    programs[z] = solve_program(run.algorithm, z, forests.nlev, run.leaf_sync);
    const std::vector<SolveOp>& ops = programs[z];
    std::vector<LocalLayout2D> layouts =
        local_layouts_2d(sym, blocks, layer, grid.pz > 1 ? forests.mask(z) : std::vector<char>{});
    for (int q = 0; q < layer.size(); ++q) {
      RankProgram& p = progs[layer.base + q];
      p.ops = &ops;
      p.layout = std::move(layouts[q]);
      p.phases.resize(ops.size());
      p.zsteps.resize(ops.size());
      p.syncs.resize(ops.size());
      for (std::int32_t k : p.layout.diag_sn) p.sol_rows += sym.sn_start[k + 1] - sym.sn_start[k];
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const SolveOp& op = ops[i];
      if (op.kind == SolveOp::phase) {
        const std::vector<char> solve = phase_solve_mask(forests, z, op);
        const CollectiveSet set = op_collectives(sym, blocks, layer, forests, z, op);
        const std::vector<TreePlan> plans =
            phase_tree_plans(set, synchronous_collectives(set, sym.nsuper(), solve, op.sync), run.shape, topo);
        for (int r = layer.base; r < layer.base + layer.size(); ++r)
          progs[r].phases[i] = make_phase(sym, blocks, progs[r].layout, set, plans[r], op.upper, solve, op.sync);
      } else if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
        for (int r = layer.base; r < layer.base + layer.size(); ++r)
          progs[r].syncs[i] = build_grid_sync(sym, layer, r, op);
      } else {
        std::vector<ZStep> steps = layer_z_steps(forests, grid, z, op.step, op.kind == SolveOp::z_reduce);
        for (int q = 0; q < layer.size(); ++q) progs[layer.base + q].zsteps[i] = std::move(steps[q]);
      }
    }
  }
  if (rhs != nullptr) {
    rhs->check(sym.n, grid.size(), "simulated solve");
    const std::vector<std::int32_t> solver = column_solvers(sym, grid, forests);
    set_moves(progs, rhs_patterns(rhs->dist, rhs->row_order, solver), false);
    set_moves(progs, rhs_patterns(rhs->dist, rhs->col_order, solver), true);
  }
  const auto t1 = clock::now();

  const Shared shared{sym, blocks, nrhs, run.packed_z, run.kernels == SolveKernels::per_block};
  std::vector<std::unique_ptr<Process>> procs;
  procs.reserve(progs.size());
  for (const RankProgram& p : progs) procs.push_back(std::make_unique<SolveProcess>(shared, p));
  // The phases receive through the message engine; the b/x moves and inter-grid steps from
  // known sources (each send says which).
  Simulator sim(topo, net, cpu, num_solve_steps, solve_categories(), keep);
  for (int r = 0; r < grid.size(); ++r) sim.set_working_set(r, 8.0 * static_cast<double>(progs[r].layout.total));
  sim.run(procs);
  const auto t2 = clock::now();

  return sim.result(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
}

}  // namespace commsolve::sim
