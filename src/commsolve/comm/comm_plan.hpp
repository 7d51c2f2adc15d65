// CommPlan: how the values of a pattern move, as plain data (DESIGN.md rule 1).
//
// Every rank sees one index space: [owned entries | halo | work]. A plan is a sequence of
// steps; in each step a rank packs values from anywhere in that space and sends them, and
// receives contiguous regions of the halo or the work area. The standard strategy is a
// single step that receives straight into the halo; node-aware strategies (several steps
// through the work area) fit the same form: after the last step, local copies move values
// that arrived in the work area to their halo entries. Any plan also runs in reverse
// (scatter-add from the halo back to the owners).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/comm/halo_pattern.hpp"

namespace commsolve {

struct PlanStep {
  std::vector<int> send_peers;                  // distinct destinations
  std::vector<std::int64_t> send_ptr{0};        // send_idx[send_ptr[i], send_ptr[i+1]) to send_peers[i]
  std::vector<std::int32_t> send_idx;           // indices into the space
  std::vector<int> recv_peers;                  // distinct sources
  std::vector<std::int64_t> recv_offset;        // region start in the space (>= n_owned)
  std::vector<std::int64_t> recv_count;         // region length

  std::int64_t send_count(std::size_t i) const { return send_ptr[i + 1] - send_ptr[i]; }
};

struct CommPlan {
  int rank = 0;
  int nranks = 0;
  std::string strategy;
  std::int64_t n_owned = 0, n_halo = 0, n_work = 0;
  std::vector<PlanStep> steps;
  std::vector<std::int32_t> copy_src, copy_dst;  // after the last step: space[dst] = space[src]

  std::int64_t space_size() const { return n_owned + n_halo + n_work; }
  // Throws std::logic_error on any broken invariant: peers out of range or repeated within a
  // step, indices outside the space, receive regions overlapping or touching owned entries,
  // copies that do not go from outside the halo into it.
  void validate() const;
};

// The most steps an executor runs, and the MPI tags each executor takes: forward step s
// uses tag_base + s, reverse step s tag_base + max_plan_steps + s. A fixed number, not the
// plan's own: ranks' plans may have different numbers of steps, and every rank must take
// the same tags for the next object.
constexpr std::size_t max_plan_steps = 8;
constexpr int executor_tags = 2 * static_cast<int>(max_plan_steps);

// Throws std::invalid_argument (naming `who`) unless `plan` is rank `rank`'s of a
// communicator of `size` ranks on a topology of `topo_size`, with at most max_plan_steps
// steps, and valid.
void check_plan_fits(const CommPlan& plan, int rank, int size, int topo_size, const std::string& who);

// The standard strategy (thesis Algorithm 5.1): one step, one message per neighbour pair,
// received straight into the halo.
CommPlan standard_plan(const HaloPattern& pattern);

}  // namespace commsolve
