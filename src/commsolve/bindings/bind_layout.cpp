// A distributed solve's layout and options as bound value types, with the rules and the
// lists of names every entry point asks (direct/solve_layout.hpp, direct/solve_schedule.hpp):
// the grid, the algorithm/Pz rule, forests, and what a solve on a layout moves and computes,
// counted without MPI.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <tuple>

#include "commsolve/bindings/common.hpp"
#include "commsolve/core/thread_team.hpp"
#include "commsolve/direct/solve_layout.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

void bind_grid(nb::module_& m) {
  nb::class_<ProcessGrid3D>(m, "ProcessGrid3D",
                            "Px x Py x Pz ranks: Pz layers of Px x Py (rank = z Px Py + row Py + column); every "
                            "dimension positive, Pz a power of two.")
      .def("__init__", [](ProcessGrid3D* self, int px, int py, int pz) {
        const ProcessGrid3D g{px, py, pz};
        check_grid_3d(g);
        new (self) ProcessGrid3D(g);
      }, "px"_a, "py"_a, "pz"_a = 1)
      .def_ro("px", &ProcessGrid3D::px)
      .def_ro("py", &ProcessGrid3D::py)
      .def_ro("pz", &ProcessGrid3D::pz)
      .def_prop_ro("size", &ProcessGrid3D::size)
      .def("__iter__", [](const ProcessGrid3D& g) { return nb::iter(nb::make_tuple(g.px, g.py, g.pz)); })
      .def("__eq__", [](const ProcessGrid3D& a, const ProcessGrid3D& b) {
        return a.px == b.px && a.py == b.py && a.pz == b.pz;
      })
      .def("__repr__", [](const ProcessGrid3D& g) { return "ProcessGrid3D(" + grid_name(g) + ")"; })
      .def("__str__", &grid_name)
      .def("__getstate__", [](const ProcessGrid3D& g) { return std::make_tuple(g.px, g.py, g.pz); })
      .def("__setstate__", [](ProcessGrid3D& g, const std::tuple<int, int, int>& t) {
        const ProcessGrid3D checked{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
        check_grid_3d(checked);
        new (&g) ProcessGrid3D(checked);
      });
  m.def("parse_grid", &parse_grid, "text"_a, "max_ranks"_a = 2147483647, "where"_a = "an MPI communicator",
        "The grid spelled 'PxQ' or 'PxQxR' (R = Pz), checked: the grid rule (ValueError saying what is wrong); "
        "at most max_ranks ranks, what `where` handles.");
  m.def("default_threads", &default_threads,
        "Threads per rank when none are asked for: OMP_NUM_THREADS if it starts with a positive whole number, else 1.");
  m.def("squarest_grid", &squarest_grid, "nranks"_a, "The squarest Px x Py x 1 grid of nranks ranks, Px <= Py.");
  m.def("check_grid_ranks", &check_grid_ranks, "grid"_a, "nranks"_a, "spelled"_a,
        "ValueError unless the grid has exactly nranks ranks (spelled: the grid as the user wrote it).");
}

void bind_options(nb::module_& m) {
  m.def("algorithm_names", &algorithm_names);
  m.def("allreduce_names", &allreduce_names);
  m.def("forest_partition_names", &forest_partition_names);
  m.def("default_algorithm", [](int pz) { return algorithm_name(default_algorithm(pz)); }, "pz"_a,
        "The algorithm a grid of Pz layers runs when none is asked for.");
  m.def("algorithm_runs_on", [](const std::string& algorithm, int pz) {
    return runs_on(parse_algorithm(algorithm), pz);
  }, "algorithm"_a, "pz"_a, "The algorithm/Pz rule: whether the algorithm runs on Pz layers.");
  m.def("check_algorithm_grid", [](const std::string& algorithm, int pz) {
    check_algorithm_grid(parse_algorithm(algorithm), pz);
  }, "algorithm"_a, "pz"_a, "The algorithm/Pz rule: ValueError unless the algorithm runs on Pz layers.");
  m.def("kernel_names", &kernel_names);
  nb::class_<SolveOptions>(m, "SolveOptions",
                           "How a solve runs on its layout: algorithm, intra-grid tree shape (a TreeShape), "
                           "inter-grid messages (allreduce), dense kernels and the leaf forests' synchronisation "
                           "(leaf_sync). Unset arguments take the C++ defaults.")
      .def("__init__", [](SolveOptions* self, std::optional<std::string> algorithm, std::optional<TreeShape> tree,
                          std::optional<std::string> allreduce, std::optional<std::string> kernels,
                          std::optional<bool> leaf_sync) {
        SolveOptions o;
        if (algorithm) o.algorithm = parse_algorithm(*algorithm);
        if (tree) o.shape = *tree;
        if (allreduce) o.packed_z = parse_allreduce(*allreduce);
        if (kernels) o.kernels = parse_kernels(*kernels);
        if (leaf_sync) o.leaf_sync = *leaf_sync;
        check_tree_shape(o.shape);
        new (self) SolveOptions(std::move(o));
      }, "algorithm"_a = nb::none(), "tree"_a = nb::none(), "allreduce"_a = nb::none(), "kernels"_a = nb::none(),
         "leaf_sync"_a = nb::none())
      .def_prop_ro("algorithm", [](const SolveOptions& o) { return algorithm_name(o.algorithm); })
      .def_ro("tree", &SolveOptions::shape)
      .def_prop_ro("allreduce", [](const SolveOptions& o) { return allreduce_names()[o.packed_z ? 0 : 1]; })
      .def_prop_ro("kernels", [](const SolveOptions& o) { return kernel_names()[static_cast<int>(o.kernels)]; })
      .def_ro("leaf_sync", &SolveOptions::leaf_sync)
      .def("effective", &effective_options,
           "The options as the solve runs them (3d-baseline-pdgstrs: 3d-baseline with pdgstrs3d's costs).")
      .def("__eq__", [](const SolveOptions& a, const SolveOptions& b) {
        return a.algorithm == b.algorithm && a.packed_z == b.packed_z && a.shape.name == b.shape.name &&
               a.shape.seed == b.shape.seed && a.shape.flat_threshold == b.shape.flat_threshold &&
               a.kernels == b.kernels && a.leaf_sync == b.leaf_sync;
      })
      .def("__repr__", [](const SolveOptions& o) {
        return "SolveOptions('" + algorithm_name(o.algorithm) + "', tree='" + o.shape.name + "', seed=" +
               std::to_string(o.shape.seed) + ", flat_threshold=" + std::to_string(o.shape.flat_threshold) +
               ", allreduce='" + allreduce_names()[o.packed_z ? 0 : 1] + "', kernels='" +
               kernel_names()[static_cast<int>(o.kernels)] + "', leaf_sync=" + (o.leaf_sync ? "True" : "False") + ")";
      })
      .def("__getstate__", [](const SolveOptions& o) {
        return std::make_tuple(algorithm_name(o.algorithm), o.shape.name, o.shape.seed, o.shape.flat_threshold,
                               o.packed_z, kernel_names()[static_cast<int>(o.kernels)], o.leaf_sync);
      })
      .def("__setstate__", [](SolveOptions& o, const std::tuple<std::string, std::string, std::uint64_t, int, bool,
                                                                std::string, bool>& t) {
        const SolveOptions checked{parse_algorithm(std::get<0>(t)),
                                   TreeShape{std::get<1>(t), std::get<2>(t), std::get<3>(t)}, std::get<4>(t),
                                   parse_kernels(std::get<5>(t)), std::get<6>(t)};
        check_tree_shape(checked.shape);
        new (&o) SolveOptions(checked);
      });
  nb::class_<RhsMap>(m, "RhsMap",
                     "How b and x meet a solve: their Distribution by rows, the row of b that factor row k reads "
                     "(row_order[k]) and the row of x that factor column k gives (col_order[k]).")
      .def("__init__", [](RhsMap* self, const Distribution& dist, In<std::int32_t> row_order,
                          In<std::int32_t> col_order) {
        new (self) RhsMap{dist, to_vector(row_order), to_vector(col_order)};
      }, "distribution"_a, "row_order"_a, "col_order"_a)
      .def_ro("distribution", &RhsMap::dist)
      .def_prop_ro("row_order", [](const RhsMap& r) { return view(r.row_order); })
      .def_prop_ro("col_order", [](const RhsMap& r) { return view(r.col_order); });
}

void bind_solve_layout(nb::module_& m) {
  m.def("forest_partition", [](const SupernodalStructure& s, int pz, const std::string& method, double imbalance) {
    return to_numpy(partition_forests(s, pz, method, imbalance).forest);
  }, "structure"_a, "pz"_a, "method"_a, "imbalance"_a = 0.2,
        "Each supernode's forest (heap index in [0, 2 pz - 1)) for pz layers: nd or greedy.");
  m.def("validate_forests", [](const SupernodalStructure& s, In<std::int32_t> forest, int pz) {
    checked_forests(s, to_vector(forest), pz);
  }, "structure"_a, "forest"_a, "pz"_a);
  nb::class_<SolveLayout>(m, "SolveLayout",
                          "A solve's layout, checked once: a SupernodalStructure (shared, not copied), a "
                          "ProcessGrid3D, each supernode's forest and the block map. What the MPI solve, the 3D "
                          "factorization, the virtual-world statistics and the simulator take.")
      .def("__init__", [](SolveLayout* self, std::shared_ptr<SupernodalStructure> s, const ProcessGrid3D& grid,
                          In<std::int32_t> forest) {
        new (self) SolveLayout(std::move(s), grid, to_vector(forest));
      }, "structure"_a, "grid"_a, "forests"_a)
      .def("__init__", [](SolveLayout* self, std::shared_ptr<SupernodalStructure> s, const ProcessGrid3D& grid,
                          const std::string& partition) {
        new (self) SolveLayout(std::move(s), grid, partition);
      }, "structure"_a, "grid"_a, "partition"_a = "nd", "The forests of `partition` (forest_partition_names).")
      .def_prop_ro("structure", [](const SolveLayout& l) { return std::const_pointer_cast<SupernodalStructure>(
                                                             l.structure()); })
      .def_prop_ro("grid", &SolveLayout::grid)
      .def_prop_ro("forests", [](const SolveLayout& l) { return view(l.forests().forest); })
      .def("check", &SolveLayout::check, "options"_a,
           "ValueError unless the SolveOptions run on this layout (tree shape known, algorithm/Pz rule).");
}

void bind_solve_counts(nb::module_& m) {
  m.def("solve_program", [](const std::string& algorithm, int z, int pz, bool leaf_sync) {
    std::vector<nb::tuple> ops;
    const std::vector<SolveOp> program = solve_program(parse_algorithm(algorithm), z, forest_levels(pz), leaf_sync);
    for (const SolveOp& op : program) {
      const bool sync = op.sync.solved;
      const char* kind = op.kind == SolveOp::phase ? (op.upper ? (sync ? "U-sync" : "U") : (sync ? "L-sync" : "L"))
                         : op.kind == SolveOp::z_reduce  ? "Z-reduce"
                         : op.kind == SolveOp::z_broadcast ? "Z-broadcast"
                         : op.kind == SolveOp::counters    ? (op.upper ? "U-counters" : "L-counters")
                                                           : "barrier";
      ops.push_back(nb::make_tuple(kind, op.lo, op.hi, op.step));
    }
    return nb::make_tuple(ops, synchronisation_points(program));
  }, "algorithm"_a, "z"_a, "pz"_a, "leaf_sync"_a = false,
        "Grid z's program: ([(kind, lo, hi, step), ...], synchronisation points between grids). kind: L, U (a "
        "message-driven solve phase of the forests at levels lo..hi), L-sync, U-sync (the same, one supernode at a "
        "time), Z-reduce, Z-broadcast (inter-grid step), L-counters, U-counters (the leaf forest's counter allreduce "
        "over the process row), barrier (over the grid).");
  m.def("grid_flops", [](const SolveLayout& l, const std::string& algorithm) {
    return to_numpy(grid_flops(l, parse_algorithm(algorithm)));
  }, "layout"_a, "algorithm"_a, "Floating-point operations per grid of one solve with one right-hand side.");
  m.def("solve_flops", &solve_flops, "structure"_a, "Floating-point operations of the whole factor solved once.");
  m.def("solve_stats_virtual", [](const SolveLayout& l, const SolveOptions& o, const Topology& topo, int nrhs,
                                  const RhsMap* rhs) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = solve_stats_virtual(l, o, topo, nrhs, rhs);
    }
    return stats_array(all, false);
  }, "layout"_a, "options"_a, "topology"_a, "nrhs"_a, "rhs"_a = nb::none(),
        "Every rank's planned statistics of one solve, shape (ranks, 8, 8) (steps as SolveStep).");
  m.def("triangular_solve_collectives", [](const SupernodalStructure& s, int px, int py, bool upper) {
    return triangular_solve_collectives(s, supernode_blocks(s), ProcessGrid2D{px, py}, upper);
  }, "structure"_a, "px"_a, "py"_a, "upper"_a);
  m.def("phase_collectives", [](const SupernodalStructure& s, int px, int py, int base, bool upper,
                                In<std::int8_t> solve, In<std::int8_t> context, bool whole_lines) {
    auto mask = [](const In<std::int8_t>& a) { return std::vector<char>(a.data(), a.data() + a.shape(0)); };
    return phase_collectives(s, supernode_blocks(s), ProcessGrid2D{px, py, base}, upper, mask(solve), mask(context),
                             SyncParts{whole_lines, whole_lines});
  }, "structure"_a, "px"_a, "py"_a, "base"_a, "upper"_a, "solve"_a, "context"_a, "whole_lines"_a = false);
}

}  // namespace

void bind_layout(nb::module_& m) {
  bind_grid(m);
  bind_options(m);
  bind_solve_layout(m);
  bind_solve_counts(m);
}

}  // namespace commsolve::bindings
