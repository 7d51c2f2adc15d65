// A sequential discrete-event simulator of message-driven programs on many ranks, in the
// spirit of LogGOPSim (Hoefler, Schneider, Lumsdaine, HPDC'10): one heap of message
// arrivals; per rank a CPU clock; per rank and per node a network interface.
//
// A message of s bytes from rank r to rank q (locality intra-socket, intra-node or inter-node,
// protocol by size: short, eager, rendezvous) costs the sender's CPU the overhead o, leaves once r's NIC is
// free (s / R_b of it), and for inter-node traffic once the node's injection (s / R_N) is
// free too; it arrives L = alpha - 2 o after it left; the receiver's CPU pays o, and gamma
// per entry its match searches where a process says (the halo exchange's known-source
// receives; link contention, delta, is left out, except on a torus: NetworkModel::link_rate).
// alpha and R_b are the profile's
// (commsolve calibrate fits them), so an isolated message takes alpha + s / R_b, as
// measured. Arrival order decides the order of any-source receives. Computation costs
// the kernel's call overhead plus max(flops / F, bytes / B), B the cache's rate for a rank
// whose working set fits its share of the last-level cache and the memory's otherwise; a
// copy or pack of message data (small, recently touched: in cache) bytes / C.
//
// What a rank does is a Process: it is started at time 0 and handed every message that
// arrives for it (it may compute and send while handling one). The simulator accounts each
// rank's time as compute, communication (by category) and idle.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::sim {

struct NetworkModel {
  // [locality: 0 intra-socket, 1 intra-node, 2 inter-node][protocol: 0 short, 1 eager, 2 rendezvous]
  double alpha[3][3] = {{1e-6, 1e-6, 1e-6}, {1e-6, 1e-6, 1e-6}, {2e-6, 2e-6, 2e-6}};
  double rate[3][3] = {{1e10, 1e10, 1e10}, {1e10, 1e10, 1e10}, {5e9, 5e9, 5e9}};
  double injection[3] = {0, 0, 0};  // per node, inter-node; 0: no limit beyond the rank's
  std::int64_t short_max = 512, eager_max = 8192;
  double overhead = 0.3e-6;  // CPU seconds per message end
  // Added to the latency of a message taken by an any-source engine (posted any-source
  // receives completed by MPI_Waitany, as the solve phases and restricted collectives
  // receive) over one received from a known source (a halo exchange, an inter-grid step,
  // the moves of b and x): matching cost.
  double any_source = 0.0;
  // CPU seconds per message end (sent or handled) in commsolve's message engine beyond o:
  // its bookkeeping (buffers, keys, counters) and MPI progress; fitted to a 2-rank solve.
  double engine_overhead = 0.0;
  // CPU seconds per entry a message's match searches in a queue of receives posted from
  // known sources (one queue, in posting order, as MPICH keeps it; the cost models' gamma).
  double gamma = 0.0;
  int socket_size = 0;       // ranks per socket (by local rank on the node); 0: no socket level
  // A torus network (used where the topology has a torus, Topology::torus): bytes/s one way
  // on one link (0: no link model) and seconds per router hop. An off-node message then
  // leaves at once (the node's DMA feeds its links; the node's injection rate, if given, is
  // shared by its messages), reserves every link of its dimension-ordered route from the time
  // the last of them is free until s / link_rate later (messages sharing a link wait for it:
  // contention), and arrives hop_latency per hop plus L after it is through.
  double link_rate = 0.0;
  double hop_latency = 0.0;
  int protocol(std::int64_t bytes) const { return bytes <= short_max ? 0 : bytes <= eager_max ? 1 : 2; }
};

struct ComputeModel {
  double flop_rate = 1e10;      // per rank, flop/s
  double bandwidth = 1e10;      // per rank, bytes/s from memory
  double call_overhead = 0.0;   // seconds per kernel call
  double copy_rate = 1e10;      // per rank, bytes/s of copies and packs of message data (in cache)
  // The last-level cache: bytes per node (0: not modelled) and the rate a rank reads from it.
  // A rank whose working set (the matrix data its kernels stream, e.g. its factor blocks)
  // fits its share of its node's cache (cache_bytes / the node's ranks) keeps it there from
  // one solve to the next and streams it at cache_bandwidth; a larger one streams from
  // memory at bandwidth (a cyclic sweep over more than the cache misses throughout).
  double cache_bytes = 0.0;
  double cache_bandwidth = 0.0;
  // flop/s of a small triangular solve (dtrsm on a diagonal block with few right-hand sides:
  // a chain of dependent dot products, slower per flop than a product); 0: flop_rate.
  double triangular_rate = 0.0;
  bool fits_cache(double working_set, int node_ranks) const {
    return cache_bytes > 0 && cache_bandwidth > 0 && working_set * std::max(node_ranks, 1) <= cache_bytes;
  }
  double time(double flops, double bytes, double rate, bool triangular = false) const {
    const double f = triangular && triangular_rate > 0 ? triangular_rate : flop_rate;
    return call_overhead + std::max(flops / f, bytes / rate);
  }
};

