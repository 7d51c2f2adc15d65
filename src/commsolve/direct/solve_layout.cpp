#include "commsolve/direct/solve_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/core/error.hpp"

namespace commsolve {

ProcessGrid3D parse_grid(const std::string& text, std::int64_t max_ranks, const std::string& where) {
  std::vector<std::int64_t> dims;
  std::string part;
  bool ok = !text.empty();
  for (std::size_t i = 0; ok && i <= text.size(); ++i) {
    const char c = i < text.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))) : 'x';
    if (c != 'x') {
      part += c;
      continue;
    }
    const char* blank = " \t\n\r\f\v";
    const std::size_t first = part.find_first_not_of(blank), last = part.find_last_not_of(blank);
    std::string digits = first == std::string::npos ? "" : part.substr(first, last - first + 1);
    const bool negative = !digits.empty() && digits[0] == '-';  // a number, refused below as not positive
    if (negative) digits.erase(0, 1);
    ok = !digits.empty() && digits.size() <= 12 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (ok) dims.push_back(negative ? -std::stoll(digits) : std::stoll(digits));
    part.clear();
  }
  if (!ok || dims.size() < 2 || dims.size() > 3)
    throw std::invalid_argument("grid must look like 2x3 or 2x2x2, got '" + text + "'");
  if (dims.size() == 2) dims.push_back(1);
  double ranks = 1;
  for (std::int64_t d : dims) ranks *= static_cast<double>(std::max<std::int64_t>(d, 0));
  require(ranks <= static_cast<double>(max_ranks), "a " + text + " grid has more ranks than " + where +
                                                        " handles: " + std::to_string(max_ranks) + " ranks at most");
  for (std::int64_t d : dims)
    require(d >= std::numeric_limits<int>::min() && d <= std::numeric_limits<int>::max(),
            "a " + text + " grid has a dimension beyond what an int holds");
  const ProcessGrid3D grid{static_cast<int>(dims[0]), static_cast<int>(dims[1]), static_cast<int>(dims[2])};
  check_grid_3d(grid, text);
  return grid;
}

ProcessGrid3D squarest_grid(int nranks) {
  require(nranks >= 1, "a grid needs at least one rank, got " + std::to_string(nranks));
  int px = 1;
  for (int d = 1; static_cast<std::int64_t>(d) * d <= nranks; ++d)
    if (nranks % d == 0) px = d;
  return ProcessGrid3D{px, nranks / px, 1};
}

std::string grid_name(const ProcessGrid3D& g) {
  return std::to_string(g.px) + "x" + std::to_string(g.py) + "x" + std::to_string(g.pz);
}

void check_grid_ranks(const ProcessGrid3D& grid, int nranks, const std::string& spelled) {
  require(grid.size() == nranks, "a " + spelled + " grid needs " + std::to_string(grid.size()) +
                                     " ranks, the communicator has " + std::to_string(nranks));
}

const std::vector<std::string>& forest_partition_names() {
  static const std::vector<std::string> names = {"nd", "greedy"};
  return names;
}

ForestPartition partition_forests(const SupernodalStructure& sym, int pz, const std::string& method,
                                  double imbalance) {
  forest_levels(pz);  // Pz a power of two
  if (method != "nd" && method != "greedy")
    throw std::invalid_argument("unknown forest partition '" + method + "' (known: nd, greedy)");
  if (pz == 1)  // one layer: every supernode in the one forest, whatever the ordering
    return ForestPartition{1, 0, std::vector<std::int32_t>(static_cast<std::size_t>(sym.nsuper()), 0)};
  if (method == "greedy") return greedy_forests(sym, pz, imbalance);
  const SeparatorTree& t = sym.tree;
  require(t.num_nodes() > 0, "the nd forest partition needs a separator tree (factor with ordering='tree')");
  return nd_forests(sym.nsuper(), pz, t.num_nodes() - 1, t.left, t.right, t.sn_first, t.sn_last);
}

SolveLayout::SolveLayout(std::shared_ptr<const SupernodalStructure> sym, const ProcessGrid3D& grid,
                         std::vector<std::int32_t> forest)
    : sym_(std::move(sym)), grid_(grid) {
  require(sym_ != nullptr, "solve layout: no structure");
  check_grid_3d(grid_, grid_name(grid_));
  forests_ = checked_forests(*sym_, std::move(forest), grid_.pz);
  blocks_ = supernode_blocks(*sym_);
}

SolveLayout::SolveLayout(std::shared_ptr<const SupernodalStructure> sym, const ProcessGrid3D& grid,
                         const std::string& method)
    : SolveLayout(sym, grid, partition_forests(*sym, grid.pz, method).forest) {}

void SolveLayout::check(const SolveOptions& opts) const {
  check_tree_shape(opts.shape);
  check_algorithm_grid(opts.algorithm, grid_.pz);
}

