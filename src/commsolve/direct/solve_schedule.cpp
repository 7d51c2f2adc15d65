#include "commsolve/direct/solve_schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/direct/rhs_layout.hpp"

namespace commsolve {

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names = {"2d", "3d-baseline", "3d-baseline-async", "3d",
                                                  "3d-baseline-pdgstrs"};
  return names;
}

const std::vector<std::string>& kernel_names() {
  static const std::vector<std::string> names = {"inverted", "per-block"};
  return names;
}

SolveKernels parse_kernels(const std::string& name) {
  if (name == "inverted") return SolveKernels::inverted;
  if (name == "per-block") return SolveKernels::per_block;
  throw std::invalid_argument("unknown solve kernels '" + name + "' (known: inverted, per-block)");
}

SolveOptions effective_options(const SolveOptions& opts) {
  if (opts.algorithm != SolveAlgorithm::baseline_3d_pdgstrs) return opts;
  SolveOptions out;
  out.algorithm = SolveAlgorithm::baseline_3d;
  out.shape = TreeShape{"flat", opts.shape.seed, opts.shape.flat_threshold};
  out.packed_z = false;
  out.kernels = SolveKernels::per_block;
  out.leaf_sync = true;
  return out;
}

const std::string& algorithm_name(SolveAlgorithm alg) { return algorithm_names()[static_cast<std::size_t>(alg)]; }

bool runs_on(SolveAlgorithm alg, int pz) { return (alg == SolveAlgorithm::two_d) == (pz == 1); }

void check_algorithm_grid(SolveAlgorithm alg, int pz) {
  if (runs_on(alg, pz)) return;
  const std::string name = algorithm_name(alg);
  if (alg == SolveAlgorithm::two_d)
    require(pz == 1, "the 2d algorithm needs Pz = 1, the grid has Pz = " + std::to_string(pz) +
                         " (the 2d solve runs on a Px x Py x 1 grid; use 3d or 3d-baseline on a 3D grid)");
  else
    require(pz >= 2, "the " + name + " algorithm needs a 3D grid (Pz >= 2, e.g. 1x2x2); a 2D grid runs the 2d "
                     "algorithm");
}

SolveAlgorithm default_algorithm(int pz) { return pz == 1 ? SolveAlgorithm::two_d : SolveAlgorithm::new_3d; }

const std::vector<std::string>& allreduce_names() {
  static const std::vector<std::string> names = {"packed", "per-supernode"};
  return names;
}

bool parse_allreduce(const std::string& name) {
  if (name == "packed") return true;
  if (name == "per-supernode") return false;
  throw std::invalid_argument("unknown allreduce variant '" + name + "' (known: packed, per-supernode)");
}

