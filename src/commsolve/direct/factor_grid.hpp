// The numeric LU factorization inside one Px x Py grid (a layer of a 3D grid): right-looking
// supernodal LU with static pivoting on the 2D block-cyclic layout the triangular solves read
// (SuperLU_DIST's pdgstrf, "fan-out"), so every rank ends holding exactly its blocks.
//
// For each supernode K, once every update to its blocks is in:
//   - its diagonal owner factors the diagonal block and inverts both triangles (the form the
//     solve applies);
//   - each owner of L blocks of K forms its panel, L(I, K) = A(I, K) inv(U11), and
//     broadcasts it along its process row to the ranks holding blocks (I, J) with J in K's
//     structure; each owner of U blocks of K forms U(K, J) = inv(L11) A(K, J) and
//     broadcasts them down its process column likewise. The diagonal owner's broadcasts
//     carry inv(L11) first along its row (the U owners there need it) and inv(U11) first down
//     its column (the L owners): the same ranks, so one message each, as SuperLU_DIST sends
//     the diagonal block inside the panel;
// The broadcasts are restricted collectives (trees/tree_plan.hpp) carried by any tree shape,
// and the order is data-driven (a receive-any loop; per supernode a counter of the updates
// still to come, as SuperLU_DIST's), not a global sequence: independent subtrees proceed at
// once.
//
// A phase factors the supernodes of one forest (all of them in 2D; direct/factor3d.hpp runs
// one phase per forest level). Its updates to supernodes outside the phase (ancestors of a 3D
// grid's forest) go into this grid's copy of their blocks; the inter-grid reduction
// (factor3d) carries them to the grid that factors those supernodes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/core/buffer_pool.hpp"
#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/supernodal_lu.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/engine.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

// A rank's share of a supernode K, as parts of its block store: the diagonal block, its L
// panel (blocks L(I, K) of its process row) and its U row (blocks U(K, J) of its process
// column).
enum FactorPart : std::int8_t { part_diag = 0, part_l = 1, part_u = 2 };

// The collectives of a phase: per supernode K, one broadcast along each process row x that
// holds L blocks of K or is K's own (root (x, K mod py)), and one down each process column y
// that holds U blocks of K or is K's own (root (K mod px, y)); those rooted at K's diagonal
// owner carry its inverse triangle first. A collective whose root is its only participant
// is left out.
enum FactorRole : std::int8_t { row_bcast = 0, column_bcast = 1 };
inline constexpr int factor_xy_steps = 2;  // statistics: one step per role

struct FactorCollectives {
  CollectiveSet set;              // id: K (px + py) + {process row, px + process column}
  std::vector<std::int32_t> sn;   // per collective: its supernode
  std::vector<std::int8_t> role;  // FactorRole
  std::vector<char> diag;         // 1: from the diagonal owner, w^2 values of the inverse first
};

// `phase`: per supernode, 1 where the phase factors it (empty: all).
FactorCollectives factor_phase_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                                           const ProcessGrid2D& layer, const std::vector<char>& phase);

// What supernode S's update writes, on every rank (x, y) of a layer: f(x, y, K, part) for
// each part of a rank's blocks it touches (a K may come once per part). The target (I, J),
// I and J in S's structure, is a block of supernode min(I, J) on (I mod px, J mod py): the
// diagonal block of K (I = J = K), K's L panel there (I > J = K) or K's U row (J > I = K).
// `max_x`, `max_y`: scratch.
template <class F>
void for_each_update_target(const SupernodeBlocks& blocks, const ProcessGrid2D& layer, std::int64_t s,
                            std::vector<std::int32_t>& max_x, std::vector<std::int32_t>& max_y, F&& f) {
  max_x.assign(static_cast<std::size_t>(layer.px), -1);
  max_y.assign(static_cast<std::size_t>(layer.py), -1);
  for (std::int64_t b = blocks.col_ptr[s]; b < blocks.col_ptr[s + 1]; ++b) {  // ascending: the last is the largest
    max_x[blocks.sn[b] % layer.px] = blocks.sn[b];
    max_y[blocks.sn[b] % layer.py] = blocks.sn[b];
  }
  for (std::int64_t b = blocks.col_ptr[s]; b < blocks.col_ptr[s + 1]; ++b) {
    const std::int32_t k = blocks.sn[b];
    const int kx = k % layer.px, ky = k % layer.py;
    f(kx, ky, k, part_diag);
    for (int x = 0; x < layer.px; ++x)
      if (max_x[x] > k) f(x, ky, k, part_l);
    for (int y = 0; y < layer.py; ++y)
      if (max_y[y] > k) f(kx, y, k, part_u);
  }
}

