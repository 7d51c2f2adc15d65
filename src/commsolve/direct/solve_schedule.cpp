#include "direct/solve_schedule.hpp"

#include <stdexcept>
#include <string>

#include "comm/comm_plan.hpp"
#include "core/error.hpp"
#include "direct/rhs_layout.hpp"

namespace commsolve {

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names = {"2d", "3d-baseline", "3d"};
  return names;
}

SolveAlgorithm parse_algorithm(const std::string& name) {
  if (name == "2d") return SolveAlgorithm::two_d;
  if (name == "3d-baseline") return SolveAlgorithm::baseline_3d;
  if (name == "3d") return SolveAlgorithm::new_3d;
  throw std::invalid_argument("unknown solve algorithm '" + name + "' (known: 2d, 3d-baseline, 3d)");
}

namespace {

// The partner and direction of grid z at an inter-grid step (peer grid -1: none).
std::pair<int, bool> z_role(int z, int step, bool reduce) {
  const int h = 1 << (step - 1);
  if (z % h != 0) return {-1, false};
  const bool upper_half = z % (2 * h) == h;  // reduces into z - h, receives the broadcast from it
  return {upper_half ? z - h : z + h, reduce == upper_half};
}

}  // namespace

std::vector<SolveOp> solve_program(SolveAlgorithm alg, int z, int nlev) {
  require(nlev >= 0 && z >= 0 && z < (1 << nlev),
          "solve program: grid " + std::to_string(z) + " outside the " + std::to_string(1 << nlev) + " layers");
  auto phase = [](bool upper, int lo, int hi) { return SolveOp{SolveOp::phase, upper, lo, hi, 0}; };
  auto zop = [](SolveOp::Kind kind, int step) { return SolveOp{kind, false, 0, 0, step}; };
  std::vector<SolveOp> ops;
  switch (alg) {
    case SolveAlgorithm::two_d:
      require(nlev == 0, "the 2d algorithm needs Pz = 1 (use 3d or 3d-baseline on a 3D grid)");
      ops = {phase(false, 0, 0), phase(true, 0, 0)};
      break;
    case SolveAlgorithm::new_3d:
      ops.push_back(phase(false, 0, nlev));
      for (int l = 1; l <= nlev; ++l)  // Algorithm 2: sparse reduce, leaf to root
        if (z % (1 << (l - 1)) == 0) ops.push_back(zop(SolveOp::z_reduce, l));
      for (int l = nlev; l >= 1; --l)  // then the sparse broadcast back
        if (z % (1 << (l - 1)) == 0) ops.push_back(zop(SolveOp::z_broadcast, l));
      ops.push_back(phase(true, 0, nlev));
      break;
    case SolveAlgorithm::baseline_3d:
      for (int l = 0; l <= nlev && z % (1 << l) == 0; ++l) {
        ops.push_back(phase(false, l, l));
        if (l == nlev) break;
        ops.push_back(zop(SolveOp::z_reduce, l + 1));
        if (z_role(z, l + 1, true).second) break;  // sent its ancestors' sums: idle from here
      }
      for (int l = nlev; l >= 0; --l) {
        if (z % (1 << l) != 0) continue;
        if (l < nlev) ops.push_back(zop(SolveOp::z_broadcast, l + 1));
        ops.push_back(phase(true, l, l));
      }
      break;
  }
  return ops;
}

int synchronisation_points(const std::vector<SolveOp>& program) {
  int points = 0;
  bool in_z = false, seen_phase = false;
  for (const SolveOp& op : program) {
    if (op.kind == SolveOp::phase) {
      if (in_z && seen_phase) ++points;
      in_z = false;
      seen_phase = true;
    } else {
      in_z = true;
    }
  }
  return points;
}

std::vector<char> phase_solve_mask(const ForestPartition& forests, int z, const SolveOp& op) {
  return forests.mask(z, op.lo, op.hi);
}

std::vector<char> phase_context_mask(const ForestPartition& forests, int z, const SolveOp& op) {
  return forests.mask(z, op.hi + 1, forests.nlev);
}

