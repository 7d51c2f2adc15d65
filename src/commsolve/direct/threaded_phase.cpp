#include "commsolve/direct/threaded_phase.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "commsolve/core/error.hpp"

namespace commsolve {

void check_threaded_phase(const PhaseSchedule& ph) {
  require(ph.order.empty(),
          "distributed solve: threads > 1 on a grid whose layers hold several ranks run message-driven phases only; "
          "3d-baseline takes its upper levels one supernode at a time: use 3d, 3d-baseline-async or 2d there, or "
          "one thread");
}

namespace {

class ThreadedPhase {
 public:
  ThreadedPhase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                const PhaseSchedule& ph, MessageEngine& engine, BlockKernels& kernels, double* sol, int nrhs)
      : sym_(sym), blocks_(blocks), store_(store), layout_(store.layout), ph_(ph), engine_(engine), kernels_(kernels),
        sol_(sol), nrhs_(nrhs), entries_(static_cast<std::int64_t>(ph.key.size())),
        pending_(new std::atomic<std::int32_t>[static_cast<std::size_t>(entries_)]),
        lock_(new SpinLock[static_cast<std::size_t>(entries_)]) {
    check_threaded_phase(ph);
    acc_.assign(static_cast<std::size_t>(ph.sum_size * nrhs), 0.0);
    xoff_.assign(static_cast<std::size_t>(entries_), -1);
    std::int64_t received = 0;  // broadcasts whose solution comes in a message: kept until used
    for (std::int64_t e = 0; e < entries_; ++e) {
      pending_[e].store(ph.is_broadcast(e) ? 0 : ph.waiting[e], std::memory_order_relaxed);
      if (ph.is_broadcast(e) && ph.parent[e] >= 0) xoff_[e] = received, received += ph.width[e];
    }
    xbuf_.assign(static_cast<std::size_t>(received * nrhs), 0.0);
  }

  void run(ThreadTeam& team, int tag) {
    set_phase_engine(engine_, ph_, tag);
    start();
    team.run([&](int id) {
      if (id != 0) return work();
      try {
        Scratch mine;
        engine_.run(
            ph_.expected, [&](int, std::int64_t key, const double* values, std::int64_t n) { arrive(key, values, n); },
            [&] { return idle(mine); });
      } catch (...) {
        finish();
        throw;
      }
      finish();
    });
    if (solved_.load() != ph_.solved_here)
      throw std::logic_error("solve phase (threads): " + std::to_string(ph_.solved_here - solved_.load()) +
                             " supernodes left unsolved after all messages arrived");
  }

 private:
  struct Task {
    std::int32_t entry = -1;
    const double* x = nullptr;  // a broadcast's solution to apply; nullptr: a complete sum to fire
  };
  struct Outgoing {
    int dest;
    std::int64_t key;
    std::vector<double> values;
    bool broadcast;
  };
  struct Scratch {
    std::vector<double> out, xg, tmp;
  };

  std::int64_t width(std::int64_t s) const { return sym_.sn_start[s + 1] - sym_.sn_start[s]; }
  double* sum_of(std::int32_t e) { return acc_.data() + ph_.sum_off[e] * nrhs_; }

  // The work that needs no message: complete sums and the solutions already known (U context).
  void start() {
    for (std::int64_t e = 0; e < entries_; ++e)
      if (!ph_.is_broadcast(e) && ph_.waiting[e] == 0) tasks_.push_back({static_cast<std::int32_t>(e), nullptr});
    for (std::int32_t e : ph_.starts) {
      const double* x = sol_ + store_.sol_off[store_.diag_index[ph_.supernode(e)]] * nrhs_;
      forward(e, x);
      tasks_.push_back({e, x});
    }
  }

  // The calling thread, between messages: hands the queued sends to MPI and takes one task.
  // True while anything is left to do here (the engine blocks for a message only on false:
  // then no thread works, so none can queue a send a peer waits for).
  bool idle(Scratch& scratch) {
    std::vector<Outgoing> sends;
    Task task;
    bool active;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sends.swap(out_);
      if (!tasks_.empty()) {
        task = tasks_.front();
        tasks_.pop_front();
        ++busy_;
      }
      active = busy_ > 0;
    }
    for (const Outgoing& o : sends)
      engine_.send(o.dest, o.key, o.values.data(), static_cast<std::int64_t>(o.values.size()),
                   ph_.upper ? (o.broadcast ? u_broadcast : u_reduce) : (o.broadcast ? l_broadcast : l_reduce));
    if (failed_.load()) throw std::runtime_error("solve phase (threads): a worker failed");
    if (task.entry >= 0) {
      execute(task, scratch);
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
      return true;
    }
    if (active && sends.empty()) std::this_thread::yield();  // others work: leave them the core (threads > cores)
    return active || !sends.empty();
  }

