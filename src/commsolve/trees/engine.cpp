#include "commsolve/trees/engine.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <string>

#include "commsolve/core/error.hpp"
#include "commsolve/trees/collective_machine.hpp"

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
  require(max_posted >= 0, "engine: the number of receives posted ahead cannot be negative");
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
  require(max_posted == 0 || window_ == 0, "engine: receives posted ahead do not go with a send window");
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
  // Queued sends (left by an error) are never started; those in flight are completed.
  if (!sreq_.empty()) MPI_Waitall(static_cast<int>(sreq_.size()), sreq_.data(), MPI_STATUSES_IGNORE);
}

void MessageEngine::post(std::size_t slot) {
  check_mpi(MPI_Irecv(rbuf_[slot].data(), static_cast<int>(max_values_ + 1), MPI_DOUBLE, MPI_ANY_SOURCE, tag_,
                      comm_.get(), &rreq_[slot]),
            "MPI_Irecv");
}

void MessageEngine::send(int dest, std::int64_t key, const double* a, std::int64_t na, const double* b,
                         std::int64_t nb, int kind) {
  const std::int64_t n = na + nb;
  if (n + 1 > std::numeric_limits<int>::max())
    throw std::length_error("engine: a message of " + std::to_string(n) + " values, more than an MPI count holds");
  if (kind < 0 || kind >= static_cast<int>(stats_.steps.size()))
    throw std::logic_error("engine: a message of unknown kind " + std::to_string(kind));
  Outgoing out{dest, tag_, kind, pool_.take(n + 1)};
  out.buf[0] = key_bits(key);
  if (na) std::copy(a, a + na, out.buf.begin() + 1);
  if (nb) std::copy(b, b + nb, out.buf.begin() + 1 + na);
  if (window_ > 0 && (static_cast<std::int64_t>(sreq_.size()) >= window_ || !queued_.empty())) {
    queued_.push_back(std::move(out));
    return;
  }
  start(std::move(out));
  if (window_ == 0 && sreq_.size() >= 256) test_each();
}

int MessageEngine::kind_of(std::int64_t key) const {
  const int kind = kind_of_ ? kind_of_(key) : 0;
  if (kind < 0 || kind >= static_cast<int>(stats_.steps.size()))
    throw std::logic_error("engine: a message of unknown kind (key " + std::to_string(key) + ")");
  return kind;
}

void MessageEngine::set_window(std::int64_t window) {
  require(window >= 0, "engine: a negative send window");
  // Queued sends start inside run()'s probe loop: with receives posted ahead, run() blocks in
  // MPI_Waitany and a queued send a peer waits for would never start.
  require(window == 0 || rreq_.empty(), "engine: a send window needs probe mode (max_posted = 0)");
  window_ = window;
}

