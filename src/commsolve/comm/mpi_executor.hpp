// Executes a CommPlan on MPI with persistent requests (PETSc's sfbasic habit): requests are
// created once and restarted with MPI_Startall every time the plan runs.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/inner_comm.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// Owns a duplicate of a communicator (so plan tags never meet user messages), with
// MPI_ERRORS_RETURN so that failures become exceptions. Move-only.
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm parent);  // collective on parent
  ~OwnedComm();
  OwnedComm(OwnedComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  OwnedComm& operator=(OwnedComm&&) = delete;
  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A set of requests started and completed together: persistent (created once, restarted
// with MPI_Startall), or, when persistent requests are switched off (see
// persistent_requests()), posted afresh with MPI_Isend/MPI_Irecv at every start from the
// same description. The destructor of an active set waits for it (it never frees requests
// that are in flight). Move-only.
class RequestSet {
 public:
  RequestSet() = default;
  ~RequestSet();
  RequestSet(RequestSet&& o) noexcept
      : reqs_(std::move(o.reqs_)), ops_(std::move(o.ops_)), active_(o.active_), persistent_(o.persistent_) {
    o.active_ = false;
    o.reqs_.clear();
  }
  RequestSet(const RequestSet&) = delete;
  RequestSet& operator=(const RequestSet&) = delete;
  RequestSet& operator=(RequestSet&&) = delete;

  // A send or receive of `count` doubles at `buf`.
  void add(bool send, double* buf, std::int64_t count, int peer, int tag, MPI_Comm comm);
  std::size_t size() const { return ops_.size(); }
  void start();
  // Waits for all; `statuses` receives one status per request, in the order they were added.
  void wait(std::vector<MPI_Status>& statuses);

 private:
  struct Op {
    bool send;
    double* buf;
    int count, peer, tag;
    MPI_Comm comm;
  };
  std::vector<MPI_Request> reqs_;
  std::vector<Op> ops_;
  bool active_ = false;
  bool persistent_ = true;
};

// Whether executors use persistent requests (the default). Set COMMSOLVE_PERSISTENT=0 to
// post ordinary non-blocking ones instead: Open MPI 4.1's pml_monitoring, the referee of
// our recorded statistics, does not count persistent sends. Read once per process.
bool persistent_requests();

// Runs one rank's plan. Construction is collective on `comm` (the first object on a
// communicator duplicates it; see InnerComm); begin/end
// and reverse_begin/reverse_end must be called by every rank of the communicator, in the same
// order, since each rank's plan matches its peers'. Every entry of the index space carries
// `block` consecutive doubles (e.g. one per right-hand side: a row-major n x block array).
class HaloExecutor {
 public:
  HaloExecutor(CommPlan plan, const Topology& topo, MPI_Comm comm, int block = 1);

  // Forward: owned values -> halo. `owned` is borrowed until end() returns and must not change.
  void begin(const double* owned);
  // Completes the exchange (and any later steps); returns the halo (n_halo x block values).
  const double* end();

  // Reverse: the halo holds contributions (write them into halo()); they are summed into the
  // owners' entries. reverse_end adds into `owned` (n_owned x block values) and returns.
  double* halo() { return tail_.data(); }
  void reverse_begin();
  void reverse_end(double* owned);

  const CommPlan& plan() const { return plan_; }
  int block() const { return block_; }
  // What actually went through MPI since construction or the last reset (bytes of received
  // messages from MPI_Get_count, sources from the statuses), per step.
  const CommStats& recorded_forward() const { return forward_stats_; }
  const CommStats& recorded_reverse() const { return reverse_stats_; }
  std::int64_t forward_runs() const { return forward_runs_; }
  std::int64_t reverse_runs() const { return reverse_runs_; }
  void reset_recorded();

 private:
  struct StepRequests {
    RequestSet reqs;          // receives first, then sends
    std::size_t nrecv = 0;
  };
  void setup_forward();
  void setup_reverse();
  void pack(std::size_t step, const double* owned);
  void start_forward(std::size_t step);
  void finish_forward(std::size_t step);
  void start_reverse(std::size_t step);
  void finish_reverse(std::size_t step, double* owned);
  // Entry i (>= n_owned) of the halo and work areas; any entry, owned ones read from `owned`.
  double* space(std::int64_t i) { return tail_.data() + (i - plan_.n_owned) * block_; }
  const double* entry(std::int64_t i, const double* owned) {
    return i < plan_.n_owned ? owned + i * block_ : space(i);
  }

  CommPlan plan_;
  int block_ = 1;
  Topology topo_;
  InnerComm comm_;
  std::vector<double> tail_;                  // halo followed by the work area
  std::vector<std::vector<double>> sendbuf_;  // per step: packed forward sends
  std::vector<std::vector<double>> recvbuf_;  // per step: reverse receives (same layout)
  std::vector<char> owned_only_;              // per step: every send index is an owned entry
  std::vector<StepRequests> forward_, reverse_;
  std::vector<MPI_Status> statuses_;
  const double* owned_ = nullptr;
  CommStats forward_stats_, reverse_stats_;
  std::int64_t forward_runs_ = 0, reverse_runs_ = 0;
  bool reverse_ready_ = false;
};

}  // namespace commsolve
