#include "commsolve/sim/halo_sim.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "commsolve/core/error.hpp"

namespace commsolve::sim {

const std::vector<std::string>& halo_categories() {
  static const std::vector<std::string> names = {"comm"};
  return names;
}

namespace {

constexpr int comm = 0;  // halo_categories()

class HaloProcess : public Process {
 public:
  HaloProcess(const CommPlan& plan, int block, int repeat) : plan_(plan), block_(block), repeat_(repeat) {
    const std::size_t k = plan.steps.size() * static_cast<std::size_t>(repeat);
    arrived_.assign(k, 0);
  }
  void start(Simulator& sim, int rank) override {
    rank_ = rank;
    advance(sim);
  }
  void receive(Simulator& sim, const Message& msg) override {
    if (msg.op < 0 || static_cast<std::size_t>(msg.op) >= arrived_.size())
      throw std::logic_error("simulated halo exchange: rank " + std::to_string(rank_) + " got a message of step " +
                             std::to_string(msg.op) + " beyond its plan");
    if (posted_ && msg.op == current_op()) {
      match(sim, msg.src);
    } else {
      unexpected_[msg.op].push_back(msg.src);  // its receive is not posted yet
    }
    ++arrived_[static_cast<std::size_t>(msg.op)];  // into the space directly: no copy
    advance(sim);
  }
  bool done() const override { return run_ == repeat_; }
  int waiting_category() const override { return comm; }

 private:
  // Runs steps while their receives are in; returns when one waits.
  void advance(Simulator& sim) {
    const std::size_t nsteps = plan_.steps.size();
    while (run_ < repeat_) {
      if (step_ < nsteps) {
        const PlanStep& st = plan_.steps[step_];
        const int op = static_cast<int>(static_cast<std::size_t>(run_) * nsteps + step_);
        if (!posted_) {
          // The receives are posted first, in the plan's order; each finds its message if it
          // came early, searching the unexpected ones in their order of arrival.
          queue_.assign(st.recv_peers.begin(), st.recv_peers.end());
          if (auto it = unexpected_.find(op); it != unexpected_.end()) {
            for (const int peer : st.recv_peers)
              if (const std::int64_t searched = take(it->second, peer)) {
                sim.search(rank_, searched, comm);
                take(queue_, peer);
              }
            unexpected_.erase(it);
          }
          sim.copy(rank_, 16.0 * static_cast<double>(st.send_idx.size()) * block_, comm);  // pack
          for (std::size_t i = 0; i < st.send_peers.size(); ++i) {
            const std::int64_t values = st.send_count(i) * block_;
            sim.send(rank_, {.dest = st.send_peers[i], .op = op, .step = static_cast<int>(step_), .values = values,
                             .bytes = 8 * values, .category = comm});
          }
          posted_ = true;
        }
        if (arrived_[static_cast<std::size_t>(op)] < static_cast<int>(st.recv_peers.size())) return;
        ++step_;
        posted_ = false;
        continue;
      }
      sim.copy(rank_, 16.0 * static_cast<double>(plan_.copy_src.size()) * block_, comm);
      step_ = 0;
      ++run_;
    }
  }

  int current_op() const { return static_cast<int>(static_cast<std::size_t>(run_) * plan_.steps.size() + step_); }
  // Removes `src` from a queue (posted receives or unexpected messages, in order); returns
  // the entries searched to reach it, 0 if it is not there.
  static std::int64_t take(std::vector<int>& queue, int src) {
    const auto it = std::find(queue.begin(), queue.end(), src);
    if (it == queue.end()) return 0;
    const std::int64_t searched = (it - queue.begin()) + 1;
    queue.erase(it);
    return searched;
  }
  // A message of the current step finds its receive in the posted queue: gamma for every
  // entry up to it.
  void match(Simulator& sim, int src) {
    const std::int64_t searched = take(queue_, src);
    if (searched == 0)
      throw std::logic_error("simulated halo exchange: rank " + std::to_string(rank_) + " got a message from " +
                             std::to_string(src) + " it posted no receive for");
    sim.search(rank_, searched, comm);
  }

  const CommPlan& plan_;
  int block_, repeat_;
  int rank_ = 0, run_ = 0;
  std::size_t step_ = 0;
  bool posted_ = false;
  std::vector<int> arrived_;  // per (run, step): receives in
  std::vector<int> queue_;    // the current step's posted receives not yet matched (their sources)
  std::unordered_map<int, std::vector<int>> unexpected_;  // per (run, step): sources of early messages
};

}  // namespace

SimResult simulate_halo(const std::vector<CommPlan>& plans, const Topology& topo, const NetworkModel& net,
                        const ComputeModel& cpu, int block, int repeat, Recording keep) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  require(static_cast<int>(plans.size()) == topo.size(),
          "simulated halo exchange: " + std::to_string(plans.size()) + " plans for a topology of " +
              std::to_string(topo.size()) + " ranks");
  require(block >= 1 && repeat >= 1, "simulated halo exchange: block and repeat must be at least 1");
  const std::size_t steps = plans.empty() ? 0 : plans[0].steps.size();
  for (std::size_t r = 0; r < plans.size(); ++r) {
    require(plans[r].rank == static_cast<int>(r) && plans[r].nranks == topo.size(),
            [&] {
              return "simulated halo exchange: plan " + std::to_string(r) + " is not rank " + std::to_string(r) +
                     "'s of " + std::to_string(topo.size());
            });
    require(plans[r].steps.size() == steps, "simulated halo exchange: the plans have different numbers of steps "
                                            "(one strategy for every rank)");
    plans[r].validate();
  }
  std::vector<std::unique_ptr<Process>> procs;
  procs.reserve(plans.size());
  for (const CommPlan& p : plans) procs.push_back(std::make_unique<HaloProcess>(p, block, repeat));
  const auto t1 = clock::now();
  Simulator sim(topo, net, cpu, static_cast<int>(std::max<std::size_t>(steps, 1)), halo_categories(), keep);
  sim.run(procs);
  const auto t2 = clock::now();
  return sim.result(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
}

}  // namespace commsolve::sim