PhaseSchedule build_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& grid,
                          const LocalLayout2D& layout, int rank, bool upper, const std::vector<char>& solve,
                          const std::vector<char>& context, const TreeShape& shape, const Topology& topo) {
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  auto solved = [&](std::int64_t k) { return solve.empty() || solve[k] != 0; };
  PhaseSchedule ph;
  ph.upper = upper;
  ph.set = phase_collectives(sym, blocks, grid, upper, solve, context);
  ph.plan = build_tree_plan(ph.set, rank, shape, topo);
  ph.arrivals = plan_arrivals(ph.plan, ph.set);
  const std::int64_t id0 = upper ? 2 * ns : 0;
  ph.slot.assign(static_cast<std::size_t>(2 * ns), -1);
  for (std::size_t i = 0; i < ph.plan.index.size(); ++i)
    ph.slot[ph.set.id[ph.plan.index[i]] - id0] = static_cast<std::int32_t>(i);
  auto reduction = [&](std::int64_t k) {
    const std::int32_t i = ph.slot[ns + k];
    if (i < 0) throw std::logic_error("solve phase: a local block outside this rank's reductions");
    return i;
  };
  // Every local block of the phase adds to one reduction: L(I, K) to I's, U(K, J) to K's.
  if (!upper) {
    for (std::int64_t k = 0; k < ns; ++k)
      if (solved(k))
        for (std::int64_t p = layout.l_ptr[k]; p < layout.l_ptr[k + 1]; ++p)
          ++ph.arrivals.waiting[reduction(blocks.sn[layout.l_block[p]])];
  } else {
    ph.u_ptr.push_back(0);
    for (std::int64_t j = 0; j < ns; ++j) {
      for (std::int64_t p = layout.u_ptr[j]; p < layout.u_ptr[j + 1]; ++p)
        if (solved(blocks.col[layout.u_block[p]])) {
          ph.u_pos.push_back(p);
          ++ph.arrivals.waiting[reduction(blocks.col[layout.u_block[p]])];
        }
      ph.u_ptr.push_back(static_cast<std::int64_t>(ph.u_pos.size()));
    }
  }
  ph.solves.assign(ph.plan.index.size(), 0);
  ph.sum_off.assign(ph.plan.index.size(), -1);
  for (std::size_t i = 0; i < ph.plan.index.size(); ++i) {
    const std::size_t c = static_cast<std::size_t>(ph.plan.index[i]);
    const std::int64_t k = ph.set.id[c] - id0;
    const bool root = ph.plan.links[i].parent < 0;
    if (k >= ns) {
      ph.solves[i] = solved(k - ns);
      ph.sum_off[i] = ph.sum_size;
      ph.sum_size += sym.sn_start[k - ns + 1] - sym.sn_start[k - ns];
      if (root && ph.solves[i]) ++ph.solved_here;
    } else if (root && !solved(k)) {
      ph.starts.push_back(static_cast<std::int32_t>(k));  // a U context supernode: x is known
    }
  }
  return ph;
}

namespace {

// The supernodes in grid z's forests at levels step..nlev (those it shares with the grid
// it meets at that inter-grid step), ascending.
std::vector<std::int32_t> shared_supernodes(const ForestPartition& forests, int z, int step) {
  const std::vector<char> m = forests.mask(z, step, forests.nlev);
  std::vector<std::int32_t> out;
  for (std::size_t s = 0; s < m.size(); ++s)
    if (m[s]) out.push_back(static_cast<std::int32_t>(s));
  return out;
}

}  // namespace

ZStep build_z_step(const ForestPartition& forests, const ProcessGrid3D& grid, int rank, int step, bool reduce) {
  ZStep st;
  const int z = grid.z_of(rank);
  const auto [peer_z, send] = z_role(z, step, reduce);
  if (peer_z < 0) return st;
  st.peer = rank + (peer_z - z) * grid.layer_size();
  st.send = send;
  const ProcessGrid2D layer = grid.layer(z);
  for (std::int32_t k : shared_supernodes(forests, z, step))
    if (layer.diag_owner(k) == rank) st.sn.push_back(k);
  return st;
}

void add_z_stats(CommStats& stats, const ZStep& st, const SupernodalStructure& sym, const Topology& topo, int rank,
                 bool reduce, bool packed, int nrhs) {
  if (st.peer < 0 || st.sn.empty()) return;
  StepStats& s = stats.steps[reduce ? z_reduce : z_broadcast];
  const Locality where = locality(topo, rank, st.peer);
  std::int64_t total = 0;
  for (std::int32_t k : st.sn) {
    const std::int64_t bytes = 8 * (sym.sn_start[k + 1] - sym.sn_start[k]) * nrhs;
    total += bytes;
    if (!packed) st.send ? s.add_send(where, bytes) : s.add_recv(where, bytes);
  }
  if (packed) st.send ? s.add_send(where, total) : s.add_recv(where, total);
}

