#include "commsolve/comm/comm_stats.hpp"

#include <stdexcept>
#include <string>

namespace commsolve {

StepStats& StepStats::operator+=(const StepStats& o) {
  for (int w = 0; w < 2; ++w) {
    msgs_sent[w] += o.msgs_sent[w];
    bytes_sent[w] += o.bytes_sent[w];
    msgs_recv[w] += o.msgs_recv[w];
    bytes_recv[w] += o.bytes_recv[w];
  }
  return *this;
}

StepStats CommStats::total() const {
  StepStats t;
  for (const auto& s : steps) t += s;
  return t;
}

CommStats CommStats::reversed() const {
  CommStats r;
  r.steps.reserve(steps.size());
  for (const auto& s : steps) {
    StepStats t;
    t.msgs_sent = s.msgs_recv;
    t.bytes_sent = s.bytes_recv;
    t.msgs_recv = s.msgs_sent;
    t.bytes_recv = s.bytes_sent;
    r.steps.push_back(t);
  }
  return r;
}

CommStats plan_stats(const CommPlan& plan, const Topology& topo, int value_bytes) {
  if (topo.size() != plan.nranks)
    throw std::invalid_argument("comm stats: plan is for " + std::to_string(plan.nranks) +
                                " ranks, topology has " + std::to_string(topo.size()));
  CommStats stats;
  for (const PlanStep& st : plan.steps) {
    StepStats s;
    for (std::size_t i = 0; i < st.send_peers.size(); ++i)
      s.add_send(locality(topo, plan.rank, st.send_peers[i]), st.send_count(i) * value_bytes);
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i)
      s.add_recv(locality(topo, plan.rank, st.recv_peers[i]), st.recv_count[i] * value_bytes);
    stats.steps.push_back(s);
  }
  return stats;
}

}  // namespace commsolve
