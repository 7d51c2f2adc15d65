#include "commsolve/sim/dense_sim.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "commsolve/core/error.hpp"
#include "commsolve/dense/lu_machine.hpp"
#include "commsolve/dense/lu_tournament_machine.hpp"
#include "commsolve/dense/matmul_machine.hpp"
#include "commsolve/dense/pivots.hpp"

namespace commsolve::sim {

const std::vector<std::string>& dense_categories() {
  static const std::vector<std::string> names = {"compute", "comm"};
  return names;
}

namespace {

enum : int { compute = 0, comm };  // dense_categories()

// What both backends price alike: messages (the engine copies the values out), copies,
// sums and GEMMs.
struct Costs {
  Simulator* sim = nullptr;
  int rank = 0;
  void send(int dest, std::int64_t id, const double*, std::int64_t n, int role) {
    sim->engine_send(rank, {.dest = dest, .step = role, .key = id, .values = n, .bytes = 8 * (n + 1), .category = comm});
  }
  void copy(std::int64_t n, int category = compute) { sim->copy(rank, 16.0 * static_cast<double>(n), category); }
  void sum(std::int64_t n) {
    if (n > 0) sim->compute(rank, static_cast<double>(n), 24.0 * static_cast<double>(n), compute);
  }
  void product(std::int64_t m, std::int64_t n, std::int64_t k, double share = 1.0) {
    sim->gemm(rank, m, n, k, compute, share);
  }
  // A phase after the machine's (a pivoted LU's last row swaps): none here.
  static constexpr std::int64_t after_key = -1;
  std::int64_t after_expected() const { return 0; }
  bool after_done() const { return true; }
  void after_start() {}
  void after_arrive(std::int64_t) {}
};

struct MatmulCosts : Costs {
  const MatmulLayout* L = nullptr;
  const SummaPanels* P = nullptr;
  int x = 0, y = 0;
  std::int64_t width(std::int64_t q) const { return P->width(q, L->a_cols); }
  const double* replicate_data(int) { return nullptr; }
  const double* own_panel(int role, std::int64_t q) {
    if (role == mm_panel_b) copy(width(q) * L->b_cols.local_size(y), comm);  // rows of B packed
    return nullptr;
  }
  void hold(int, std::int64_t, std::int64_t, const double*, std::int64_t n, std::int64_t) { copy(n); }
  void release(std::int64_t) {}
  void gemm(std::int64_t q, std::int64_t, std::int64_t) {
    product(L->a_rows.local_size(x), L->b_cols.local_size(y), width(q));
  }
  void reduce_add(std::int64_t, const double*, std::int64_t n) { sum(n); }
  const double* reduce_out(std::int64_t, std::int64_t, std::int64_t n) {
    sum(n);
    return nullptr;
  }
  void reduce_in(std::int64_t, std::int64_t, std::int64_t n) { sum(n); }
};

struct LuCosts : Costs {
  Cyclic1D R, C;
  int x = 0, y = 0;
  std::int64_t w(std::int64_t k) const { return R.width(k); }
  std::int64_t ra(std::int64_t k) const { return R.local_size(x) - R.local_start(x, k + 1); }
  std::int64_t ca(std::int64_t k) const { return C.local_size(y) - C.local_start(y, k + 1); }
  void hold(std::int64_t, std::int64_t, const double*, std::int64_t n, std::int64_t) { copy(n); }
  const double* held(std::int64_t) { return nullptr; }
  void release(std::int64_t) {}
  void reduce_add(std::int64_t, const double*, std::int64_t n) { sum(n); }
  const double* reduce_out(std::int64_t, std::int64_t, int, std::int64_t, std::int64_t, std::int64_t n) {
    copy(n, comm);  // the share's piece packed
    sum(n);
    return nullptr;
  }
  void reduce_in(std::int64_t, int, std::int64_t, std::int64_t, std::int64_t n) { sum(n); }
  void factor_diag(std::int64_t k) { product(w(k), w(k), w(k), 1.0 / 3.0); }
  std::int64_t packed = -1;  // the step whose diagonal block is packed (once per step, as the executor)
  const double* diag(std::int64_t k) {
    if (packed != k) copy(w(k) * w(k), comm);
    packed = k;
    return nullptr;
  }
  void trsm_l(std::int64_t k, const double*) { product(ra(k), w(k), w(k), 0.5); }
  void trsm_u(std::int64_t k, const double*) { product(w(k), ca(k), w(k), 0.5); }
  const double* panel_l(std::int64_t k) {
    copy(ra(k) * w(k), comm);
    return nullptr;
  }
  const double* panel_u(std::int64_t k) {
    copy(w(k) * ca(k), comm);
    return nullptr;
  }
  void store(int, std::int64_t, std::int64_t, const double*, std::int64_t n) { copy(n); }
  void update(std::int64_t k, std::int64_t, std::int64_t, std::int64_t r0, std::int64_t r1, std::int64_t c0,
              std::int64_t c1) {
    product(r1 - r0, c1 - c0, w(k));
  }
};

// The pivots of a simulated pivoted LU, those of a random matrix as modelled here: step k's
// pivot rows drawn uniformly (a fixed hash) from the rows left, as partial pivoting's are on
// random matrices, and what they move, counted once for all ranks: per step, the rows going
// from one process row to another (or within one); per process column, the words of L's rows
// moved at the end between each pair of process rows.
struct PivotModel {
  struct Pair {
    int to, from;
    std::int64_t rows;
  };
  Cyclic1D R, C;
  std::vector<std::int64_t> ipiv;
  std::vector<std::vector<Pair>> step;  // per step
  std::vector<std::int64_t> left;       // [y][to][from]: words

