#include "trees/engine.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "trees/collective_machine.hpp"

namespace commsolve {

namespace {

double key_bits(std::int64_t key) {
  double d;
  std::memcpy(&d, &key, sizeof d);
  return d;
}

std::int64_t bits_key(double d) {
  std::int64_t k;
  std::memcpy(&k, &d, sizeof k);
  return k;
}

}  // namespace

MessageEngine::MessageEngine(MPI_Comm comm, const Topology& topo, std::int64_t max_values, int max_posted,
                             int nkinds)
    : comm_(comm), topo_(topo), rank_(comm_.rank()), max_values_(max_values) {
  require(max_posted >= 1, "engine: at least one receive must be posted");
  require(topo_.size() == comm_.size(), "engine: topology size differs from the communicator's");
  rbuf_.assign(static_cast<std::size_t>(max_posted), std::vector<double>(static_cast<std::size_t>(max_values + 1)));
  rreq_.assign(static_cast<std::size_t>(max_posted), MPI_REQUEST_NULL);
  stats_.steps.resize(static_cast<std::size_t>(nkinds));
}

void MessageEngine::reset_recorded() {
  const std::size_t k = stats_.steps.size();
  stats_ = CommStats();
  stats_.steps.resize(k);
}

void MessageEngine::reserve(std::int64_t max_values, int max_posted) {
  for (MPI_Request r : rreq_)
    if (r != MPI_REQUEST_NULL) throw std::logic_error("engine: reserve() while receives are posted");
  if (max_posted > 0 && static_cast<std::size_t>(max_posted) != rreq_.size()) {
    rreq_.assign(static_cast<std::size_t>(max_posted), MPI_REQUEST_NULL);
    rbuf_.resize(static_cast<std::size_t>(max_posted));
  }
  if (max_values != max_values_) rbuf_.clear();
  max_values_ = max_values;
  rbuf_.resize(rreq_.size());
  for (auto& b : rbuf_) b.resize(static_cast<std::size_t>(max_values + 1));
}

// Takes back every posted receive (after an error, so that none is left behind).
void MessageEngine::cancel_posted() {
  for (auto& r : rreq_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}

MessageEngine::~MessageEngine() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  cancel_posted();
  if (!sreq_.empty()) MPI_Waitall(static_cast<int>(sreq_.size()), sreq_.data(), MPI_STATUSES_IGNORE);
}

void MessageEngine::post(std::size_t slot) {
  check_mpi(MPI_Irecv(rbuf_[slot].data(), static_cast<int>(max_values_ + 1), MPI_DOUBLE, MPI_ANY_SOURCE, tag_,
                      comm_.get(), &rreq_[slot]),
            "MPI_Irecv");
}

void MessageEngine::send(int dest, std::int64_t key, const double* values, std::int64_t n, int kind) {
  std::vector<double> buf(static_cast<std::size_t>(n + 1));
  buf[0] = key_bits(key);
  std::copy(values, values + n, buf.begin() + 1);
  sbuf_.push_back(std::move(buf));
  sreq_.push_back(MPI_REQUEST_NULL);
  check_mpi(MPI_Isend(sbuf_.back().data(), static_cast<int>(n + 1), MPI_DOUBLE, dest, tag_, comm_.get(),
                      &sreq_.back()),
            "MPI_Isend");
  stats_.steps[kind].add_send(locality(topo_, rank_, dest), 8 * (n + 1));
  if (sreq_.size() >= 256) reap_sends(false);
}

// Frees the buffers of completed sends (all of them when `all`).
void MessageEngine::reap_sends(bool all) {
  if (all) {
    check_mpi(MPI_Waitall(static_cast<int>(sreq_.size()), sreq_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    sreq_.clear();
    sbuf_.clear();
    return;
  }
  std::size_t keep = 0;
  for (std::size_t i = 0; i < sreq_.size(); ++i) {
    int done = 0;
    check_mpi(MPI_Test(&sreq_[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) {
      sreq_[keep] = sreq_[i];
      sbuf_[keep].swap(sbuf_[i]);
      ++keep;
    }
  }
  sreq_.resize(keep);
  sbuf_.resize(keep);
}

void MessageEngine::run(std::int64_t expected, const Handler& on_arrival) {
  std::int64_t posted = 0, arrived = 0;
  for (std::size_t s = 0; s < rreq_.size() && posted < expected; ++s, ++posted) post(s);
  while (arrived < expected) {
    int slot = MPI_UNDEFINED;
    MPI_Status st;
    check_mpi(MPI_Waitany(static_cast<int>(rreq_.size()), rreq_.data(), &slot, &st), "MPI_Waitany");
    if (slot == MPI_UNDEFINED) throw std::logic_error("engine: no receive posted while messages are expected");
    int ndoubles = 0;
    check_mpi(MPI_Get_count(&st, MPI_DOUBLE, &ndoubles), "MPI_Get_count");
    ++arrived;
    // The handler reads the message in place (it only sends); the slot is reposted after.
    const double* msg = rbuf_[slot].data();
    const std::int64_t key = bits_key(msg[0]);
    const int kind = kind_of_ ? kind_of_(key) : 0;
    stats_.steps[kind].add_recv(locality(topo_, rank_, st.MPI_SOURCE), 8 * static_cast<std::int64_t>(ndoubles));
    try {
      on_arrival(st.MPI_SOURCE, key, msg + 1, ndoubles - 1);
    } catch (...) {  // leave no receive posted behind the error
      cancel_posted();
      throw;
    }
    if (posted < expected) {
      post(static_cast<std::size_t>(slot));
      ++posted;
    }
  }
  reap_sends(true);
}

namespace {

// The numeric backend of CollectiveMachine: values move through the engine and add up in
// `data`.
struct EngineCollectives {
  MessageEngine& engine;
  std::vector<std::vector<double>>& data;
  void send(int dest, std::int64_t c, std::size_t slot, std::int64_t n, int kind) {
    engine.send(dest, c, data[slot].data(), n, kind);
  }
  void store(std::size_t slot, const double* values, std::int64_t n) {
    std::copy(values, values + n, data[slot].begin());
  }
  void add(std::size_t slot, const double* values, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) data[slot][static_cast<std::size_t>(k)] += values[k];
  }
};

}  // namespace

CommStats run_collectives(const CollectiveSet& set, const TreePlan& plan, std::vector<std::vector<double>>& data,
                          const Topology& topo, MPI_Comm comm, int max_posted) {
  require(data.size() == plan.index.size(), "collectives: " + std::to_string(data.size()) +
                                                " data arrays for " + std::to_string(plan.index.size()) +
                                                " collectives of this rank");
  for (std::size_t i = 0; i < plan.index.size(); ++i) {
    const std::size_t c = static_cast<std::size_t>(plan.index[i]);
    require(static_cast<std::int64_t>(data[i].size()) == set.count[c],
            "collectives: data for collective " + std::to_string(set.id[c]) + " has " +
                std::to_string(data[i].size()) + " values, expected " + std::to_string(set.count[c]));
  }
  std::int64_t max_values = 0;
  for (std::int64_t n : set.count) max_values = std::max(max_values, n);
  MessageEngine engine(comm, topo, max_values, max_posted);
  engine.set_kind_of([&](std::int64_t c) { return static_cast<int>(set.kind[static_cast<std::size_t>(c)]); });
  EngineCollectives backend{engine, data};
  CollectiveMachine<EngineCollectives> machine(set, plan, backend);
  machine.start();
  engine.run(machine.expected(),
             [&](int, std::int64_t key, const double* values, std::int64_t n) { machine.arrive(key, values, n); });
  return engine.recorded();
}

}  // namespace commsolve
