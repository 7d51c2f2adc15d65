#include "sim/dense_sim.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "dense/lu_machine.hpp"
#include "dense/matmul_machine.hpp"

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
    expected_ = machine->expected();
    machine->start();
    work();
  }
  void receive(Simulator&, const Message& msg) override {
    ++arrived_;
    machine->arrive(msg.key, nullptr, msg.values);
    work();
  }
  void resume(Simulator&, int) override {
    resuming_ = false;
    work();
  }
  bool done() const override { return arrived_ == expected_ && machine->done(); }

  TreePlan plan_;
  Backend backend;
  std::optional<Machine> machine;

 private:
  void work() {
    if (!resuming_ && machine->idle()) {
      resuming_ = true;
      sim_->resume(rank_);
    }
  }
  Make make_;
  Simulator* sim_ = nullptr;
  int rank_ = 0;
  std::int64_t expected_ = 0, arrived_ = 0;
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
                      const NetworkModel& net, const ComputeModel& cpu, Recording keep, std::int64_t piece) {
  const auto t0 = std::chrono::steady_clock::now();
  check_size(g, topo);
  const DensePlan dp = lu_plan(n, nb, g, piece);
  using P = DenseProcess<LuMachine<LuCosts>, LuCosts>;
  return run_all<P>(dp, shape, topo, net, cpu, keep, [&](P& p, Simulator& sim, int rank) {
    p.backend.sim = &sim;
    p.backend.rank = rank;
    p.backend.R = Cyclic1D{n, nb, g.pr};
    p.backend.C = Cyclic1D{n, nb, g.pc};
    p.backend.x = g.x_of(rank);
    p.backend.y = g.y_of(rank);
    p.machine.emplace(dp, p.plan_, n, nb, g, rank, p.backend);
  }, t0);
}

}  // namespace commsolve::sim
