// A message-driven engine on non-blocking point-to-point MPI (no collectives, no
// sub-communicators): a bounded number of any-source receives stays posted (or, in probe
// mode, each message is received at its size), every arrival is handed to a callback, sends
// go out at once (in probe mode with a window: as the window allows, queued meanwhile).
// Restricted collectives run on it here; the message-driven triangular solves
// (direct/solve_executor) and the factorization (direct/factor_grid) drive the same loop.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/mpi_executor.hpp"
#include "commsolve/core/buffer_pool.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

class MessageEngine {
 public:
  // Collective on comm (duplicates it). Messages this rank receives hold a 64-bit key
  // followed by at most `max_values` doubles (a longer one is an MPI truncation error); at
  // most `max_posted` receives are posted at a time; statistics are kept for `nkinds` kinds
  // of message. With max_posted = 0 nothing is posted ahead: each message is probed and
  // received at its own size (for messages from a few doubles to megabytes, where buffers
  // of the largest size posted ahead would cost more memory than the messages).
  MessageEngine(MPI_Comm comm, const Topology& topo, std::int64_t max_values, int max_posted = 64, int nkinds = 2);
  ~MessageEngine();
  MessageEngine(const MessageEngine&) = delete;
  MessageEngine& operator=(const MessageEngine&) = delete;

  // Sends key + values to `dest` under the current tag (the data is copied): now, or with a
  // window once earlier sends complete (inside run()). `kind` indexes the statistics.
  void send(int dest, std::int64_t key, const double* values, std::int64_t n, int kind) {
    send(dest, key, values, n, nullptr, 0, kind);
  }
  // The same with the values in two pieces (`a` then `b`), sent as one message.
  void send(int dest, std::int64_t key, const double* a, std::int64_t na, const double* b, std::int64_t nb, int kind);
  // Receives `expected` messages, calling on_arrival(source, key, values, n) for each as it
  // comes (the callback may send; `values` is valid only during the call), then completes
  // every send made so far.
  using Handler = std::function<void(int source, std::int64_t key, const double* values, std::int64_t n)>;
  void run(std::int64_t expected, const Handler& on_arrival);
  // Probe mode only: between messages, while none is waiting, calls idle() (one piece of
  // work that can wait, e.g. a trailing update) until it returns false; then blocks for the
  // next message. Arrivals are handled between pieces, not after all of them; after the
  // last arrival the idle work is finished before the sends are completed.
  void run(std::int64_t expected, const Handler& on_arrival, const std::function<bool()>& idle);
  // Probe mode only: the same until finished() holds, for runs whose messages are not all
  // known at the start (a rank may learn of some from others).
  void run_until(const std::function<bool()>& finished, const Handler& on_arrival, const std::function<bool()>& idle);
  // What went through MPI, per kind, since construction (sends counted when handed to MPI);
  // kind_of(key) classifies arrivals (a kind out of range is an error).
  const CommStats& recorded() const { return stats_; }
  void reset_recorded();
  void set_kind_of(std::function<int(std::int64_t)> f) { kind_of_ = std::move(f); }
  // Between runs only (no receive posted): a new message size limit (and, if positive, a
  // new number of receives kept posted), and the MPI tag of what follows, so that messages
  // of consecutive phases cannot be mistaken for each other.
  void reserve(std::int64_t max_values, int max_posted = 0);
  void set_tag(int tag) { tag_ = tag; }
  // Probe mode only: at most `window` sends handed to MPI at once (0: no limit), the others
  // queued here and started as earlier ones complete. A peer busy computing may leave
  // thousands of messages unreceived, and Open MPI's progress engine then walks its pending
  // sends at every call; a window keeps that list short.
  void set_window(std::int64_t window);

 private:
  void post(std::size_t slot);
  void run_probed(std::int64_t expected, const Handler& on_arrival, const std::function<bool()>* idle,
                  const std::function<bool()>* finished = nullptr);
  struct Outgoing {
    int dest, tag, kind;
    std::vector<double> buf;
  };
  void start(Outgoing&& out);
  int kind_of(std::int64_t key) const;
  bool pump();
  void test_each();
  void reap_sends();

  void cancel_posted();

  OwnedComm comm_;
  Topology topo_;
  int rank_ = 0;
  std::int64_t max_values_;
  int tag_ = 7;
  std::vector<std::vector<double>> rbuf_;  // [key as double bits | values]
  std::vector<MPI_Request> rreq_;
  std::vector<std::vector<double>> sbuf_;
  std::vector<MPI_Request> sreq_;
  std::deque<Outgoing> queued_;            // messages not started yet (a window is full)
  std::int64_t window_ = 0;
  BufferPool pool_;                        // buffers of completed sends, for the next ones
  std::vector<int> done_;                  // scratch of MPI_Testsome
  std::vector<double> rbuf_probed_;        // the message received in probe mode
  CommStats stats_;
  std::function<int(std::int64_t)> kind_of_;
};

// Runs every collective of `plan` once (collective on comm: all ranks call it with their
// own plan of the same set). data[i] belongs to plan.index[i]: a broadcast root's input or
// a receiver's output (count values); a reduction participant's contribution, and at the
// root the sum. Returns the recorded statistics (step 0 broadcasts, step 1 reductions).
CommStats run_collectives(const CollectiveSet& set, const TreePlan& plan, std::vector<std::vector<double>>& data,
                          const Topology& topo, MPI_Comm comm, int max_posted = 64);

}  // namespace commsolve