  PivotModel(std::int64_t n, std::int64_t nb, const Grid25D& g) : R{n, nb, g.pr}, C{n, nb, g.pc} {
    ipiv.resize(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t) {
      std::uint64_t h = static_cast<std::uint64_t>(t) * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
      h ^= h >> 31, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
      ipiv[static_cast<std::size_t>(t)] = t + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(n - t));
    }
    for (std::int64_t k = 0; k < R.nblocks(); ++k) {
      std::map<std::pair<int, int>, std::int64_t> rows;
      for (const auto& [q, src] : interchange_moves(ipiv, k * nb, R.width(k))) ++rows[{R.owner(q / nb), R.owner(src / nb)}];
      step.emplace_back();
      for (const auto& [tf, r] : rows) step.back().push_back({tf.first, tf.second, r});
    }
    left.assign(static_cast<std::size_t>(g.pc) * g.pr * g.pr, 0);
    for_left_moves(ipiv, n, nb, [&](std::int64_t j, std::int64_t q, std::int64_t src) {
      left[(static_cast<std::size_t>(C.owner(j)) * g.pr + R.owner(q / nb)) * g.pr + R.owner(src / nb)] += R.width(j);
    });
  }
  std::int64_t left_words(int y, int to, int from, int pr) const {
    return left[(static_cast<std::size_t>(y) * pr + to) * pr + from];
  }
};

struct TournamentCosts : LuCosts {
  const PivotModel* piv = nullptr;
  const Grid25D* g = nullptr;
  int z = 0;
  std::int64_t nids = 0;
  std::vector<std::int64_t> ncols;  // per step: the columns its swap moves here
  std::int64_t nl() const { return C.local_size(y); }
  std::int64_t col(std::int64_t b) const { return C.local_start(y, b); }

