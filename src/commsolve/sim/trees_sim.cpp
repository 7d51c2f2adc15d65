#include "commsolve/sim/trees_sim.hpp"

#include <chrono>
#include <memory>
#include <optional>

#include "commsolve/trees/collective_machine.hpp"

namespace commsolve::sim {

const std::vector<std::string>& collectives_categories() {
  static const std::vector<std::string> names = {"compute", "comm"};
  return names;
}

namespace {

enum : int { compute = 0, comm };  // collectives_categories()

class CollectivesProcess : public Process {
 public:
  CollectivesProcess(const CollectiveSet& set, TreePlan plan) : set_(set), plan_(std::move(plan)) {}
  void start(Simulator& sim, int rank) override {
    backend_ = Backend{&sim, rank};
    machine_.emplace(set_, plan_, backend_);
    expected_ = machine_->expected();
    machine_->start();
  }
  void receive(Simulator&, const Message& msg) override {
    ++arrived_;
    machine_->arrive(msg.key, nullptr, msg.values);
  }
  bool done() const override { return arrived_ == expected_; }
  int waiting_category() const override { return comm; }

 private:
  struct Backend {
    Simulator* sim = nullptr;
    int rank = 0;
    void send(int dest, std::int64_t c, std::size_t, std::int64_t n, int kind) {
      sim->engine_send(rank, {.dest = dest, .step = kind, .key = c, .values = n, .bytes = 8 * (n + 1), .category = comm});
    }
    void store(std::size_t, const double*, std::int64_t n) { sim->copy(rank, 16.0 * static_cast<double>(n), compute); }
    void add(std::size_t, const double*, std::int64_t n) {
      sim->compute(rank, static_cast<double>(n), 24.0 * static_cast<double>(n), compute);
    }
  };
  const CollectiveSet& set_;
  TreePlan plan_;
  Backend backend_;
  std::optional<CollectiveMachine<Backend>> machine_;
  std::int64_t expected_ = 0, arrived_ = 0;
};

}  // namespace

SimResult simulate_collectives(const CollectiveSet& set, const TreeShape& shape, const Topology& topo,
                               const NetworkModel& net, const ComputeModel& cpu, Recording keep) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::vector<TreePlan> plans = build_tree_plans_virtual(set, shape, topo);
  std::vector<std::unique_ptr<Process>> procs;
  procs.reserve(plans.size());
  for (TreePlan& p : plans) procs.push_back(std::make_unique<CollectivesProcess>(set, std::move(p)));
  const auto t1 = clock::now();
  Simulator sim(topo, net, cpu, 2, collectives_categories(), keep);
  sim.run(procs);
  const auto t2 = clock::now();
  return sim.result(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
}

}  // namespace commsolve::sim
