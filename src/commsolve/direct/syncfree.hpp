// The synchronisation-free supernodal triangular solve of one phase on a rank that holds
// all of its grid's blocks (a 1 x 1 x Pz grid: SC'23 Algorithm 4, SuperLU_DIST's
// dlsum_fmod_inv_gpu_mrhs / dlsum_bmod_inv_gpu_mrhs). No messages and no level barriers:
// one task per supernode, each waiting on a counter of the contributions its partial sum
// still lacks (SuperLU_DIST's fmod / bmod), then solving with its inverted diagonal block
// and adding its blocks' products to the sums of the supernodes that depend on it (on CPU
// threads under a lock per sum, one per block; on the GPU by atomic additions), each
// addition followed by a decrement of that supernode's counter.
//
// SyncFreePhase is the plan (plain data, built once per phase from its PhaseSchedule, the
// same for CPU threads and the GPU kernel); run_syncfree executes it on a ThreadTeam.
//
// Progress. Tasks are numbered in an order in which every task comes after the tasks it
// depends on (by level, the longest chain of updates ending at a task; within a level L
// takes supernodes ascending, U descending after the context supernodes whose solution is
// known), which the plan checks as it is built (std::logic_error otherwise). Workers take task numbers from one atomic
// ticket in increasing order and run each taken task to its end, waiting only on its own
// counter. Suppose the workers were stuck: let t be the smallest taken, unfinished task.
// Every task t depends on has a smaller number, so it was taken (tickets go out in order)
// and, being smaller than t, has finished: t's counter is zero and t is not stuck, a
// contradiction. So some taken task can always proceed, and a worker never waits on a task
// that no running worker will complete (a task not yet taken cannot be waited on: it has a
// larger number than its waiter's dependencies). The GPU kernel takes tickets the same way
// (not blockIdx, whose scheduling order CUDA does not promise).
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/core/thread_team.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/solve_executor.hpp"
#include "commsolve/direct/solve_schedule.hpp"

namespace commsolve {

struct SyncFreePhase {
  bool upper = false;
  std::int64_t sum_size = 0;  // doubles per right-hand side of all partial sums
  // Per task, in dependency order:
  std::vector<std::int32_t> deps;   // contributions its sum waits for (the counter's start)
  std::vector<std::int32_t> width;  // its supernode's width
  std::vector<std::int64_t> sol;    // its supernode's rows in the solve vector (times nrhs)
  std::vector<std::int64_t> sum;    // its partial sum's offset (times nrhs); -1: none (a known solution)
  std::vector<std::int64_t> inv;    // its inverted diagonal block in the store; -1: no solve (keeps rhs - sum)
  std::vector<std::int64_t> panel;  // L: its panel of L blocks in the store (-1: none)
  std::vector<std::int32_t> panel_rows;
  std::vector<std::int64_t> upd_ptr;  // its updates: [upd_ptr[t], upd_ptr[t + 1])
  // Per update: the task whose sum it adds to, where its values are (L: the block's first row
  // in the panel; U: the block U(K, J), w_K x m, in the store), its rows m, and rows[row_ptr ..
  // + m): L: the target's rows it adds to; U: the rows of this task's solution it reads.
  std::vector<std::int32_t> target;
  std::vector<std::int64_t> values;
  std::vector<std::int32_t> m;
  std::vector<std::int64_t> row_ptr;
  std::vector<std::int32_t> rows;
  std::int32_t max_width = 0, max_panel_rows = 0, max_m = 0;

  std::int64_t tasks() const { return static_cast<std::int64_t>(deps.size()); }
};

// The plan of a phase whose schedule `ph` has no messages (its grid is one rank: throws
// std::invalid_argument otherwise) over this rank's store.
SyncFreePhase make_syncfree_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                  const BlockStore& store, const PhaseSchedule& ph);

// A deliberately adversarial schedule for tests: with seed != 0 each worker sleeps or
// yields at random (up to max_sleep_us) before taking a task and between a task's additions
// and its counter decrements.
struct ScheduleChaos {
  std::uint64_t seed = 0;
  int max_sleep_us = 50;
};

// Runs the phase on `team`: sol holds the right-hand side when it starts and the solution
// (as the message-driven phase leaves it) when it ends. Products go through `kernels`
// (called concurrently: it must be stateless, as CpuKernels is).
void run_syncfree(const SyncFreePhase& p, const double* values, double* sol, int nrhs, ThreadTeam& team,
                  BlockKernels& kernels, const ScheduleChaos& chaos = {});

}  // namespace commsolve
