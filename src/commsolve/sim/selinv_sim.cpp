#include "commsolve/sim/selinv_sim.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include "commsolve/core/error.hpp"
#include "commsolve/direct/selinv_machine.hpp"

namespace commsolve::sim {

const std::vector<std::string>& selinv_categories() {
  static const std::vector<std::string> names = {"compute", "comm"};
  return names;
}

namespace {

enum : int { compute = 0, comm };  // selinv_categories()
enum : int { prepare_op = 0, invert_op = 1 };

struct Shared {
  const SupernodalStructure& sym;
  const SupernodeBlocks& blocks;
  ProcessGrid2D grid;
  SelinvPlan plan;
};

// The costs of what SelectedInversion2D's backend does, on one rank (no values: pointers
// stay null).
class CostBackend {
 public:
  CostBackend(const Shared& sh, Simulator& sim, int rank)
      : sh_(sh), sim_(sim), rank_(rank), x_(rank / sh.grid.py), y_(rank % sh.grid.py) {}
  int op = prepare_op;

  void send(int dest, std::int64_t c, const double*, std::int64_t n, int role) {
    sim_.engine_send(rank_, {.dest = dest, .op = op, .step = role, .key = c, .values = n, .bytes = 8 * (n + 1),
                             .category = comm});
  }
  const double* diag_inverse(std::int64_t, bool) const { return nullptr; }
  void lhat(std::int64_t k, const double*) { product(rows(k, x_), w(k), w(k) / 2 + 1); }
  void uhat(std::int64_t k, const double*) { product(w(k), cols(k, y_), w(k) / 2 + 1); }
  const double* pack(SelinvRole, std::int64_t, int, int, std::int64_t n) {
    sim_.copy(rank_, 16.0 * static_cast<double>(n), comm);
    return nullptr;
  }
  void place(SelinvRole, std::int64_t k, int x, int y, const double*) {  // a group's blocks copied into place
    std::int64_t m = 0;
    for (std::int64_t b = sh_.blocks.col_ptr[k]; b < sh_.blocks.col_ptr[k + 1]; ++b)
      if (sh_.blocks.sn[b] % sh_.grid.px == x && sh_.blocks.sn[b] % sh_.grid.py == y)
        m += sh_.blocks.hi[b] - sh_.blocks.lo[b];
    sim_.copy(rank_, 16.0 * static_cast<double>(w(k) * m), compute);
  }
  const double* bcast_data(SelinvRole, std::int64_t) const { return nullptr; }
  void hold(std::int64_t, const double*, std::int64_t n) { sim_.copy(rank_, 16.0 * static_cast<double>(n), compute); }
  const double* held(std::int64_t) const { return nullptr; }
  std::int64_t pieces(std::int64_t k) {
    bounds_ = product_pieces(sh_.blocks, sh_.grid, k, w(k), x_, y_, sh_.plan.symmetric);
    return static_cast<std::int64_t>(bounds_.size()) - 1;
  }
  void products(std::int64_t k, const double*, const double*, std::int64_t piece) {
    std::int64_t nc = 0;  // the piece's columns of C_y
    for (std::int64_t t = bounds_[piece]; t < bounds_[piece + 1]; ++t) {
      const std::int64_t b = sh_.blocks.col_ptr[k] + t;
      if (sh_.blocks.sn[b] % sh_.grid.py == y_) nc += sh_.blocks.hi[b] - sh_.blocks.lo[b];
    }
    const std::int64_t rx = rows(k, x_), wk = w(k);
    sim_.copy(rank_, 16.0 * static_cast<double>(rx * nc), compute);  // its part of Z(R_x, C_y) gathered
    product(rx, wk, nc);
    if (!sh_.plan.symmetric) product(wk, nc, rx);
  }
  const double* row_part() const { return nullptr; }
  const double* col_part() const { return nullptr; }
  void add(std::int64_t, std::int64_t n, const double*) {
    sim_.compute(rank_, static_cast<double>(n), 24.0 * static_cast<double>(n), compute);
  }
  const double* sum(std::int64_t) const { return nullptr; }
  void release(std::int64_t) {}
  const double* finish_row(std::int64_t k, const double*) {
    product(w(k), w(k), rows(k, x_));
    return nullptr;
  }
  void finish_col(std::int64_t k, const double*) { sim_.copy(rank_, 16.0 * static_cast<double>(w(k) * cols(k, y_)), compute); }
  void finish_diag(std::int64_t k, const double*) { product(w(k), w(k), w(k)); }
  void done_with(std::int64_t) {}