std::vector<CommStats> solve_stats_virtual(const SolveLayout& layout, const SolveOptions& opts, const Topology& topo,
                                           int nrhs, const RhsMap* rhs) {
  layout.check(opts);
  const SupernodalStructure& sym = layout.sym();
  sym.require_whole("every rank's solve statistics");
  const ProcessGrid3D& grid = layout.grid();
  const ForestPartition& forests = layout.forests();
  require(topo.size() == grid.size(), "solve statistics: topology of " + std::to_string(topo.size()) +
                                          " ranks for a grid of " + std::to_string(grid.size()));
  std::vector<CommStats> stats(static_cast<std::size_t>(grid.size()));
  for (auto& s : stats) s.steps.resize(num_solve_steps);
  const SolveOptions run = effective_options(opts);
  for (int z = 0; z < grid.pz; ++z) {
    const ProcessGrid2D layer = grid.layer(z);
    for (const SolveOp& op : solve_program(run.algorithm, z, forests.nlev, run.leaf_sync)) {
      if (op.kind == SolveOp::phase) {
        const CollectiveSet set = op_collectives(sym, layout.blocks(), layer, forests, z, op);
        const std::vector<char> sync =
            synchronous_collectives(set, sym.nsuper(), phase_solve_mask(forests, z, op), op.sync);
        std::vector<CommStats> per;
        if (mixes_tree_shapes(sync, run.shape))  // the synchronous part's trees differ from the rest's: from the plans
          for (const TreePlan& plan : phase_tree_plans(set, sync, run.shape, topo))
            per.push_back(tree_stats(plan, set, topo, nrhs));
        else
          per = tree_stats_virtual(set, run.shape, topo, nrhs);
        for (int r = layer.base; r < layer.base + layer.size(); ++r) {
          stats[r].steps[op.upper ? u_broadcast : l_broadcast] += per[r].steps[0];
          stats[r].steps[op.upper ? u_reduce : l_reduce] += per[r].steps[1];
        }
        continue;
      }
      if (op.kind == SolveOp::counters || op.kind == SolveOp::barrier) {
        for (int r = layer.base; r < layer.base + layer.size(); ++r)
          add_sync_stats(stats[r], build_grid_sync(sym, layer, r, op), topo, r);
        continue;
      }
      const bool reduce = op.kind == SolveOp::z_reduce;
      const std::vector<ZStep> by_rank = layer_z_steps(forests, grid, z, op.step, reduce);
      for (int q = 0; q < layer.size(); ++q)
        add_z_stats(stats[layer.base + q], by_rank[q], sym, topo, layer.base + q, reduce, run.packed_z, nrhs);
    }
  }
  if (rhs != nullptr) {
    rhs->check(sym.n, grid.size(), "solve statistics");
    const std::vector<std::int32_t> solver = column_solvers(sym, grid, forests);
    for (const HaloPattern& p : rhs_patterns(rhs->dist, rhs->row_order, solver))
      stats[p.rank].steps[b_to_diagonal] += plan_stats(standard_plan(p), topo, 8 * nrhs).steps[0];
    for (const HaloPattern& p : rhs_patterns(rhs->dist, rhs->col_order, solver))
      stats[p.rank].steps[x_from_diagonal] += plan_stats(standard_plan(p), topo, 8 * nrhs).reversed().steps[0];
  }
  return stats;
}

namespace {

// 2 w (w + r) per supernode: its diagonal triangle and the panel below, one right-hand side.
std::vector<double> supernode_flops(const SupernodalStructure& sym) {
  std::vector<double> out(static_cast<std::size_t>(sym.nsuper()));
  for (std::int64_t k = 0; k < sym.nsuper(); ++k) {
    const double w = static_cast<double>(sym.sn_start[k + 1] - sym.sn_start[k]);
    out[k] = 2.0 * w * (w + static_cast<double>(sym.rows_below(k)));
  }
  return out;
}

}  // namespace

std::vector<double> grid_flops(const SolveLayout& layout, SolveAlgorithm alg) {
  check_algorithm_grid(alg, layout.grid().pz);
  const ForestPartition& forests = layout.forests();
  const std::vector<double> per_sn = supernode_flops(layout.sym());
  std::vector<double> out(static_cast<std::size_t>(forests.pz), 0.0);
  for (int z = 0; z < forests.pz; ++z)
    for (const SolveOp& op : solve_program(alg, z, forests.nlev))
      if (op.kind == SolveOp::phase) {
        const std::vector<char> m = phase_solve_mask(forests, z, op);
        for (std::size_t k = 0; k < per_sn.size(); ++k)
          if (m[k]) out[z] += per_sn[k];
      }
  return out;
}

double solve_flops(const SupernodalStructure& sym) {
  double total = 0;
  for (double f : supernode_flops(sym)) total += 2 * f;  // L and U
  return total;
}

}  // namespace commsolve