  bool only_player = false;
  void tour_leaf(std::int64_t k, std::int64_t s) {
    const std::int64_t rows = R.local_size(x) - R.local_start(x, k);
    copy(rows * w(k));
    product(rows, w(k), w(k), 0.5);  // partial pivoting on them: rows w^2 flops
    only_player = s < 0;
  }
  std::int64_t stacked = 0;  // candidate rows gathered at this node
  void tour_add(std::int64_t, const double*, std::int64_t n) {
    copy(n);
    stacked += n;
  }
  void play(std::int64_t k) {
    product(stacked / (w(k) + 1) + w(k), w(k), w(k), 0.5);
    stacked = 0;
  }
  const double* tour_out(std::int64_t k, std::int64_t) {
    play(k);
    return nullptr;
  }
  void tour_final(std::int64_t k, std::int64_t s) {  // the only player (s < 0) plays no second round
    if (s >= 0) play(k);
  }
  const double* pivots(std::int64_t) { return nullptr; }
  void set_pivots(std::int64_t, const double*) {}
  const double* diag(std::int64_t) { return nullptr; }
  bool put_diag(std::int64_t k) {
    const bool whole = only_player;
    copy(whole ? (R.local_size(x) - R.local_start(x, k)) * w(k) : w(k) * w(k));
    only_player = false;
    return whole;
  }
  std::int64_t swap_plan(std::int64_t k) {
    ncols.resize(static_cast<std::size_t>(R.nblocks()), 0);
    const std::int64_t n = nl() - (z == static_cast<int>(k % g->c) ? col(k) : col(k + 1));
    ncols[static_cast<std::size_t>(k)] = n;
    std::int64_t in = 0;
    for (const PivotModel::Pair& p : piv->step[static_cast<std::size_t>(k)]) in += p.to == x && p.from != x && n > 0;
    return in;
  }
  // As the executor: rows leaving for other process rows brought up to date and sent, rows
  // moving here copied (with their rows of L), block row k brought up to date at the end.
  void catch_up(const std::vector<PendingUpdate>& pend, std::int64_t rows, std::int64_t k) {
    for (const PendingUpdate& p : pend) {
      const std::int64_t nc = nl() - std::max(col(p.bnext), col(k + 1));
      if (nc > 0 && rows > 0) product(rows, nc, w(p.k));
    }
  }
  void swap_send(std::int64_t k, std::vector<PendingUpdate>& pend) {
    const std::int64_t n = ncols[static_cast<std::size_t>(k)];
    if (n == 0) return;
    for (const PivotModel::Pair& p : piv->step[static_cast<std::size_t>(k)]) {
      if (p.from != x) continue;
      if (p.to == x) {
        copy(2 * p.rows * n);  // gathered, then written
        continue;
      }
      copy(p.rows * n, comm);
      catch_up(pend, p.rows, k);
      send(g->rank(p.to, y, z), nids + k, nullptr, p.rows * n, lu_swap);
    }
  }
  void swap_arrive(std::int64_t, int, const double*, std::int64_t n) { copy(n); }
  void swap_finish(std::int64_t k, const std::vector<PendingUpdate>& pend) {
    if (R.owner(k) == x) catch_up(pend, w(k), k);
  }
  void keep_l(std::int64_t k, std::int64_t lslot) {
    if (lslot < 0) copy(ra(k) * w(k));
  }
  void drop_l(std::int64_t) {}
  void update(const PendingUpdate& p, std::int64_t r0, std::int64_t c0, std::int64_t c1) {
    product(R.local_size(x) - r0, c1 - c0, w(p.k));
  }

  // Layer 0 after the machine: the rows of L's block columns to where the later steps' interchanges took them.
  std::int64_t after_key = -1, after_in = 0, after_got = 0;
  bool after_started = false;
  std::int64_t after_expected() const { return after_in; }
  bool after_done() const { return z != 0 || (after_started && after_got == after_in); }
  void after_start() {
    if (after_started || z != 0) return;
    after_started = true;
    for (int other = 0; other < g->pr; ++other) {
      const std::int64_t out = piv->left_words(y, other, x, g->pr), in = piv->left_words(y, x, other, g->pr);
      if (other == x) {
        copy(2 * out);
        continue;
      }
      if (out > 0) {
        copy(out, comm);
        send(g->rank(other, y, 0), after_key, nullptr, out, lu_swap);
      }
      after_in += in > 0;
    }
  }
  void after_arrive(std::int64_t n) {
    copy(n);
    ++after_got;
  }
};

// A rank running a machine: arrivals handed to it, its idle work one piece at a time with
// the messages that came meanwhile let in between (Simulator::resume), as the engine does.
template <class Machine, class Backend>
class DenseProcess final : public Process {
 public:
  using Make = std::function<void(DenseProcess&, Simulator&, int)>;
  DenseProcess(TreePlan plan, Make make) : plan_(std::move(plan)), make_(std::move(make)) {}
  void start(Simulator& sim, int rank) override {
    sim_ = &sim;
    rank_ = rank;
    make_(*this, sim, rank);
    machine->start();
    work();
  }
  void receive(Simulator&, const Message& msg) override {
    ++arrived_;
    if (msg.key == backend.after_key)
      backend.after_arrive(msg.values);
    else if constexpr (requires { machine->arrive(0, msg.key, nullptr, msg.values); })  // it wants the sender
      machine->arrive(msg.src, msg.key, nullptr, msg.values);
    else
      machine->arrive(msg.key, nullptr, msg.values);
    work();
  }
  void resume(Simulator&, int) override {
    resuming_ = false;
    work();
  }
  bool done() const override {
    return arrived_ == machine->expected() + backend.after_expected() && machine->done() && backend.after_done();
  }

