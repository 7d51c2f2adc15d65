// What the 2.5D dense algorithms move, as restricted collectives (trees/tree_plan.hpp): plain
// arrays built alike by every rank, run on MPI by dense/dense_executor, counted per rank and
// at virtual scale without MPI. Each collective has a role (its statistics step), the step
// it serves (SUMMA panel or elimination step; -1 for none) and the process row, column or
// layer position it belongs to.
//
// Multiply C = A B (A m x k, B k x n, all three block-cyclic on layer 0 in blocks of nb):
//   replicate_a, replicate_b  layer 0's blocks of A and B broadcast along z to every layer
//   panel_a, panel_b          SUMMA on layer z = kappa mod c for the block columns kappa of A,
//                             in panels of blocks with the same owners (up to `panel` columns):
//                             their owner's rows broadcast along the process row, the matching
//                             block rows of B along the process column
//   reduce_c                  every layer's partial C summed along z onto layer 0
// Each rank receives about 2 n^2 / sqrt(c p) words for panels (square n, pr = pc = sqrt(p/c)).
//
// LU without pivoting (A n x n on layer 0; the other layers start with zeros and accumulate
// their share of the trailing updates, so the sum over layers is always the trailing matrix):
// step k is eliminated on layer z_k = k mod c, which alone updates the trailing matrix with
// it; before it, the block column k (rows >= k) and block row k (columns > k) are summed
// along z onto layer z_k:
//   reduce_col, reduce_row    those sums (only with c > 1)
//   diag                      the factored diagonal block, to the panel's column and row
//   panel_l, panel_u          L(>k, k) along each process row, U(k, >k) along each column
// Layer 0's rank at the same position joins the diag and panel broadcasts of a step
// eliminated elsewhere, so the factors end on layer 0. Each rank receives about n^2 / sqrt(c p)
// words of panels.
//
// With tournament pivoting (CALU's TSLU), after the sum of block column k:
//   tournament                the reduction of candidate pivot rows over the panel's process
//                             column on layer z_k (w rows and their indices per message; each
//                             node keeps the w rows partial pivoting picks from its own and its
//                             children's), to the diagonal owner, which factors the w winners
//   pivots                    the step's w pivots (LAPACK's ipiv) broadcast to every rank
// then every layer swaps the rows of its share (point-to-point messages within each process
// column, decided by the pivots: lu_swap, not planned), block row k is summed as above, and
// layer 0 swaps the rows of the earlier block columns of L once at the end.
//
// Pieces: every move of more than `piece` values travels as several collectives of at most
// that many (consecutive ids, the same members, each its own tree), forwarded piece by piece:
// a broadcast down a tree of depth h then costs about m / B + h times a piece's time rather
// than h m / B (pipelining), and trees that depend on the collective's id (shifted-binary,
// rectangular) spread the pieces over different links.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/dense/dense_layout.hpp"
#include "commsolve/topology/topology.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

enum MatmulRole : std::int8_t { mm_replicate_a = 0, mm_replicate_b, mm_panel_a, mm_panel_b, mm_reduce_c, mm_nroles };
enum LuRole : std::int8_t {
  lu_reduce_col = 0, lu_reduce_row, lu_diag, lu_panel_l, lu_panel_u,
  lu_tournament, lu_pivots, lu_swap,  // with tournament pivoting (lu_swap: point-to-point, not in the plan)
  lu_nroles
};

const std::vector<std::string>& matmul_role_names();
const std::vector<std::string>& lu_role_names();

struct DensePlan {
  CollectiveSet set;  // ids ascending (the whole plan's numbering)
  std::vector<std::int8_t> role;  // per collective
  std::vector<std::int32_t> step;  // SUMMA panel or elimination step; -1 where none
  std::vector<std::int32_t> pos;   // process row or column it runs along; layer position for z collectives
  std::vector<std::int32_t> piece;  // which piece of its move (0, 1, ...); pieces are consecutive
  int nroles = 0;
  std::int64_t nids = 0;  // ids the whole plan numbers (0 .. nids - 1): keys from nids on are free
  std::int64_t max_count() const;
  std::int64_t index_of(std::int64_t id) const;  // the collective with this id (std::logic_error if none)
};

struct MatmulShape {
  std::int64_t m = 0, n = 0, k = 0, nb = 1;
  std::int64_t panel = 512;  // widest SUMMA panel (columns of A): whole blocks, at least one
  std::int64_t piece = 1 << 16;  // most values one message carries (larger moves go in pieces)
  void validate() const;     // std::invalid_argument for a negative extent, nb, panel or piece < 1
};

// The distributions the algorithms use on a grid.
struct MatmulLayout {
  Cyclic1D a_rows, a_cols, b_rows, b_cols;  // C's rows are A's, its columns B's
  MatmulLayout(const MatmulShape& s, const Grid25D& g);
};

// The SUMMA panels: on layer z the block columns kappa = z mod c of A, grouped in increasing
// order with the others that have the same owners (kappa mod pc for A, kappa mod pr for B) into
// panels of at most max(1, panel / nb) blocks, so a panel is one broadcast and one GEMM.
struct SummaPanels {
  std::vector<std::int64_t> ptr{0};  // blocks of panel p: blocks[ptr[p], ptr[p+1])
  std::vector<std::int64_t> blocks;
  std::vector<int> layer;
  std::int64_t size() const { return static_cast<std::int64_t>(layer.size()); }
  std::int64_t width(std::int64_t q, const Cyclic1D& cols) const {  // columns of panel q
    std::int64_t w = 0;
    for (std::int64_t i = ptr[q]; i < ptr[q + 1]; ++i) w += cols.width(blocks[i]);
    return w;
  }
};
SummaPanels summa_panels(const MatmulShape& s, const Grid25D& g);

// The whole plan (only_rank < 0: for the virtual world and the simulator), or only the
// collectives `only_rank` takes part in (what an MPI rank keeps: DESIGN rule 2), their ids
// those of the whole plan either way (messages carry ids).
DensePlan matmul_plan(const MatmulShape& s, const Grid25D& g, int only_rank = -1);  // steps: panel ids
DensePlan lu_plan(std::int64_t n, std::int64_t nb, const Grid25D& g, std::int64_t piece = 1 << 16, int only_rank = -1,
                  bool tournament = false);

// Planned statistics of one rank (steps: roles) and of every rank without MPI.
CommStats dense_stats(const TreePlan& plan, const DensePlan& dp, const Topology& topo);
std::vector<CommStats> dense_stats_virtual(const DensePlan& dp, const TreeShape& shape, const Topology& topo);

}  // namespace commsolve
