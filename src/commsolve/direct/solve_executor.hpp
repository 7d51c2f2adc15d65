// Runs solve phases and inter-grid steps (direct/solve_schedule.hpp) on MPI.
//
// A phase is one receive-any loop on the message engine (SC'23 Algorithm 3): a supernode is
// solved (a product with its inverted diagonal block) as soon as the last contribution to
// its sum is in, its solution goes down its broadcast tree and into the local blocks that
// use it, and the partial sums they make go up their reduction trees. The dense work sits
// behind BlockKernels, so that another implementation (a GPU kernel) can take its place.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/solve_schedule.hpp"
#include "commsolve/trees/engine.hpp"

namespace commsolve {

// The dense products of a solve, all column-major with nrhs right-hand sides.
class BlockKernels {
 public:
  virtual ~BlockKernels() = default;
  // sol (w x nrhs) = inv (w x w) * rhs.
  virtual void diagonal(std::int64_t w, int nrhs, const double* inv, const double* rhs, double* sol) = 0;
  // out (m x nrhs) = panel (m x w) * x: the L blocks of one column, stacked.
  virtual void lower_panel(std::int64_t m, std::int64_t w, int nrhs, const double* panel, const double* x,
                           double* out) = 0;
  // acc (w x nrhs) += U (w x m) * x: one U block and the rows of x it reads.
  virtual void upper_block(std::int64_t w, std::int64_t m, int nrhs, const double* U, const double* x,
                           double* acc) = 0;
};

// On the CPU: a plain loop for the typical small block (faster than a BLAS call's overhead),
// BLAS GEMV/GEMM above 64k entries.
class CpuKernels final : public BlockKernels {
 public:
  void diagonal(std::int64_t w, int nrhs, const double* inv, const double* rhs, double* sol) override;
  void lower_panel(std::int64_t m, std::int64_t w, int nrhs, const double* panel, const double* x,
                   double* out) override;
  void upper_block(std::int64_t w, std::int64_t m, int nrhs, const double* U, const double* x,
                   double* acc) override;
};

// Pieces every executor of a phase shares. The engine set for phase `ph`: its tag, and each
// key's kind of message (broadcast or reduction, L or U).
void set_phase_engine(MessageEngine& engine, const PhaseSchedule& ph, int tag);
// Block `blk` = L(I, K): its rows of column K's panel product (`part` at the block's first
// row; M rows per right-hand side) added to I's sum `acc` (w_I x nrhs).
void add_lower_rows(const SupernodalStructure& sym, const SupernodeBlocks& blocks, std::int64_t blk,
                    const double* part, std::int64_t M, double* acc, int nrhs);
// Block `blk` = U(K, J): the rows of x(J) (w_J x nrhs) it reads, into xg (m x nrhs); returns m.
std::int64_t gather_upper_rows(const SupernodalStructure& sym, const SupernodeBlocks& blocks, std::int64_t blk,
                               const double* x, int nrhs, std::vector<double>& xg);

// At a supernode's diagonal owner: x (w x nrhs) -= its complete sum `acc` (null: none), then,
// where `inv` is given (the phase solves it), x = inv x through tmp.
void settle_solution(BlockKernels& kernels, std::int64_t w, int nrhs, const double* acc, const double* inv, double* x,
                     std::vector<double>& tmp);

// The diagonal blocks' factors for the per-block kernels (SolveKernels::per_block, dtrsm as
// pdgstrs3d applies them): per diagonal supernode d of a store, L11 (unit lower, below the
// diagonal) and U11 (upper) in one w x w column-major array, recovered from the store's
// inverses by inverting them back (LAPACK dtrtri): exact up to rounding that grows with
// the diagonal block's condition (pdgstrs3d applies the factors themselves).
struct DiagonalFactors {
  std::vector<double> lu;
  std::vector<std::int64_t> off;  // per diagonal supernode of the store
};
DiagonalFactors diagonal_factors(const SupernodalStructure& sym, const BlockStore& store);

// Runs one rank's phases against its block store (the PhaseMachine with the numbers, on the
// message engine). With `per_block` (the store's diagonal_factors) the phase runs
// pdgstrs3d's kernels instead of `kernels`: dtrsm on the diagonal blocks, one BLAS dgemm per
// L block, each U block copied into a buffer before its dgemm. `sol` is the rank's solve vector: per
// diagonal supernode d, sol_off[d] * nrhs onward, w x nrhs column-major; it holds the
// right-hand side when a phase starts and its solution (L: y, U: x) when it ends; a context
// supernode's entry (L) has the phase's partial sums subtracted from it.
class PhaseExecutor {
 public:
  PhaseExecutor(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                MessageEngine& engine, BlockKernels& kernels)
      : sym_(sym), blocks_(blocks), store_(store), engine_(engine), kernels_(kernels) {}
  // Collective over the phase's grid (every rank runs its own schedule of the same phase).
  void run(const PhaseSchedule& ph, double* sol, int nrhs, int tag, const DiagonalFactors* per_block = nullptr);

 private:
  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  const BlockStore& store_;
  MessageEngine& engine_;
  BlockKernels& kernels_;
  std::vector<double> acc_, work_, xg_, sol_tmp_, packed_;  // scratch kept from solve to solve
};

// One inter-grid step between the diagonal owners of two grids: the sender's solve-vector
// entries of the step's supernodes are added to (reduce) or copied over (broadcast) the
// receiver's. One message per supernode, in ascending order, or one packed message. What
// went through MPI is added to `recorded` (step z_reduce or z_broadcast).
void run_z_step(MPI_Comm comm, const ZStep& st, bool reduce, bool packed, const SupernodalStructure& sym,
                const BlockStore& store, double* sol, int nrhs, int tag, const Topology& topo, int rank,
                CommStats& recorded);

// One grid synchronisation (GridSync) on MPI, each exchange a blocking MPI_Sendrecv,
// MPI_Send or MPI_Recv as MPICH's recursive doubling makes them: `counters` (gs.bytes / 4
// ints, this rank's on entry) ends as their sum over the participants; a barrier carries
// none. What went through MPI is added to `recorded` (step grid_sync).
void run_grid_sync(MPI_Comm comm, const GridSync& gs, std::vector<std::int32_t>& counters, int tag,
                   const Topology& topo, int rank, CommStats& recorded);
// This rank's counters before the leaf forest phase `ph` (as SuperLU_DIST's mod_bit): per
// local block row (supernode k of process row k mod px at k / px), 1 where the rank sends k's
// partial sum to another rank in the message-driven part of the phase.
std::vector<std::int32_t> leaf_counters(const PhaseSchedule& ph, const GridSync& gs, int px);
// After their allreduce, what pdgstrs3d reads from them: at each supernode whose sum this
// rank roots in the message-driven part, how many ranks send it one. On flat trees that is
// the root's tree children: std::logic_error naming the supernode otherwise (the allreduce
// or the schedule is wrong).
void check_leaf_counters(const PhaseSchedule& ph, const std::vector<std::int32_t>& counters, int px);

}  // namespace commsolve