// Doubles of supernode k's parts on every rank of a layer: its L panel on process row x
// (rows[x] x w: on column k mod py) and its U row on process column y (w x cols[y]: on row
// k mod px); the diagonal block (w^2, or 2 w^2 `inverted`, as the solve stores it: inv(L11),
// inv(U11)) on its owner.
struct PartSizes {
  std::int64_t diag = 0;
  std::vector<std::int64_t> l, u;  // [x], [y]
  std::int64_t of(const ProcessGrid2D& layer, std::int64_t k, int x, int y, FactorPart part) const;
};
PartSizes part_sizes(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& layer,
                     std::int64_t k, bool inverted);

// Where a rank's blocks sit in its BlockStore, for the factorization (local).
struct StoreIndex {
  std::vector<std::int64_t> l_col_of;     // per supernode: its local L column (-1: none)
  std::vector<std::int64_t> l_row_of;     // per block: its first row in its panel (-1: not a local L block)
  std::vector<std::int64_t> u_off_of;     // per block: its offset as a local U block (-1: not one)
  std::vector<std::int64_t> u_row_ptr;    // per supernode K: the local blocks of row K,
  std::vector<std::int64_t> u_row_block;  //   u_row_block[u_row_ptr[K], u_row_ptr[K + 1]), ascending J
  StoreIndex(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store);
  std::int64_t u_row_cols(const SupernodeBlocks& blocks, std::int64_t k) const;  // columns of the local U row
};

// f(offset, length) for every piece of `part` of supernode k in the store, in a fixed order
// (the U row: one piece per block, ascending J; nothing where the rank holds no such part).
template <class F>
void for_each_piece(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const BlockStore& store,
                    const StoreIndex& index, std::int64_t k, FactorPart part, bool inverted, F&& f) {
  const std::int64_t w = sym.sn_start[k + 1] - sym.sn_start[k];
  if (part == part_diag) {
    const std::int64_t d = store.diag_index[k];
    if (d >= 0) f(store.layout.diag_off[d], (inverted ? 2 : 1) * w * w);
  } else if (part == part_l) {
    const std::int64_t c = index.l_col_of[k];
    if (c >= 0) f(store.layout.l_panel[c], store.layout.l_rows[c] * w);
  } else {
    for (std::int64_t p = index.u_row_ptr[k]; p < index.u_row_ptr[k + 1]; ++p) {
      const std::int64_t b = index.u_row_block[p];
      f(index.u_off_of[b], w * (blocks.hi[b] - blocks.lo[b]));
    }
  }
}

// A's entries as (row, column, value) triples of the permuted, scaled matrix.
struct EntryTriples {
  std::int64_t nnz = 0;
  const std::int32_t *rows = nullptr, *cols = nullptr;
  const double* values = nullptr;
};

// Adds the entries (all of them in blocks this rank holds, as a diagonal block, an L block
// or a U block) into the store. Throws std::invalid_argument for an entry outside the
// symbolic structure or outside this rank's blocks.
void assemble_entries(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const StoreIndex& index,
                      BlockStore& store, const EntryTriples& entries);

// One rank's part of one phase, as plain data: the collectives it takes part in and their
// tree links, and per supernode what it waits for.
struct FactorSchedule {
  ProcessGrid2D layer;
  int x = 0, y = 0;                     // the rank's place in its layer
  FactorCollectives coll;               // the whole layer's collectives of the phase
  TreePlan plan;                        // this rank's links
  PlanArrivals arrivals;                // per collective its plan slot; messages expected
  std::vector<std::int64_t> root_slot;  // [2 K + role]: the plan slot of K's collective this rank roots (-1)
  std::vector<std::int8_t> parts;       // per supernode of the phase: 1 diag | 2 L | 4 U held here
  std::vector<std::int32_t> waiting;    // per supernode of the phase: updates still to apply to its parts here
  std::vector<std::int64_t> touch_ptr;  // per supernode S of the phase: the phase's supernodes whose
  std::vector<std::int32_t> touch;      //   parts here its update writes (none: no update here)
  std::vector<std::int32_t> order;      // the phase's supernodes, ascending
  // The index in `coll` of the collective with this id (the key its messages carry; ranks
  // planning from shares list different collectives), -1 where there is none.
  std::int64_t index_of(std::int64_t id) const;
};