  void work() {
    Scratch scratch;
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !tasks_.empty() || done_; });
        if (tasks_.empty()) return;
        task = tasks_.front();
        tasks_.pop_front();
        ++busy_;
      }
      try {
        execute(task, scratch);
      } catch (...) {
        failed_.store(true);
        std::lock_guard<std::mutex> lock(mutex_);
        --busy_;
        throw;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
  }

  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    ready_.notify_all();
  }

  void push(Task task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(task);
    }
    ready_.notify_one();
  }
  void send(int dest, std::int64_t key, const double* x, std::int64_t n, bool broadcast) {
    Outgoing o{dest, key, std::vector<double>(x, x + n), broadcast};
    std::lock_guard<std::mutex> lock(mutex_);
    out_.push_back(std::move(o));
  }

  // On the calling thread (the engine's callback): a solution to keep and apply, or a
  // child's partial sum to add.
  void arrive(std::int64_t key, const double* values, std::int64_t len) {
    const std::int64_t e = ph_.entry(key);
    if (e < 0 || len != ph_.width[e] * nrhs_)
      throw std::logic_error("solve phase (threads): unexpected message (key " + std::to_string(key) + ")");
    const auto i = static_cast<std::int32_t>(e);
    if (ph_.is_broadcast(e)) {
      double* x = xbuf_.data() + xoff_[e] * nrhs_;
      std::copy(values, values + len, x);
      forward(i, x);
      push({i, x});
      return;
    }
    lock_[e].lock();
    double* acc = sum_of(i);
    for (std::int64_t a = 0; a < len; ++a) acc[a] += values[a];
    lock_[e].unlock();
    contributed(i);
  }

  void execute(const Task& task, Scratch& scratch) {
    if (task.x != nullptr) use(task.entry, task.x, scratch);
    else fire(task.entry, scratch);
  }

  void forward(std::int32_t e, const double* x) {
    for (std::int64_t c = ph_.child_ptr[e]; c < ph_.child_ptr[e + 1]; ++c)
      send(ph_.children[c], ph_.key[e], x, ph_.width[e] * nrhs_, true);
  }

  // A contribution is in: the last one makes the sum a task (not fired here: firing applies a
  // solution, which would reuse the scratch the caller is still reading, and could recurse
  // up a whole chain of supernodes).
  void contributed(std::int32_t e) {
    if (pending_[e].fetch_sub(1, std::memory_order_acq_rel) == 1) push({e, nullptr});
  }

  // Every contribution to entry e's sum is in: up its tree, or settled at the root (solved,
  // and its solution sent on and applied here).
  void fire(std::int32_t e, Scratch& scratch) {
    if (ph_.parent[e] >= 0) {
      send(ph_.parent[e], ph_.key[e], sum_of(e), ph_.width[e] * nrhs_, false);
      return;
    }
    const std::int32_t d = ph_.diag[e];
    const std::int64_t w = width(layout_.diag_sn[d]);
    double* x = sol_ + store_.sol_off[d] * nrhs_;
    const double* inv = store_.values.data() + layout_.diag_off[d] + (ph_.upper ? w * w : 0);
    settle_solution(kernels_, w, nrhs_, sum_of(e), ph_.solves[e] ? inv : nullptr, x, scratch.tmp);
    if (!ph_.solves[e]) return;  // a context supernode of an L phase keeps its partial sum
    solved_.fetch_add(1);
    const std::int32_t b = ph_.bcast[e];
    if (b >= 0) {
      forward(b, x);
      use(b, x, scratch);
    }
  }

  // This rank's blocks that use the solution x of broadcast entry b's supernode.
  void use(std::int32_t b, const double* x, Scratch& scratch) {
    const std::int32_t loc = ph_.local[b];
    if (loc < 0) return;
    if (!ph_.upper) {
      const std::int64_t M = layout_.l_rows[loc];
      scratch.out.resize(static_cast<std::size_t>(M * nrhs_));
      kernels_.lower_panel(M, width(layout_.l_col[loc]), nrhs_, store_.values.data() + layout_.l_panel[loc], x,
                           scratch.out.data());
      for (std::int64_t p = layout_.l_ptr[loc]; p < layout_.l_ptr[loc + 1]; ++p) {
        const std::int32_t e = ph_.l_target[p];
        lock_[e].lock();
        add_lower_rows(sym_, blocks_, layout_.l_block[p], scratch.out.data() + layout_.l_row[p], M, sum_of(e), nrhs_);
        lock_[e].unlock();
        contributed(e);
      }
      return;
    }
    for (std::int64_t q = ph_.u_ptr[loc]; q < ph_.u_ptr[loc + 1]; ++q) {
      const std::int32_t e = ph_.u_target[q];
      const std::int64_t pos = ph_.u_pos[q], blk = layout_.u_block[pos], wk = width(blocks_.col[blk]);
      const std::int64_t m = gather_upper_rows(sym_, blocks_, blk, x, nrhs_, scratch.xg);
      scratch.out.assign(static_cast<std::size_t>(wk * nrhs_), 0.0);
      kernels_.upper_block(wk, m, nrhs_, store_.values.data() + layout_.u_off[pos], scratch.xg.data(),
                           scratch.out.data());
      double* acc = sum_of(e);
      lock_[e].lock();
      for (std::int64_t a = 0; a < wk * nrhs_; ++a) acc[a] += scratch.out[a];
      lock_[e].unlock();
      contributed(e);
    }
  }

  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  const BlockStore& store_;
  const LocalLayout2D& layout_;
  const PhaseSchedule& ph_;
  MessageEngine& engine_;
  BlockKernels& kernels_;
  double* sol_;
  int nrhs_;
  std::int64_t entries_;
  std::unique_ptr<std::atomic<std::int32_t>[]> pending_;  // per reduction: contributions still to come
  std::unique_ptr<SpinLock[]> lock_;                     // per reduction: its sum
  std::vector<double> acc_;                              // the partial sums (PhaseSchedule::sum_off)
  std::vector<std::int64_t> xoff_;                       // per received broadcast: its solution in xbuf_
  std::vector<double> xbuf_;
  std::atomic<std::int64_t> solved_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;  // guards the tasks, the sends and the count of busy threads
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  std::vector<Outgoing> out_;
  int busy_ = 0;
  bool done_ = false;
};

}  // namespace

void run_threaded_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                        const PhaseSchedule& ph, MessageEngine& engine, BlockKernels& kernels, ThreadTeam& team,
                        double* sol, int nrhs, int tag) {
  ThreadedPhase(sym, blocks, store, ph, engine, kernels, sol, nrhs).run(team, tag);
}

}  // namespace commsolve
