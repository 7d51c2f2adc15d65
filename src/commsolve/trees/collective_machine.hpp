// The message-driven logic of restricted collectives, written once over a backend: the MPI
// run (run_collectives, trees/engine.cpp) moves and adds the values, the simulator
// (sim/trees_sim.cpp) prices the same steps. A broadcast's root sends to its children at
// the start and every other member forwards on arrival; a reduction member sends its sum to
// its parent once every child's contribution has arrived.
//
// Backend: send(dest, collective, slot, values, kind) — kind 0 broadcast, 1 reduction;
// store(slot, values, n) — a broadcast's values arrived; add(slot, values, n) — a child's
// contribution arrived (values may be null in a simulation).
#pragma once

#include <cstdint>
#include <stdexcept>

#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

template <class Backend>
class CollectiveMachine {
 public:
  CollectiveMachine(const CollectiveSet& set, const TreePlan& plan, Backend& backend)
      : set_(set), plan_(plan), be_(backend), arrivals_(plan_arrivals(plan, set)) {}

  // Messages this rank receives in all.
  std::int64_t expected() const { return arrivals_.expected; }

  // What needs no message: broadcast roots send, reductions without children finish.
  void start() {
    for (std::size_t i = 0; i < plan_.index.size(); ++i) {
      if (is_broadcast(i)) {
        if (plan_.links[i].parent < 0) forward(i);
      } else if (arrivals_.waiting[i] == 0) {
        finish_reduce(i);
      }
    }
  }

  // A message of collective `key` with `n` values arrived.
  void arrive(std::int64_t key, const double* values, std::int64_t n) {
    const std::int64_t i = key >= 0 && key < static_cast<std::int64_t>(set_.size()) ? arrivals_.slot_of[key] : -1;
    if (i < 0) throw std::logic_error("collectives: message for a collective this rank is not in");
    const std::size_t slot = static_cast<std::size_t>(i);
    if (n != set_.count[static_cast<std::size_t>(key)])
      throw std::logic_error("collectives: message of the wrong length");
    if (is_broadcast(slot)) {
      be_.store(slot, values, n);
      forward(slot);
    } else {
      be_.add(slot, values, n);
      if (--arrivals_.waiting[slot] == 0) finish_reduce(slot);
    }
  }

 private:
  std::size_t collective(std::size_t i) const { return static_cast<std::size_t>(plan_.index[i]); }
  bool is_broadcast(std::size_t i) const {
    return set_.kind[collective(i)] == static_cast<std::int8_t>(CollectiveKind::broadcast);
  }
  void forward(std::size_t i) {  // broadcast: pass the values on to the children
    const std::size_t c = collective(i);
    for (int ch : plan_.links[i].children) be_.send(ch, static_cast<std::int64_t>(c), i, set_.count[c], 0);
  }
  void finish_reduce(std::size_t i) {  // reduction: all children in, pass the sum up
    const std::size_t c = collective(i);
    if (plan_.links[i].parent >= 0) be_.send(plan_.links[i].parent, static_cast<std::int64_t>(c), i, set_.count[c], 1);
  }

  const CollectiveSet& set_;
  const TreePlan& plan_;
  Backend& be_;
  PlanArrivals arrivals_;
};

}  // namespace commsolve