FactorSchedule factor_schedule(const SupernodalStructure& sym, const SupernodeBlocks& blocks,
                               const ProcessGrid2D& layer, int rank, const std::vector<char>& phase,
                               const TreeShape& shape, const Topology& topo);

// Planned messages of every rank of `topo` in one phase (steps first_step + role of each
// rank's stats): each message carries an 8-byte key and the collective's doubles.
void add_phase_planned(const FactorCollectives& coll, const TreeShape& shape, const Topology& topo, int first_step,
                       std::vector<CommStats>& stats);

// Runs phases of the factorization on MPI for one rank (collective over its layer: every rank
// runs its own schedule of the same phase).
class FactorExecutor {
 public:
  // `engine` in probe mode (max_posted 0) with factor_xy_steps kinds; `store` zeroed, with A's
  // entries assembled and earlier updates applied.
  FactorExecutor(const SupernodalStructure& sym, const SupernodeBlocks& blocks, BlockStore& store,
                 const StoreIndex& index, MessageEngine& engine, PivotRule& rule);

  // Factors the phase's supernodes. On a failure in the numeric work (a zero or tiny pivot,
  // a non-finite pivot, an exception in the dense kernels) the rank keeps sending what the
  // schedule says, flagged, so no rank waits for a message that does not come; every rank
  // it reaches learns that the factorization failed. Returns false if this rank failed or
  // heard of a failure. Other exceptions (memory for a message, an internal inconsistency)
  // leave this function: under `python -m mpi4py` they abort the job.
  bool run(const FactorSchedule& sch, int tag);
  const std::string& error() const { return error_; }  // the failure that started here, if one did
  bool ok() const { return ok_; }
  void heard_failure() { ok_ = false; }  // a failure found elsewhere (another grid)
  double flops() const { return flops_; }

 private:
  struct Panel {              // an L panel or U row of a supernode, received or local
    const double* data = nullptr;
    std::vector<double> own;  // the values when they are not in the store
    bool ready = false;
  };
  void fail(const std::string& why);
  void arrive(std::int64_t key, const double* values, std::int64_t n);
  // Sends `w2` values of an inverse triangle (may be 0) then `n` of a panel to the slot's
  // tree children.
  void forward(std::int64_t slot, const double* inverse, std::int64_t w2, const double* values, std::int64_t n);
  void send_root(std::int32_t k, FactorRole role, const double* inverse, std::int64_t w2, const double* values,
                 std::int64_t n);
  void release(Panel& p);
  void panel_ready(std::int32_t s);
  void apply_update(std::int32_t s);
  void finish_update(std::int32_t s);
  void rank_blocks(std::int32_t s);
  void update_part(std::int32_t s, std::size_t a0, std::size_t a1, std::size_t q0, std::size_t q1);
  void finalize(std::int32_t k);
  void updated(std::int32_t k);
  void drain();
  bool finish_one();
  template <class Work>
  void attempt(Work&& work);

  const SupernodalStructure& sym_;
  const SupernodeBlocks& blocks_;
  BlockStore& store_;
  const StoreIndex& index_;
  MessageEngine& engine_;
  PivotRule& rule_;
  const FactorSchedule* sch_ = nullptr;
  std::vector<std::int32_t> waiting_;
  std::vector<std::vector<double>> diag_;  // received inverse triangles (per supernode, until used)
  std::vector<char> have_diag_, done_;
  std::vector<Panel> lpanel_, upanel_;
  std::vector<std::int32_t> stack_, rest_;  // supernodes to finalize; updates to finish
  std::vector<double> t_, lu_;       // scratch: an update's product, a diagonal block's LU
  BufferPool pool_;                  // buffers of panels and inverses, for the next ones
  std::vector<std::int64_t> map_, lb_, ub_, lb_row_, ub_col_;  // scratch: positions, rank_blocks
  bool ok_ = true;
  std::string error_;
  double flops_ = 0.0;
};

}  // namespace commsolve
