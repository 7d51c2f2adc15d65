#include "commsolve/sim/simulator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace commsolve::sim {

Simulator::Simulator(const Topology& topo, const NetworkModel& net, const ComputeModel& cpu, int steps,
                     std::vector<std::string> categories, Recording keep)
    : topo_(topo),
      net_(net),
      cpu_(cpu),
      categories_(std::move(categories)),
      keep_timeline_(keep.timeline),
      keep_trace_(keep.trace) {
  if (keep.trace) trace_.assign(static_cast<std::size_t>(topo.size()), {});
  const std::size_t P = static_cast<std::size_t>(topo.size());
  clock_.assign(P, 0.0);
  nic_free_.assign(P, 0.0);
  node_free_.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
  if (torus_links()) link_free_.assign(static_cast<std::size_t>(topo.num_links()), 0.0);
  RankTime zero;
  zero.by_category.assign(categories_.size() + 1, 0.0);
  times_.assign(P, zero);
  waits_.assign(P, {});
  last_interval_.assign(P, -1);
  recorded_.assign(P, CommStats{std::vector<StepStats>(static_cast<std::size_t>(steps))});
}

double Simulator::latency(int where, int proto, Receives how) const {
  return std::max(0.0, net_.alpha[where][proto] - 2 * net_.overhead) +
         (how == Receives::any_source ? net_.any_source : 0.0);
}

double Simulator::end_cost(Receives how) const {
  return net_.overhead + (how == Receives::any_source ? net_.engine_overhead : 0.0);
}

int Simulator::level(int a, int b) const {
  if (!topo_.same_node(a, b)) return 2;
  if (net_.socket_size > 0 && topo_.local_rank(a) / net_.socket_size == topo_.local_rank(b) / net_.socket_size)
    return 0;
  return 1;
}

int Simulator::slot(int category) const {
  const int n = static_cast<int>(categories_.size());
  if (category == idle) return n;
  if (category < 0 || category >= n)
    throw std::logic_error("simulator: time category " + std::to_string(category) + " outside the workload's " +
                           std::to_string(n));
  return category;
}

void Simulator::spend(int rank, double seconds, int category) {
  if (seconds <= 0) return;
  category = slot(category);
  if (keep_timeline_) {
    std::int64_t& last = last_interval_[rank];
    if (last >= 0 && timeline_[last].category == category && timeline_[last].end == clock_[rank]) {
      timeline_[last].end += seconds;
    } else {
      last = static_cast<std::int64_t>(timeline_.size());
      timeline_.push_back({rank, category, clock_[rank], clock_[rank] + seconds});
    }
  }
  clock_[rank] += seconds;
  times_[rank].by_category[category] += seconds;
}

void Simulator::trace_calc(int rank, double seconds) {
  if (!keep_trace_ || seconds <= 0) return;
  std::vector<TraceOp>& t = trace_[static_cast<std::size_t>(rank)];
  if (!t.empty() && t.back().kind == TraceOp::calc) {
    t.back().seconds += seconds;
  } else {
    t.push_back({TraceOp::calc, -1, 0, 0, seconds});
  }
}

void Simulator::set_working_set(int rank, double bytes) {
  const int node_ranks = static_cast<int>(topo_.ranks_on_node(topo_.node_of(rank)).size());
  times_[rank].in_cache = cpu_.fits_cache(bytes, node_ranks);
}

void Simulator::compute(int rank, double flops, double bytes, int category, bool triangular) {
  const double t = cpu_.time(flops, bytes, times_[rank].in_cache ? cpu_.cache_bandwidth : cpu_.bandwidth, triangular);
  ++times_[rank].calls;
  trace_calc(rank, t);
  spend(rank, t, category);
}

void Simulator::copy(int rank, double bytes, int category) {
  if (bytes <= 0) return;
  trace_calc(rank, bytes / cpu_.copy_rate);
  spend(rank, bytes / cpu_.copy_rate, category);
}

void Simulator::gemm(int rank, std::int64_t m, std::int64_t n, std::int64_t k, int category, double share) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  compute(rank, share * 2.0 * static_cast<double>(m * n * k), 8.0 * static_cast<double>(m * k + k * n + 2 * m * n),
          category);
}

void Simulator::engine_send(int rank, Send msg) {
  copy(rank, 16.0 * static_cast<double>(msg.values), msg.category);
  msg.receives = Receives::any_source;
  send(rank, msg);
}

void Simulator::search(int rank, std::int64_t entries, int category) {
  if (entries <= 0 || net_.gamma <= 0) return;
  const double t = net_.gamma * static_cast<double>(entries);
  trace_calc(rank, t);
  spend(rank, t, category);
}

void Simulator::resume(int rank) {
  Message m;
  m.src = m.dest = rank;
  m.arrival = m.sent = clock_[rank];  // >= every event handled so far: the heap stays in time order
  m.seq = seq_++;
  m.resume = true;
  heap_.push(m);
}