 private:
  std::int64_t w(std::int64_t k) const { return sh_.sym.sn_start[k + 1] - sh_.sym.sn_start[k]; }
  // |R_x| and |C_y| of supernode K
  std::int64_t rows(std::int64_t k, int x) const { return structure_share(sh_.blocks, k, x, sh_.grid.px); }
  std::int64_t cols(std::int64_t k, int y) const { return structure_share(sh_.blocks, k, y, sh_.grid.py); }
  // An m x n x k GEMM: 2 m n k flops over its three operands.
  void product(std::int64_t m, std::int64_t n, std::int64_t k) { sim_.gemm(rank_, m, n, k, compute); }

  const Shared& sh_;
  Simulator& sim_;
  int rank_, x_, y_;
  std::vector<std::int64_t> bounds_;  // the pieces of the products under way
};

class SelinvProcess final : public Process {
 public:
  SelinvProcess(const Shared& sh, TreePlan prep, TreePlan inv) : sh_(sh), prep_(std::move(prep)), inv_(std::move(inv)) {}
  void start(Simulator& sim, int rank) override {
    sim_ = &sim;
    rank_ = rank;
    backend_.emplace(sh_, sim, rank);
    machine_.emplace(sh_.plan, sh_.blocks, sh_.grid, rank, prep_, inv_, *backend_);
    machine_->prepare_start();
    maybe_invert();
  }
  void receive(Simulator&, const Message& msg) override {
    if (msg.op == prepare_op) {
      ++prepared_;
      machine_->prepare_arrive(msg.key, nullptr, msg.values);
      maybe_invert();
      return;
    }
    if (!inverting_) {  // under its own tag, it waits for this rank's invert phase
      early_.push_back(msg);
      return;
    }
    arrive(msg);
  }
  bool done() const override {
    return inverting_ && inverted_ == machine_->invert_expected() && machine_->finished();
  }
  int waiting_category() const override { return comm; }

 private:
  void maybe_invert() {
    if (inverting_ || prepared_ < machine_->prepare_expected()) return;
    inverting_ = true;
    backend_->op = invert_op;
    machine_->invert_start();
    for (const Message& m : early_) arrive(m);
    early_.clear();
    work();
  }
  void arrive(const Message& msg) {
    ++inverted_;
    machine_->invert_arrive(msg.key, nullptr, msg.values);
    work();
  }
  // One piece of idle work, then the messages that came meanwhile, as the engine takes them.
  void work() {
    if (!resuming_ && machine_->step()) {
      resuming_ = true;
      sim_->resume(rank_);
    }
  }
  void resume(Simulator&, int) override {
    resuming_ = false;
    work();
  }

  const Shared& sh_;
  TreePlan prep_, inv_;
  std::optional<CostBackend> backend_;
  std::optional<SelinvMachine<CostBackend>> machine_;
  std::int64_t prepared_ = 0, inverted_ = 0;  // messages of each phase arrived
  bool inverting_ = false, resuming_ = false;  // resuming_: a resume is pending
  Simulator* sim_ = nullptr;
  int rank_ = 0;
  std::vector<Message> early_;
};

}  // namespace

SimResult simulate_selinv(const SolveLayout& layout, const TreeShape& shape, bool symmetric, const Topology& topo,
                          const NetworkModel& net, const ComputeModel& cpu, Recording keep) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const ProcessGrid3D& g = layout.grid();
  require(g.pz == 1, "selected inversion runs on a 2D grid (Pz = 1), got Pz = " + std::to_string(g.pz));
  require(g.px * g.py == topo.size(), "selected inversion: the grid has " + std::to_string(g.px * g.py) +
                                          " ranks, the topology " + std::to_string(topo.size()));
  const ProcessGrid2D grid{g.px, g.py, 0};
  Shared sh{layout.sym(), layout.blocks(), grid, selinv_plan(layout.sym(), layout.blocks(), grid, symmetric)};
  std::vector<TreePlan> prep = build_tree_plans_virtual(sh.plan.prepare.set, shape, topo);
  std::vector<TreePlan> inv = build_tree_plans_virtual(sh.plan.invert.set, shape, topo);
  std::vector<std::unique_ptr<Process>> procs;
  procs.reserve(prep.size());
  for (std::size_t r = 0; r < prep.size(); ++r)
    procs.push_back(std::make_unique<SelinvProcess>(sh, std::move(prep[r]), std::move(inv[r])));
  const auto t1 = clock::now();
  Simulator sim(topo, net, cpu, selinv_steps, selinv_categories(), keep);
  sim.run(procs);
  const auto t2 = clock::now();
  return sim.result(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
}

}  // namespace commsolve::sim