// What a simulation keeps besides the times (both grow with the events: small runs only).
struct Recording {
  bool timeline = false;  // per rank, intervals by category
  bool trace = false;     // per rank, the operations in order (GOAL export)
};

// How a message is received: from a known source (a halo exchange's pre-posted receives, a
// blocking MPI_Recv from its peer) or through the any-source message engine
// (NetworkModel::any_source and engine_overhead added to that message).
enum class Receives { known_source, any_source };

// What a rank's time goes to is named by the workload that runs on the engine: each lists
// its categories (an enum of its own and their names, e.g. the solves' fp, xy_comm, z_comm,
// redistribute) when it makes the Simulator; the engine adds one more, `idle`, after them:
// the time a rank waited with nothing to do (unless its process says what it waited for).
inline constexpr int idle = -1;  // the engine's own category, wherever a category is taken

// A message a process sends (Simulator::send).
struct Send {
  int dest = 0;
  int op = 0;               // the program step it belongs to (as an MPI tag)
  int step = 0;             // the statistics step it is counted in
  std::int64_t key = 0;     // what it carries (a supernode, a collective, a plan step)
  std::int64_t values = 0;  // doubles carried (for the receiver's bookkeeping)
  std::int64_t bytes = 0;
  int category = idle;      // what the sender's and the receiver's overheads count as
  Receives receives = Receives::known_source;
};

// A message in flight: what was sent, by whom, and when it arrives.
struct Message : Send {
  int src = 0;
  double sent = 0, arrival = 0;
  std::int64_t seq = 0;     // send order, to break ties in arrival time
  // Waiting for its node's injection: `arrival` is then when it reaches the node's
  // interface (the event's time) and `left` when the rank's interface was done with it.
  bool departing = false;
  double left = 0;
  bool resume = false;  // not a message: the rank's process asked to go on (Simulator::resume)
};

class Simulator;

class Process {
 public:
  virtual ~Process() = default;
  virtual void start(Simulator& sim, int rank) = 0;
  virtual void receive(Simulator& sim, const Message& msg) = 0;
  virtual bool done() const = 0;
  // The category an idle wait counts as while the rank waits (e.g. an inter-grid receive).
  virtual int waiting_category() const { return idle; }
  // Called when a resume the process asked for (Simulator::resume) comes up.
  virtual void resume(Simulator&, int) {}
};

struct RankTime {
  double finish = 0;
  std::vector<double> by_category;  // the workload's categories, then idle
  std::int64_t sent = 0, received = 0;
  std::int64_t calls = 0;  // compute() calls (kernel calls, each paying the call overhead)
  bool in_cache = false;   // its working set fits its share of the cache (Simulator::set_working_set)
};

// One operation of a rank's trace (for export to LogGOPSim's GOAL format): a computation
// (seconds), or a message sent or received (bytes, the peer, the message's sequence number).
struct TraceOp {
  enum Kind : std::int8_t { calc = 0, send = 1, recv = 2 } kind;
  int peer;
  std::int64_t bytes;
  std::int64_t tag;
  double seconds;
};

struct Interval {  // for timelines of small runs
  int rank;
  int category;
  double begin, end;
};

// What a simulation gives back (Simulator::result).
struct SimResult {
  std::vector<std::string> categories;  // the workload's, then "idle"; RankTime::by_category's order
  std::vector<RankTime> times;       // per rank
  std::vector<CommStats> recorded;   // per rank and statistics step
  std::vector<std::pair<int, double>> critical_path;
  std::vector<Interval> timeline;
  std::vector<std::vector<TraceOp>> trace;  // per rank, in the order done (when kept)
  double predicted = 0;
  std::int64_t events = 0;
  double build_seconds = 0, run_seconds = 0;  // wall time of this process
};