void Simulator::send(int rank, const Send& msg) {
  spend(rank, end_cost(msg.receives), msg.category);
  const int dest = msg.dest;
  const std::int64_t bytes = msg.bytes;
  const int where = level(rank, dest);
  const int proto = net_.protocol(bytes);
  const double rate = net_.rate[where][proto];
  // The rank's interface takes s / R_b (its own messages in the rank's order); an inter-node
  // message also needs its node's injection, shared by the node's ranks: booked when the
  // departure event is handled, in simulated-time order across the node's ranks.
  const bool links = where == 2 && torus_links();
  const double start = links ? clock_[rank] : std::max(clock_[rank], nic_free_[rank]);
  const double left = links ? start : start + static_cast<double>(bytes) / rate;
  if (!links) nic_free_[rank] = left;
  Message m;
  static_cast<Send&>(m) = msg;
  m.src = rank;
  m.sent = clock_[rank];
  m.seq = seq_++;
  if (links || (where == 2 && net_.injection[proto] > 0)) {
    m.departing = true;
    m.arrival = start;  // >= every event handled so far: the heap stays in time order
    m.left = left;
  } else {
    m.arrival = left + latency(where, proto, msg.receives);
  }
  if (keep_trace_) trace_[static_cast<std::size_t>(rank)].push_back({TraceOp::send, dest, bytes, m.seq, 0.0});
  ++times_[rank].sent;
  recorded_[rank].steps[msg.step].add_send(locality(topo_, rank, dest), bytes);
  heap_.push(m);
}

void Simulator::run(std::vector<std::unique_ptr<Process>>& procs) {
  if (procs.size() != clock_.size())
    throw std::invalid_argument("simulator: " + std::to_string(procs.size()) + " processes for " +
                                std::to_string(clock_.size()) + " ranks");
  for (std::size_t r = 0; r < procs.size(); ++r) procs[r]->start(*this, static_cast<int>(r));
  // Arrivals are handled in time order; a rank busy past an arrival handles it when free.
  // Everything a handler sends arrives later than the handled message, so no event can
  // arrive before one already handled.
  while (!heap_.empty()) {
    Message m = heap_.top();
    heap_.pop();
    ++events_;
    if (m.departing) {  // the node's injection, shared in time order; then on its way
      const double s = static_cast<double>(m.bytes);
      const int where = level(m.src, m.dest), proto = net_.protocol(m.bytes);
      double ready = m.left;
      if (net_.injection[proto] > 0) {
        double& node = node_free_[topo_.node_of(m.src)];
        node = std::max(node, m.arrival) + s / net_.injection[proto];
        ready = std::max(ready, node);
      }
      if (torus_links()) {  // the route's links, all at once from when the last is free
        route_.clear();
        topo_.route(topo_.node_of(m.src), topo_.node_of(m.dest), route_);
        double t0 = m.arrival;
        for (std::int64_t l : route_) t0 = std::max(t0, link_free_[static_cast<std::size_t>(l)]);
        const double through = t0 + s / net_.link_rate;
        for (std::int64_t l : route_) link_free_[static_cast<std::size_t>(l)] = through;
        ready = std::max(ready, through + net_.hop_latency * static_cast<double>(route_.size()));
      }
      m.arrival = ready + latency(where, proto, m.receives);
      m.departing = false;
      heap_.push(m);
      continue;
    }
    const int r = m.dest;
    if (m.resume) {
      procs[r]->resume(*this, r);
      continue;
    }
    if (m.arrival > clock_[r]) {  // the rank had nothing to do until this message came
      waits_[r].push_back({m.arrival, m.src, m.sent});
      spend(r, m.arrival - clock_[r], procs[r]->waiting_category());
    }
    if (procs[r]->done())
      throw std::logic_error("simulator: rank " + std::to_string(r) + " finished its program but was sent a message "
                             "(from rank " + std::to_string(m.src) + ")");
    spend(r, end_cost(m.receives), m.category);
    if (keep_trace_) trace_[static_cast<std::size_t>(r)].push_back({TraceOp::recv, m.src, m.bytes, m.seq, 0.0});
    ++times_[r].received;
    recorded_[r].steps[m.step].add_recv(locality(topo_, m.src, r), m.bytes);
    procs[r]->receive(*this, m);
  }
  std::string stuck;
  for (std::size_t r = 0; r < procs.size(); ++r) {
    times_[r].finish = clock_[r];
    if (!procs[r]->done() && stuck.size() < 200) stuck += (stuck.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!stuck.empty()) throw std::logic_error("simulator: ranks left waiting for messages that never come: " + stuck);
}

double Simulator::predicted() const {
  double t = 0;
  for (const RankTime& rt : times_) t = std::max(t, rt.finish);
  return t;
}

SimResult Simulator::result(double build_seconds, double run_seconds) const {
  SimResult res;
  res.categories = categories_;
  res.categories.push_back("idle");
  res.times = times_;
  res.recorded = recorded_;
  res.critical_path = critical_path();
  res.timeline = timeline_;
  res.trace = trace_;
  res.predicted = predicted();
  res.events = events_;
  res.build_seconds = build_seconds;
  res.run_seconds = run_seconds;
  return res;
}

std::vector<std::pair<int, double>> Simulator::critical_path() const {
  std::vector<std::pair<int, double>> path;
  int r = 0;
  for (std::size_t q = 0; q < times_.size(); ++q)
    if (times_[q].finish > times_[r].finish) r = static_cast<int>(q);
  double t = times_.empty() ? 0 : times_[r].finish;
  while (path.size() < 1000000) {
    path.emplace_back(r, t);
    const auto& w = waits_[r];
    auto it = std::upper_bound(w.begin(), w.end(), t, [](double v, const Wait& x) { return v < x.end; });
    if (it == w.begin()) break;
    --it;  // the last wait of r that ended by t
    r = it->src;
    t = it->sent;
  }
  return path;
}

}  // namespace commsolve::sim