SolveAlgorithm parse_algorithm(const std::string& name) {
  if (name == "2d") return SolveAlgorithm::two_d;
  if (name == "3d-baseline") return SolveAlgorithm::baseline_3d;
  if (name == "3d-baseline-async") return SolveAlgorithm::baseline_3d_async;
  if (name == "3d") return SolveAlgorithm::new_3d;
  if (name == "3d-baseline-pdgstrs") return SolveAlgorithm::baseline_3d_pdgstrs;
  std::string known;
  for (const std::string& n : algorithm_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown solve algorithm '" + name + "' (known: " + known + ")");
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

std::vector<SolveOp> solve_program(SolveAlgorithm alg, int z, int nlev, bool leaf_sync) {
  SolveOptions asked;
  asked.algorithm = alg;
  asked.leaf_sync = leaf_sync;
  const SolveOptions run = effective_options(asked);  // 3d-baseline-pdgstrs: 3d-baseline with leaf_sync
  alg = run.algorithm;
  leaf_sync = run.leaf_sync;
  require(nlev >= 0 && z >= 0 && z < (1 << nlev),
          "solve program: grid " + std::to_string(z) + " outside the " + std::to_string(1 << nlev) + " layers");
  // ICS'19's forests above the leaves, and the ancestors of every phase, go one supernode at
  // a time (SuperLU_DIST's pdgstrs3d).
  const bool ics19 = alg == SolveAlgorithm::baseline_3d;
  auto phase = [&](bool upper, int lo, int hi) {
    return SolveOp{SolveOp::phase, upper, lo, hi, SyncParts{ics19 && lo > 0, ics19}, 0};
  };
  auto zop = [](SolveOp::Kind kind, int step) { return SolveOp{kind, false, 0, 0, {}, step}; };
  check_algorithm_grid(alg, 1 << nlev);
  std::vector<SolveOp> ops;
  switch (alg) {
    case SolveAlgorithm::two_d:
      ops = {phase(false, 0, 0), phase(true, 0, 0)};
      break;
    case SolveAlgorithm::new_3d:
      // The leaf forest first, then the ancestors (in that phase the leaf's contributions to
      // them are in): the ancestor chain no longer competes with leftover leaf work on the
      // same ranks. Simulated on cori-haswell at 2,048 ranks it is 0.6-5 % faster than one
      // phase over every level (poisson2d9:2048 at 8x8x32 21.50 -> 20.86 ms, 16x16x8 22.94 ->
      // 21.75; kkt3d:70 at 8x8x32 126.7 -> 124.2), for one more reduction per ancestor that
      // leaf blocks add to.
      ops.push_back(phase(false, 0, 0));
      if (nlev > 0) ops.push_back(phase(false, 1, nlev));
      for (int l = 1; l <= nlev; ++l)  // Algorithm 2: sparse reduce, leaf to root
        if (z % (1 << (l - 1)) == 0) ops.push_back(zop(SolveOp::z_reduce, l));
      for (int l = nlev; l >= 1; --l)  // then the sparse broadcast back
        if (z % (1 << (l - 1)) == 0) ops.push_back(zop(SolveOp::z_broadcast, l));
      if (nlev > 0) ops.push_back(phase(true, 1, nlev));  // the ancestors, then the leaf forest
      ops.push_back(phase(true, 0, 0));
      break;
    case SolveAlgorithm::baseline_3d:
    case SolveAlgorithm::baseline_3d_async:
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
    case SolveAlgorithm::baseline_3d_pdgstrs:
      break;  // became baseline_3d above
  }
  if (!leaf_sync) return ops;
  std::vector<SolveOp> out;
  for (const SolveOp& op : ops) {
    const bool leaf = op.kind == SolveOp::phase && op.lo == 0;
    if (leaf) out.push_back(SolveOp{SolveOp::counters, op.upper, 0, 0, {}, 0});
    out.push_back(op);
    if (leaf && !op.upper) out.push_back(SolveOp{SolveOp::barrier, false, 0, 0, {}, 0});
  }
  return out;
}

int synchronisation_points(const std::vector<SolveOp>& program) {
  int points = 0;
  bool in_z = false, seen_phase = false;
  for (const SolveOp& op : program) {
    if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) continue;  // inside a grid
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

CollectiveSet op_collectives(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const ProcessGrid2D& layer,
                             const ForestPartition& forests, int z, const SolveOp& op) {
  return phase_collectives(sym, blocks, layer, op.upper, phase_solve_mask(forests, z, op),
                           phase_context_mask(forests, z, op), op.sync);
}

std::vector<char> synchronous_collectives(const CollectiveSet& set, std::int64_t ns, const std::vector<char>& solve,
                                          SyncParts sync) {
  std::vector<char> out(set.size(), 0);
  if (!sync.solved && !sync.context) return out;
  for (std::size_t c = 0; c < set.size(); ++c) {
    const std::int64_t k = set.id[c] % ns;  // ids are k, ns + k, 2 ns + k or 3 ns + k
    out[c] = sync.covers(solve.empty() || solve[k] != 0);
  }
  return out;
}

bool mixes_tree_shapes(const std::vector<char>& sync, const TreeShape& shape) {
  return shape.name != "binary" && std::find(sync.begin(), sync.end(), 1) != sync.end();
}

namespace {

TreeShape binary_like(const TreeShape& shape) { return TreeShape{"binary", shape.seed, shape.flat_threshold}; }

// `plan`'s links of the synchronous collectives replaced by `binary`'s (the same entries:
// who takes part does not depend on the shape).
void take_synchronous_links(TreePlan& plan, const TreePlan& binary, const std::vector<char>& sync) {
  for (std::size_t i = 0; i < plan.index.size(); ++i)
    if (sync[static_cast<std::size_t>(plan.index[i])]) plan.links[i] = binary.links[i];
}

}  // namespace

TreePlan phase_tree_plan(const CollectiveSet& set, const std::vector<char>& sync, int rank, const TreeShape& shape,
                         const Topology& topo) {
  TreePlan plan = build_tree_plan(set, rank, shape, topo);
  if (mixes_tree_shapes(sync, shape))
    take_synchronous_links(plan, build_tree_plan(set, rank, binary_like(shape), topo), sync);
  return plan;
}

std::vector<TreePlan> phase_tree_plans(const CollectiveSet& set, const std::vector<char>& sync,
                                       const TreeShape& shape, const Topology& topo) {
  std::vector<TreePlan> plans = build_tree_plans_virtual(set, shape, topo);
  if (!mixes_tree_shapes(sync, shape)) return plans;
  const std::vector<TreePlan> binary = build_tree_plans_virtual(set, binary_like(shape), topo);
  for (std::size_t r = 0; r < plans.size(); ++r) take_synchronous_links(plans[r], binary[r], sync);
  return plans;
}

std::int64_t PhaseSchedule::entry(std::int64_t k) const {
  const auto it = std::lower_bound(key.begin(), key.end(), k);
  return it != key.end() && *it == k ? it - key.begin() : -1;
}

PhaseSchedule make_phase(const SupernodalStructure& sym, const SupernodeBlocks& blocks, const LocalLayout2D& layout,
                         const CollectiveSet& set, const TreePlan& plan, bool upper, const std::vector<char>& solve,
                         SyncParts sync) {
  const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
  auto solved = [&](std::int64_t k) { return solve.empty() || solve[k] != 0; };
  auto find = [](const std::vector<std::int32_t>& sorted, std::int64_t k) -> std::int32_t {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), k);
    return it != sorted.end() && *it == k ? static_cast<std::int32_t>(it - sorted.begin()) : -1;
  };
  PhaseSchedule ph;
  ph.upper = upper;
  ph.ns = ns;
  const std::int64_t id0 = upper ? 2 * ns : 0;
  const std::size_t m = plan.index.size();
  ph.child_ptr.push_back(0);
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t c = static_cast<std::size_t>(plan.index[i]);
    const TreeLinks& l = plan.links[i];
    const std::int64_t key = set.id[c] - id0;
    if (!ph.key.empty() && key <= ph.key.back()) throw std::logic_error("solve phase: entries out of order");
    ph.key.push_back(key);
    ph.width.push_back(set.count[c]);
    ph.parent.push_back(l.parent);
    ph.children.insert(ph.children.end(), l.children.begin(), l.children.end());
    ph.child_ptr.push_back(static_cast<std::int64_t>(ph.children.size()));
    const bool bcast = key < ns;
    const std::int64_t k = bcast ? key : key - ns;
    ph.waiting.push_back(bcast ? 0 : static_cast<std::int32_t>(l.children.size()));
    ph.expected += bcast ? (l.parent >= 0 ? 1 : 0) : static_cast<std::int64_t>(l.children.size());
    ph.local.push_back(bcast ? find(upper ? layout.u_src : layout.l_col, k) : -1);
    ph.diag.push_back(!bcast && l.parent < 0 ? find(layout.diag_sn, k) : -1);
    ph.solves.push_back(!bcast && solved(k));
    ph.sum_off.push_back(bcast ? -1 : ph.sum_size);
    if (!bcast) ph.sum_size += set.count[c];
    if (!bcast && l.parent < 0 && solved(k)) ++ph.solved_here;
    if (bcast && l.parent < 0 && !solved(k)) ph.starts.push_back(static_cast<std::int32_t>(i));  // U context
    if (!bcast && l.parent < 0 && ph.diag.back() < 0)
      throw std::logic_error("solve phase: a reduction rooted off its diagonal owner");
  }
  ph.bcast.assign(m, -1);
  for (std::size_t i = 0; i < m; ++i)
    if (ph.key[i] >= ns && ph.parent[i] < 0 && ph.solves[i]) ph.bcast[i] = static_cast<std::int32_t>(ph.entry(ph.key[i] - ns));
  auto reduction = [&](std::int64_t k) {
    const std::int64_t e = ph.entry(ns + k);
    if (e < 0) throw std::logic_error("solve phase: a local block outside this rank's reductions");
    return static_cast<std::int32_t>(e);
  };
  // Every local block of the phase adds to one reduction: L(I, K) to I's, U(K, J) to K's.
  if (!upper) {
    ph.l_target.assign(layout.l_block.size(), -1);
    for (std::size_t c = 0; c < layout.l_col.size(); ++c)
      if (solved(layout.l_col[c]))
        for (std::int64_t p = layout.l_ptr[c]; p < layout.l_ptr[c + 1]; ++p) {
          const std::int32_t e = reduction(blocks.sn[layout.l_block[p]]);
          ph.l_target[p] = e;
          ++ph.waiting[e];
        }
  } else {
    ph.u_ptr.push_back(0);
    for (std::size_t src = 0; src < layout.u_src.size(); ++src) {
      for (std::int64_t p = layout.u_ptr[src]; p < layout.u_ptr[src + 1]; ++p) {
        const std::int64_t K = blocks.col[layout.u_block[p]];
        if (!solved(K)) continue;
        const std::int32_t e = reduction(K);
        ph.u_pos.push_back(p);
        ph.u_target.push_back(e);
        ++ph.waiting[e];
      }
      ph.u_ptr.push_back(static_cast<std::int64_t>(ph.u_pos.size()));
    }
  }
  ph.gated.assign(m, 0);
  for (std::size_t i = 0; i < m; ++i) {
    const std::int64_t k = ph.supernode(static_cast<std::int64_t>(i));
    if (!sync.covers(solved(k))) continue;
    // a broadcast this rank roots for a supernode it solves goes on with its reduction
    if (ph.is_broadcast(static_cast<std::int64_t>(i)) && ph.parent[i] < 0 && solved(k)) continue;
    ph.order.push_back(static_cast<std::int32_t>(i));
    ph.gated[i] = 1;
  }
  std::sort(ph.order.begin(), ph.order.end(), [&](std::int32_t a, std::int32_t b) {
    const std::int64_t sa = ph.supernode(a), sb = ph.supernode(b);
    if (sa != sb) return upper ? sa > sb : sa < sb;
    return !ph.is_broadcast(a) && ph.is_broadcast(b);
  });
  return ph;
}

