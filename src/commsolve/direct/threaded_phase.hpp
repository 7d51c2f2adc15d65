// The message-driven solve phase (SC'23 Algorithm 3) on a rank's threads, for grids whose
// layers hold several ranks ("M threads x N ranks per node"): the calling thread runs the
// message engine (every MPI call stays on it) and takes work between messages; the other
// threads of the team take the same work. Work is a supernode's solution to apply to the
// rank's blocks that use it, or a partial sum to send up its tree or settle; a sum's counter
// (tree children plus local blocks) falls atomically, and whoever brings it to zero fires
// it. Sends made by the workers are queued and handed to MPI by the calling thread.
//
// The phase's messages, trees and counters are the PhaseSchedule's: the same messages go
// through MPI as with one thread (the statistics are equal; only the order of additions
// into a sum may differ). Phases with a synchronous part (3d-baseline's upper levels, taken
// one supernode at a time) are not run here: make_threaded_check says so.
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/core/thread_team.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/solve_executor.hpp"
#include "commsolve/direct/solve_schedule.hpp"
#include "commsolve/trees/engine.hpp"

namespace commsolve {

// Throws std::invalid_argument when the phase cannot run on threads (a synchronous part).
void check_threaded_phase(const PhaseSchedule& ph);

// Runs phase `ph` on `team` with `engine` (probe mode: max_posted = 0) under `tag`; `sol` as
// PhaseExecutor::run. Collective over the phase's grid, like the one-thread phase.
void run_threaded_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                        const PhaseSchedule& ph, MessageEngine& engine, BlockKernels& kernels, ThreadTeam& team,
                        double* sol, int nrhs, int tag);

}  // namespace commsolve