// Without a window: every outstanding send tested on its own. Each test also drives Open
// MPI's progress engine, which a rank inside a long handler otherwise never enters; the 2D
// solve at 1x2 runs twice as long here when the tests are batched (measured: 0.37 s against
// 0.19 s, poisson2d9:1000).
void MessageEngine::test_each() {
  std::size_t keep = 0;
  for (std::size_t i = 0; i < sreq_.size(); ++i) {
    int done = 0;
    check_mpi(MPI_Test(&sreq_[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      pool_.give(std::move(sbuf_[i]));
    } else {
      sreq_[keep] = sreq_[i];
      sbuf_[keep].swap(sbuf_[i]);
      ++keep;
    }
  }
  sreq_.resize(keep);
  sbuf_.resize(keep);
}

void MessageEngine::start(Outgoing&& out) {
  const std::int64_t n = static_cast<std::int64_t>(out.buf.size());
  sbuf_.push_back(std::move(out.buf));
  sreq_.push_back(MPI_REQUEST_NULL);
  check_mpi(MPI_Isend(sbuf_.back().data(), static_cast<int>(n), MPI_DOUBLE, out.dest, out.tag, comm_.get(),
                      &sreq_.back()),
            "MPI_Isend");
  stats_.steps[out.kind].add_send(locality(topo_, rank_, out.dest), 8 * n);
}

// Takes the completed sends out (their buffers back to the pool) and, with a window, starts
// queued ones in their place. Returns whether sends remain queued.
bool MessageEngine::pump() {
  if (!sreq_.empty()) {
    int ndone = 0;
    done_.resize(sreq_.size());
    check_mpi(MPI_Testsome(static_cast<int>(sreq_.size()), sreq_.data(), &ndone, done_.data(), MPI_STATUSES_IGNORE),
              "MPI_Testsome");
    for (int i = 0; i < ndone; ++i) pool_.give(std::move(sbuf_[done_[i]]));  // their requests are null now
    std::size_t keep = 0;
    for (std::size_t i = 0; i < sreq_.size(); ++i)
      if (sreq_[i] != MPI_REQUEST_NULL) {
        sreq_[keep] = sreq_[i];
        sbuf_[keep].swap(sbuf_[i]);
        ++keep;
      }
    sreq_.resize(keep);
    sbuf_.resize(keep);
  }
  while (!queued_.empty() && static_cast<std::int64_t>(sreq_.size()) < window_) {
    start(std::move(queued_.front()));
    queued_.pop_front();
  }
  return !queued_.empty();
}

// Completes every send, the queued ones started as the window allows.
void MessageEngine::reap_sends() {
  while (pump()) {
    int ndone = 0;  // the window is full: wait for one to finish, then start more
    done_.resize(sreq_.size());
    check_mpi(MPI_Waitsome(static_cast<int>(sreq_.size()), sreq_.data(), &ndone, done_.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitsome");
    for (int i = 0; i < ndone; ++i) pool_.give(std::move(sbuf_[done_[i]]));
  }
  check_mpi(MPI_Waitall(static_cast<int>(sreq_.size()), sreq_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  for (auto& b : sbuf_) pool_.give(std::move(b));
  sreq_.clear();
  sbuf_.clear();
}

// Each message probed, then received into a buffer of its size (max_posted = 0). Between
// messages: queued sends are started as the window allows and idle work is done; the loop
// blocks for a message only when neither is left (a queued send may be what a peer waits for).
void MessageEngine::run_probed(std::int64_t expected, const Handler& on_arrival, const std::function<bool()>* idle,
                               const std::function<bool()>* finished) {
  bool more = idle != nullptr;  // idle work may be left
  const auto over = [&](std::int64_t arrived) { return finished ? (*finished)() : arrived >= expected; };
  for (std::int64_t arrived = 0; !over(arrived); ++arrived) {
    // Completed sends give their buffers back at each arrival: left until 256 were outstanding,
    // a factorization's copies of its panels piled up while the receivers were busy (on a
    // 2x4 grid, 41-80 MB a rank beside factors of 50-80 MB).
    if (!sreq_.empty()) pump();
    MPI_Message msg;
    MPI_Status st;
    int found = 0;
    while ((more || !queued_.empty()) && !found) {
      check_mpi(MPI_Improbe(MPI_ANY_SOURCE, tag_, comm_.get(), &found, &msg, &st), "MPI_Improbe");
      if (found) break;
      if (!queued_.empty()) pump();
      if (more) more = (*idle)();  // it may queue sends too
      if (finished && (*finished)()) break;
    }
    if (!found) {
      if (finished && (*finished)()) break;
      check_mpi(MPI_Mprobe(MPI_ANY_SOURCE, tag_, comm_.get(), &msg, &st), "MPI_Mprobe");
    }
    int ndoubles = 0;
    check_mpi(MPI_Get_count(&st, MPI_DOUBLE, &ndoubles), "MPI_Get_count");
    if (ndoubles < 1) throw std::logic_error("engine: a message without its key");
    rbuf_probed_.resize(static_cast<std::size_t>(ndoubles));
    check_mpi(MPI_Mrecv(rbuf_probed_.data(), ndoubles, MPI_DOUBLE, &msg, &st), "MPI_Mrecv");
    const std::int64_t key = bits_key(rbuf_probed_[0]);
    const int kind = kind_of(key);
    stats_.steps[kind].add_recv(locality(topo_, rank_, st.MPI_SOURCE), 8 * static_cast<std::int64_t>(ndoubles));
    on_arrival(st.MPI_SOURCE, key, rbuf_probed_.data() + 1, ndoubles - 1);
    more = idle != nullptr;  // an arrival may have made new idle work
  }
  if (idle)  // its sends belong to this run (and its tag)
    while ((*idle)()) {
    }
  reap_sends();
}

void MessageEngine::run_until(const std::function<bool()>& finished, const Handler& on_arrival,
                              const std::function<bool()>& idle) {
  require(rreq_.empty(), "engine: idle work needs probe mode (max_posted = 0)");
  run_probed(0, on_arrival, &idle, &finished);
}

void MessageEngine::run(std::int64_t expected, const Handler& on_arrival, const std::function<bool()>& idle) {
  require(rreq_.empty(), "engine: idle work needs probe mode (max_posted = 0)");
  run_probed(expected, on_arrival, &idle);
}

void MessageEngine::run(std::int64_t expected, const Handler& on_arrival) {
  if (rreq_.empty()) return run_probed(expected, on_arrival, nullptr);
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
    const int kind = kind_of(key);
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
  reap_sends();
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
            [&] {
              return "collectives: data for collective " + std::to_string(set.id[c]) + " has " +
                     std::to_string(data[i].size()) + " values, expected " + std::to_string(set.count[c]);
            });
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