void add_phase_stats(CommStats& stats, const PhaseSchedule& ph, int rank, const Topology& topo, int nrhs) {
  for (std::size_t e = 0; e < ph.key.size(); ++e) {
    const bool bcast = ph.is_broadcast(static_cast<std::int64_t>(e));
    const int step = ph.upper ? (bcast ? u_broadcast : u_reduce) : (bcast ? l_broadcast : l_reduce);
    add_link_stats(stats.steps[step], rank, ph.parent[e], ph.children.data() + ph.child_ptr[e],
                   static_cast<std::size_t>(ph.child_ptr[e + 1] - ph.child_ptr[e]), bcast, 8 + 8 * ph.width[e] * nrhs,
                   topo);
  }
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

std::vector<ZStep> layer_z_steps(const ForestPartition& forests, const ProcessGrid3D& grid, int z, int step,
                                 bool reduce) {
  const ProcessGrid2D layer = grid.layer(z);
  std::vector<ZStep> by_rank(static_cast<std::size_t>(layer.size()));
  const auto [peer_z, send] = z_role(z, step, reduce);
  if (peer_z < 0) return by_rank;
  for (std::int32_t k : shared_supernodes(forests, z, step)) by_rank[layer.diag_owner(k) - layer.base].sn.push_back(k);
  for (int q = 0; q < layer.size(); ++q) {
    by_rank[q].peer = layer.base + q + (peer_z - z) * grid.layer_size();
    by_rank[q].send = send;
  }
  return by_rank;
}

ZStep build_z_step(const ForestPartition& forests, const ProcessGrid3D& grid, int rank, int step, bool reduce) {
  const int z = grid.z_of(rank);  // the layer's steps, this rank's: one rule for the MPI solve and the virtual world
  return layer_z_steps(forests, grid, z, step, reduce)[static_cast<std::size_t>(rank - grid.layer(z).base)];
}

std::vector<GridSync::Exchange> recursive_doubling(int i, int p) {
  require(p >= 1 && i >= 0 && i < p,
          "recursive doubling: participant " + std::to_string(i) + " of " + std::to_string(p));
  int pof2 = 1;
  while (2 * pof2 <= p) pof2 *= 2;
  const int rem = p - pof2;
  std::vector<GridSync::Exchange> out;
  // The first 2 rem participants pair up: the even one hands its part to the odd one and
  // waits for the result; the others (renumbered 0 .. pof2 - 1) exchange with partners at
  // distance 1, 2, 4, ...
  if (i < 2 * rem && i % 2 == 0) return {{i + 1, true, false}, {i + 1, false, true}};
  if (i < 2 * rem) out.push_back({i - 1, false, true});
  const int v = i < 2 * rem ? i / 2 : i - rem;
  auto real = [&](int u) { return u < rem ? 2 * u + 1 : u + rem; };
  for (int mask = 1; mask < pof2; mask *= 2) out.push_back({real(v ^ mask), true, true});
  if (i < 2 * rem) out.push_back({i - 1, true, false});
  return out;
}

GridSync build_grid_sync(const SupernodalStructure& sym, const ProcessGrid2D& layer, int rank, const SolveOp& op) {
  require(op.kind == SolveOp::counters || op.kind == SolveOp::barrier, "grid synchronisation: not a sync op");
  require(layer.contains(rank), "grid synchronisation: rank " + std::to_string(rank) + " outside its grid");
  const int q = rank - layer.base, row = q / layer.py, col = q % layer.py;
  GridSync gs;
  const bool counters = op.kind == SolveOp::counters;
  const int p = counters ? layer.py : layer.size(), i = counters ? col : q;
  gs.steps = recursive_doubling(i, p);
  for (GridSync::Exchange& x : gs.steps) x.peer = counters ? layer.rank_of(row, x.peer) : layer.base + x.peer;
  if (counters) {
    const std::int64_t ns = static_cast<std::int64_t>(sym.sn_start.size()) - 1;
    gs.bytes = 4 * ((ns + layer.px - 1) / layer.px);  // SuperLU_DIST's nlb = CEILING(nsupers, Pr) ints
  }
  return gs;
}

void add_sync_stats(CommStats& stats, const GridSync& gs, const Topology& topo, int rank) {
  StepStats& s = stats.steps[grid_sync];
  for (const GridSync::Exchange& x : gs.steps) {
    const Locality where = locality(topo, rank, x.peer);
    if (x.send) s.add_send(where, gs.bytes);
    if (x.recv) s.add_recv(where, gs.bytes);
  }
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

}  // namespace commsolve