  TreePlan plan_;
  Backend backend;
  std::optional<Machine> machine;

 private:
  void work() {
    if (resuming_) return;
    if (machine->idle()) {
      resuming_ = true;
      sim_->resume(rank_);
    } else if (machine->done()) {
      backend.after_start();
    }
  }
  Make make_;
  Simulator* sim_ = nullptr;
  int rank_ = 0;
  std::int64_t arrived_ = 0;
  bool resuming_ = false;
};

template <class Proc>
SimResult run_all(const DensePlan& dp, const TreeShape& shape, const Topology& topo, const NetworkModel& net,
                  const ComputeModel& cpu, Recording keep, const typename Proc::Make& make,
                  std::chrono::steady_clock::time_point t0) {
  using clock = std::chrono::steady_clock;
  std::vector<TreePlan> plans = build_tree_plans_virtual(dp.set, shape, topo);
  std::vector<std::unique_ptr<Process>> procs;
  procs.reserve(plans.size());
  for (TreePlan& p : plans) procs.push_back(std::make_unique<Proc>(std::move(p), make));
  const auto t1 = clock::now();
  Simulator sim(topo, net, cpu, dp.nroles, dense_categories(), keep);
  sim.run(procs);
  const auto t2 = clock::now();
  return sim.result(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
}

void check_size(const Grid25D& g, const Topology& topo) {
  g.validate(topo.size());
}

}  // namespace

SimResult simulate_matmul(const MatmulShape& s, const Grid25D& g, const TreeShape& shape, const Topology& topo,
                          const NetworkModel& net, const ComputeModel& cpu, Recording keep) {
  const auto t0 = std::chrono::steady_clock::now();
  check_size(g, topo);
  const DensePlan dp = matmul_plan(s, g);
  const MatmulLayout layout(s, g);
  const SummaPanels panels = summa_panels(s, g);
  using P = DenseProcess<MatmulMachine<MatmulCosts>, MatmulCosts>;
  return run_all<P>(dp, shape, topo, net, cpu, keep, [&](P& p, Simulator& sim, int rank) {
    p.backend.sim = &sim;
    p.backend.rank = rank;
    p.backend.L = &layout;
    p.backend.P = &panels;
    p.backend.x = g.x_of(rank);
    p.backend.y = g.y_of(rank);
    p.machine.emplace(dp, p.plan_, panels, g, rank, p.backend);
  }, t0);
}

SimResult simulate_lu(std::int64_t n, std::int64_t nb, const Grid25D& g, const TreeShape& shape, const Topology& topo,
                      const NetworkModel& net, const ComputeModel& cpu, Recording keep, std::int64_t piece,
                      bool tournament) {
  const auto t0 = std::chrono::steady_clock::now();
  check_size(g, topo);
  const DensePlan dp = lu_plan(n, nb, g, piece, -1, tournament);
  const auto lu_costs = [&](LuCosts& b, Simulator& sim, int rank) {
    b.sim = &sim;
    b.rank = rank;
    b.R = Cyclic1D{n, nb, g.pr};
    b.C = Cyclic1D{n, nb, g.pc};
    b.x = g.x_of(rank);
    b.y = g.y_of(rank);
  };
  if (tournament) {
    const PivotModel piv(n, nb, g);
    using P = DenseProcess<TournamentLuMachine<TournamentCosts>, TournamentCosts>;
    return run_all<P>(dp, shape, topo, net, cpu, keep, [&](P& p, Simulator& sim, int rank) {
      lu_costs(p.backend, sim, rank);
      p.backend.z = g.z_of(rank);
      p.backend.piv = &piv;
      p.backend.g = &g;
      p.backend.nids = dp.nids;
      p.backend.after_key = dp.nids + p.backend.R.nblocks();
      p.machine.emplace(dp, p.plan_, n, nb, g, rank, p.backend);
    }, t0);
  }
  using P = DenseProcess<LuMachine<LuCosts>, LuCosts>;
  return run_all<P>(dp, shape, topo, net, cpu, keep, [&](P& p, Simulator& sim, int rank) {
    lu_costs(p.backend, sim, rank);
    p.machine.emplace(dp, p.plan_, n, nb, g, rank, p.backend);
  }, t0);
}

}  // namespace commsolve::sim