class Simulator {
 public:
  // `steps`: how many statistics steps messages are counted in; `categories`: the names of
  // the workload's time categories (ids 0, 1, ... as its processes pass them; idle added).
  Simulator(const Topology& topo, const NetworkModel& net, const ComputeModel& cpu, int steps,
            std::vector<std::string> categories, Recording keep = {});

  // Runs every rank's process to completion. Throws std::logic_error naming the ranks left
  // waiting if the messages run out first (a deadlock in the program).
  void run(std::vector<std::unique_ptr<Process>>& procs);

  // The API processes use while the simulator hands them control (on `rank`).
  double now(int rank) const { return clock_[rank]; }
  // `triangular`: a triangular solve, at ComputeModel::triangular_rate.
  void compute(int rank, double flops, double bytes, int category, bool triangular = false);
  // Before run(): the bytes `rank`'s kernels stream each time through (its working set),
  // which decide whether compute() reads them from the cache or from memory.
  void set_working_set(int rank, double bytes);
  void send(int rank, const Send& msg);
  // Hands `rank`'s process control again (Process::resume) once every message that arrived
  // for it by its present clock has been handled: a message-driven engine that checks for
  // messages between pieces of work (MessageEngine::run's idle work) does one piece, asks to
  // resume, and so lets the messages that came meanwhile in before the next piece.
  void resume(int rank);
  // A local copy or pack of `bytes` (memory traffic, counted as the given category).
  void copy(int rank, double bytes, int category);
  // An m x n x k dense product (2 m n k flops over its three operands, `share` of that for a
  // triangular solve or factorization), counted as `category`; nothing if any extent is 0.
  void gemm(int rank, std::int64_t m, std::int64_t n, std::int64_t k, int category, double share = 1.0);
  // A message of the message engine (trees/engine.hpp): it copies the values out (16 bytes per
  // value, counted as the message's category), then sends key + values to any-source receives.
  void engine_send(int rank, Send msg);
  // Matching a message against a queue of posted receives (or a receive against the
  // unexpected messages): `entries` searched, gamma each.
  void search(int rank, std::int64_t entries, int category);

  const std::vector<RankTime>& times() const { return times_; }
  // What went through the simulated network, per rank and statistics step (as CommStats:
  // intra-node and inter-node), counted as messages are sent and received.
  const std::vector<CommStats>& recorded() const { return recorded_; }
  const std::vector<Interval>& timeline() const { return timeline_; }
  std::int64_t events() const { return events_; }
  double predicted() const;  // the slowest rank's finish
  // The chain of messages that ends at the slowest rank: each hop a rank and the time its
  // wait for the message ended (latest first), as far back as waits go.
  std::vector<std::pair<int, double>> critical_path() const;
  // Everything above, after run(), with the wall times of building the programs and running.
  SimResult result(double build_seconds, double run_seconds) const;

 private:
  void spend(int rank, double seconds, int category);
  int slot(int category) const;  // idle after the workload's categories
  int level(int a, int b) const;
  double latency(int where, int proto, Receives how) const;  // L = alpha - 2 o, plus any-source matching
  double end_cost(Receives how) const;  // CPU seconds at either end of a message
  struct Later {
    bool operator()(const Message& a, const Message& b) const {
      return a.arrival != b.arrival ? a.arrival > b.arrival : a.seq > b.seq;
    }
  };
  Topology topo_;
  NetworkModel net_;
  ComputeModel cpu_;
  std::vector<std::string> categories_;
  bool keep_timeline_, keep_trace_;
  std::vector<std::vector<TraceOp>> trace_;
  void trace_calc(int rank, double seconds);
  std::vector<double> clock_, nic_free_, node_free_, link_free_;
  std::vector<std::int64_t> route_;  // scratch
  bool torus_links() const { return net_.link_rate > 0 && topo_.has_torus(); }
  std::vector<RankTime> times_;
  std::vector<CommStats> recorded_;
  std::vector<Interval> timeline_;
  std::vector<std::int64_t> last_interval_;  // per rank, to merge adjacent intervals of one category
  struct Wait {  // a rank idled until a message came: when, from whom, sent when
    double end;
    int src;
    double sent;
  };
  std::vector<std::vector<Wait>> waits_;
  std::priority_queue<Message, std::vector<Message>, Later> heap_;
  std::int64_t seq_ = 0, events_ = 0;
};

}  // namespace commsolve::sim