std::vector<CommStats> solve_stats_virtual(const SupernodalStructure& sym, const ProcessGrid3D& grid,
                                           const ForestPartition& forests, SolveAlgorithm alg,
                                           const TreeShape& shape, const Topology& topo, int nrhs, bool packed,
                                           const Distribution* dist, const std::vector<std::int32_t>* row_order,
                                           const std::vector<std::int32_t>* col_order) {
  check_grid_3d(grid);
  require(topo.size() == grid.size(), "solve statistics: topology of " + std::to_string(topo.size()) +
                                          " ranks for a grid of " + std::to_string(grid.size()));
  require(forests.pz == grid.pz, "solve statistics: forests for Pz = " + std::to_string(forests.pz) +
                                     ", grid has Pz = " + std::to_string(grid.pz));
  forests.validate(supernodal_etree(sym));
  const SupernodeBlocks blocks = supernode_blocks(sym);
  std::vector<CommStats> stats(static_cast<std::size_t>(grid.size()));
  for (auto& s : stats) s.steps.resize(num_solve_steps);
  for (int z = 0; z < grid.pz; ++z) {
    const ProcessGrid2D layer = grid.layer(z);
    for (const SolveOp& op : solve_program(alg, z, forests.nlev)) {
      if (op.kind == SolveOp::phase) {
        const CollectiveSet set = phase_collectives(sym, blocks, layer, op.upper, phase_solve_mask(forests, z, op),
                                                    phase_context_mask(forests, z, op));
        const std::vector<CommStats> per = tree_stats_virtual(set, shape, topo, nrhs);
        for (int r = layer.base; r < layer.base + layer.size(); ++r) {
          stats[r].steps[op.upper ? u_broadcast : l_broadcast] += per[r].steps[0];
          stats[r].steps[op.upper ? u_reduce : l_reduce] += per[r].steps[1];
        }
        continue;
      }
      const bool reduce = op.kind == SolveOp::z_reduce;
      const auto [peer_z, send] = z_role(z, op.step, reduce);
      std::vector<ZStep> by_rank(static_cast<std::size_t>(layer.size()));
      for (std::int32_t k : shared_supernodes(forests, z, op.step)) by_rank[layer.diag_owner(k) - layer.base].sn.push_back(k);
      for (int q = 0; q < layer.size(); ++q) {
        ZStep& st = by_rank[q];
        st.peer = layer.base + q + (peer_z - z) * grid.layer_size();
        st.send = send;
        add_z_stats(stats[layer.base + q], st, sym, topo, layer.base + q, reduce, packed, nrhs);
      }
    }
  }
  if (dist != nullptr && row_order != nullptr && col_order != nullptr) {
    require(dist->nranks() == grid.size(), "solve statistics: a distribution over " + std::to_string(dist->nranks()) +
                                               " ranks for a grid of " + std::to_string(grid.size()));
    const std::vector<std::int32_t> solver = column_solvers(sym, grid, forests);
    for (const HaloPattern& p : rhs_patterns(*dist, *row_order, solver))
      stats[p.rank].steps[b_to_diagonal] += plan_stats(standard_plan(p), topo, 8 * nrhs).steps[0];
    for (const HaloPattern& p : rhs_patterns(*dist, *col_order, solver))
      stats[p.rank].steps[x_from_diagonal] += plan_stats(standard_plan(p), topo, 8 * nrhs).reversed().steps[0];
  }
  return stats;
}

std::vector<double> grid_flops(const SupernodalStructure& sym, const ForestPartition& forests, SolveAlgorithm alg) {
  forests.validate(supernodal_etree(sym));
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  std::vector<double> per_sn(static_cast<std::size_t>(ns));
  for (std::int64_t k = 0; k < ns; ++k) {
    const double w = static_cast<double>(sym.sn_start[k + 1] - sym.sn_start[k]);
    per_sn[k] = 2.0 * w * (w + static_cast<double>(sym.rows_ptr[k + 1] - sym.rows_ptr[k]));
  }
  std::vector<double> out(static_cast<std::size_t>(forests.pz), 0.0);
  for (int z = 0; z < forests.pz; ++z)
    for (const SolveOp& op : solve_program(alg, z, forests.nlev))
      if (op.kind == SolveOp::phase) {
        const std::vector<char> m = phase_solve_mask(forests, z, op);
        for (std::int64_t k = 0; k < ns; ++k)
          if (m[k]) out[z] += per_sn[k];
      }
  return out;
}

}  // namespace commsolve
