// Sparse direct solvers: orderings, symbolic and numeric factorization, distributed triangular solves.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>

#include "bindings/common.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "direct/block_layout.hpp"
#include "direct/block_store.hpp"
#include "direct/factor3d.hpp"
#include "direct/factor_grid.hpp"
#include "direct/forests.hpp"
#include "direct/matching.hpp"
#include "direct/solve_schedule.hpp"
#include "direct/separator_tree.hpp"
#include "direct/supernodal_lu.hpp"
#include "direct/symbolic.hpp"
#include "direct/trisolve.hpp"
#include "sparse/distribution.hpp"
#include "topology/topology.hpp"
#include "trees/tree_plan.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

using RowMajor = nb::ndarray<double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using RowMajorIn = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// A TriSolve's arguments from Python's, checked (both constructors).
struct TriSolveArgs {
  MPI_Comm comm;
  SupernodalStructure sym;
  ForestPartition forests;
  std::vector<std::int32_t> row_order, col_order;
  SolveOptions opts;
  TriSolveArgs(std::int64_t handle, int pz, const In<std::int64_t>& sn_start, const In<std::int64_t>& rows_ptr,
               const In<std::int32_t>& rows, const In<std::int32_t>& forest, const In<std::int32_t>& ro,
               const In<std::int32_t>& co, const std::string& algorithm, const std::string& shape, std::uint64_t seed,
               int threshold, bool packed)
      : comm(comm_from_handle(handle)), sym(structure_from(sn_start, rows_ptr, rows)), forests(forests_from(forest, pz)),
        row_order(to_vector(ro)), col_order(to_vector(co)), opts(solve_options(algorithm, shape, seed, threshold, packed)) {}
};

}  // namespace

void bind_direct(nb::module_& m) {
  // ---- symbolic factorization -------------------------------------------------------
  m.def("metis_nested_dissection", [](In<std::int32_t> xadj, In<std::int32_t> adjncy) {
    std::vector<std::int32_t> perm;
    {
      nb::gil_scoped_release nogil;
      perm = metis_nested_dissection(static_cast<std::int64_t>(xadj.shape(0)) - 1, xadj.data(), adjncy.data());
    }
    return to_numpy(std::move(perm));
  }, "xadj"_a, "adjncy"_a);
  m.def("separator_tree", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, int levels, int min_split) {
    SeparatorTree t;
    {
      nb::gil_scoped_release nogil;
      t = separator_tree(static_cast<std::int64_t>(xadj.shape(0)) - 1, xadj.data(), adjncy.data(), levels, min_split);
    }
    nb::dict d;
    d["perm"] = to_numpy(std::move(t.perm));
    d["parent"] = to_numpy(std::move(t.parent));
    d["left"] = to_numpy(std::move(t.left));
    d["right"] = to_numpy(std::move(t.right));
    d["level"] = to_numpy(std::move(t.level));
    d["col_start"] = to_numpy(std::move(t.col_start));
    d["col_end"] = to_numpy(std::move(t.col_end));
    return d;
  }, "xadj"_a, "adjncy"_a, "levels"_a, "min_split"_a = 8);
  m.def("symbolic_cholesky", [](In<std::int32_t> indptr, In<std::int32_t> indices, int max_size,
                                In<std::int64_t> breaks, double relax, int relax_subtree) {
    SupernodalStructure f;
    std::vector<std::int64_t> br(breaks.data(), breaks.data() + breaks.shape(0));
    {
      nb::gil_scoped_release nogil;
      f = symbolic_cholesky(static_cast<std::int64_t>(indptr.shape(0)) - 1, indptr.data(), indices.data(), max_size,
                            br, relax, relax_subtree);
    }
    std::int64_t nnz = f.nnz_L();
    return nb::make_tuple(to_numpy(std::move(f.parent)), to_numpy(std::move(f.sn_start)),
                          to_numpy(std::move(f.rows_ptr)), to_numpy(std::move(f.rows)), nnz,
                          to_numpy(std::move(f.post)));
  }, "indptr"_a, "indices"_a, "max_size"_a, "breaks"_a, "relax"_a = 0.0, "relax_subtree"_a = 0);

  nb::class_<SupernodalLU>(m, "SupernodalLU", "Supernodal LU without pivoting (multifrontal, serial).")
      .def("__init__", [](SupernodalLU* self, In<std::int64_t> sn_start, In<std::int64_t> rows_ptr,
                          In<std::int32_t> rows, In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data,
                          In<std::int32_t> t_indptr, In<std::int32_t> t_indices, In<double> t_data, double zero_pivot,
                          bool replace_tiny) {
        SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
        if (sym.n != static_cast<std::int64_t>(indptr.shape(0)) - 1)
          throw nb::value_error("supernodal LU: structure and matrix disagree");
        nb::gil_scoped_release nogil;
        new (self) SupernodalLU(sym,
                                LUEntries{indptr.data(), indices.data(), data.data(), t_indptr.data(),
                                          t_indices.data(), t_data.data()},
                                LUOptions{zero_pivot, replace_tiny});
      }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "indptr"_a, "indices"_a, "data"_a, "t_indptr"_a, "t_indices"_a,
           "t_data"_a, "zero_pivot"_a, "replace_tiny"_a)
      .def("solve", [](const SupernodalLU& lu, nb::ndarray<double, nb::ndim<2>, nb::f_contig, nb::device::cpu> b) {
        if (static_cast<std::int64_t>(b.shape(0)) != lu.structure().n) throw nb::value_error("b has the wrong length");
        nb::gil_scoped_release nogil;
        lu.solve(b.data(), static_cast<int>(b.shape(1)));
      }, "b"_a.noconvert())
      .def_prop_ro("nnz_LU", &SupernodalLU::nnz_LU)
      .def_prop_ro("tiny_pivots_replaced", &SupernodalLU::tiny_pivots_replaced)
      .def_prop_ro("flops", &SupernodalLU::flops)
      .def_prop_ro("allocate_seconds", &SupernodalLU::allocate_seconds)
      .def_prop_ro("numeric_seconds", &SupernodalLU::numeric_seconds);

  nb::class_<BlockStore>(m, "BlockStore", "One rank's blocks of the LU factors, as the distributed solve reads them.")
      .def_prop_ro("size", [](const BlockStore& st) { return static_cast<std::int64_t>(st.values.size()); })
      .def("values", [](const BlockStore& st) {
        return to_numpy(std::vector<double>(st.values.data(), st.values.data() + st.values.size()));
      }, "A copy of the values (layout: direct/block_layout.hpp, LocalLayout2D).")
      .def("reference", [](const BlockStore& st, const SupernodalLU& lu) {
        std::vector<double> out(st.values.size());
        pack_blocks(lu, supernode_blocks(lu.structure()), st.layout, out.data());
        return to_numpy(std::move(out));
      }, "lu"_a, "The serial factors `lu` (a whole factorization) laid out as this store: what it should hold.")
      .def("pieces", [](const BlockStore& st, In<std::int64_t> sn_start, In<std::int64_t> rows_ptr,
                        In<std::int32_t> rows) {
        const SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
        const SupernodeBlocks blocks = supernode_blocks(sym);
        const StoreIndex index(sym, blocks, st);
        std::vector<std::int64_t> k_of, part_of, off, len;
        for (std::int64_t k = 0; k + 1 < static_cast<std::int64_t>(sym.sn_start.size()); ++k)
          for (FactorPart part : {part_diag, part_l, part_u})
            for_each_piece(sym, blocks, st, index, k, part, true, [&](std::int64_t o, std::int64_t n) {
              k_of.push_back(k), part_of.push_back(part), off.push_back(o), len.push_back(n);
            });
        return nb::make_tuple(to_numpy(std::move(k_of)), to_numpy(std::move(part_of)), to_numpy(std::move(off)),
                              to_numpy(std::move(len)));
      }, "sn_start"_a, "rows_ptr"_a, "rows"_a,
           "(supernode, part (0 diagonal, 1 L panel, 2 U block), offset, length) of every piece of the store.");

  m.def("factor_3d", [](std::int64_t comm, const Topology& topo, int px, int py, int pz, In<std::int64_t> sn_start,
                        In<std::int64_t> rows_ptr, In<std::int32_t> rows, In<std::int32_t> forest,
                        In<std::int32_t> entry_rows, In<std::int32_t> entry_cols, In<double> entry_values,
                        double anorm, double zero_pivot, bool replace_tiny, const std::string& shape,
                        std::uint64_t seed, int threshold, std::int64_t send_window) {
    if (send_window < 0) throw nb::value_error("send_window must be at least 0");
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    const ForestPartition f = forests_from(forest, pz);
    const TreeShape tree = solve_options("2d", shape, seed, threshold, true).shape;
    const std::size_t nnz = entry_rows.shape(0);
    if (entry_cols.shape(0) != nnz || entry_values.shape(0) != nnz)
      throw nb::value_error("3D factorization: entry rows, columns and values differ in length");
    MPI_Comm c = comm_from_handle(comm);
    Factor3DResult r;
    {
      nb::gil_scoped_release nogil;
      r = factor_3d(c, topo, ProcessGrid3D{px, py, pz}, sym, f,
                    EntryTriples{static_cast<std::int64_t>(nnz), entry_rows.data(), entry_cols.data(),
                                 entry_values.data()},
                    anorm, LUOptions{zero_pivot, replace_tiny}, tree, send_window);
    }
    nb::dict out;
    out["ok"] = r.ok;
    out["error"] = r.error;
    out["recorded"] = stats_array(r.recorded);
    out["replaced"] = r.replaced;
    out["flops"] = r.flops;
    out["arrange_seconds"] = r.arrange_seconds;
    out["allocate_seconds"] = r.allocate_seconds;
    out["numeric_seconds"] = r.numeric_seconds;
    return nb::make_tuple(std::move(r.store), out);
  }, "comm"_a, "topology"_a, "px"_a, "py"_a, "pz"_a, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a,
        "entry_rows"_a, "entry_cols"_a, "entry_values"_a, "anorm"_a, "zero_pivot"_a, "replace_tiny"_a, "shape"_a,
        "seed"_a, "flat_threshold"_a, "send_window"_a = 0,
        "Collective: the 3D factorization (direct/factor3d.hpp) from this rank's entries of the permuted matrix "
        "(triples of the blocks it factors). Returns (store, info): this rank's BlockStore; info: ok, error, "
        "recorded stats (steps, 8), replaced, flops, and arrange, allocate and numeric seconds.");

  m.def("factor_3d_planned", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                                In<std::int32_t> forest, int px, int py, int pz, const Topology& topo,
                                const std::string& shape, std::uint64_t seed, int threshold) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    const ForestPartition f = forests_from(forest, pz);
    const TreeShape tree = solve_options("2d", shape, seed, threshold, true).shape;
    const ProcessGrid3D grid{px, py, pz};
    check_grid_3d(grid);
    if (topo.size() != grid.size()) throw nb::value_error("3D factorization: topology and grid differ in size");
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = factor_3d_planned(sym, f, grid, topo, tree);
    }
    return stats_array(all, false);
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a, "px"_a, "py"_a, "pz"_a, "topology"_a, "shape"_a, "seed"_a,
        "flat_threshold"_a,
        "Every rank's planned messages of the factorization, shape (ranks, 5, 8) (FactorStep; the entries' step "
        "is left empty).");

  m.def("factor_entries_per_rank", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                                      In<std::int32_t> forest, int px, int py, int pz) {
    const SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    std::vector<std::int64_t> out;
    {
      nb::gil_scoped_release nogil;
      out = factor_entries_per_rank(sym, forests_from(forest, pz), ProcessGrid3D{px, py, pz});
    }
    return to_numpy(std::move(out));
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a, "px"_a, "py"_a, "pz"_a,
        "Every rank's factor entries (its block store's size) on a Px x Py x Pz grid.");

  m.def("triangular_solve_collectives", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr,
                                           In<std::int32_t> rows, int px, int py, bool upper) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    return triangular_solve_collectives(sym, supernode_blocks(sym), ProcessGrid2D{px, py}, upper);
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "px"_a, "py"_a, "upper"_a);

  m.def("phase_collectives", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows, int px,
                                int py, int base, bool upper, In<std::int8_t> solve, In<std::int8_t> context,
                                bool whole_lines) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    auto mask = [](const In<std::int8_t>& a) { return std::vector<char>(a.data(), a.data() + a.shape(0)); };
    return phase_collectives(sym, supernode_blocks(sym), ProcessGrid2D{px, py, base}, upper, mask(solve),
                             mask(context), SyncParts{whole_lines, whole_lines});
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "px"_a, "py"_a, "base"_a, "upper"_a, "solve"_a, "context"_a,
        "whole_lines"_a = false);

  m.def("large_diagonal_matching", [](In<std::int64_t> indptr, In<std::int32_t> indices, In<double> data) {
    const std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(data, indices.shape(0), "data");
    if (n < 1 || indptr.data()[n] != static_cast<std::int64_t>(indices.shape(0)))
      throw nb::value_error("large-diagonal matching: indptr and indices disagree");
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(indices.shape(0)); ++k)
      if (indices.data()[k] < 0 || indices.data()[k] >= n) throw nb::value_error("column index out of range");
    LargeDiagonal d;
    {
      nb::gil_scoped_release nogil;
      d = large_diagonal_matching(n, indptr.data(), indices.data(), data.data());
    }
    return nb::make_tuple(to_numpy(std::move(d.row_of_col)), to_numpy(std::move(d.row_scale)),
                          to_numpy(std::move(d.col_scale)), d.log_product);
  }, "indptr"_a, "indices"_a, "data"_a,
        "MC64-style (job 5) matching of a square CSR matrix: (row_of_col, row_scale, col_scale, log_product).");

  // ---- 3D layout and solves -----------------------------------------------------------
  m.def("algorithm_names", &algorithm_names);
  m.def("supernodal_etree", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows) {
    return to_numpy(supernodal_etree(structure_from(sn_start, rows_ptr, rows)));
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a);
  m.def("nd_forests", [](std::int64_t nsuper, int pz, int root, In<std::int32_t> left, In<std::int32_t> right,
                         In<std::int64_t> sn_first, In<std::int64_t> sn_last) {
    auto ints = [](const In<std::int32_t>& a) { return std::vector<int>(a.data(), a.data() + a.shape(0)); };
    return to_numpy(nd_forests(nsuper, pz, root, ints(left), ints(right), to_vector(sn_first), to_vector(sn_last)).forest);
  }, "nsuper"_a, "pz"_a, "root"_a, "left"_a, "right"_a, "sn_first"_a, "sn_last"_a);
  m.def("greedy_forests", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows, int pz,
                             double imbalance) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    std::vector<std::int32_t> f;
    {
      nb::gil_scoped_release nogil;
      f = greedy_forests(sym, pz, imbalance).forest;
    }
    return to_numpy(std::move(f));
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "pz"_a, "imbalance"_a = 0.2);
  m.def("validate_forests", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                               In<std::int32_t> forest, int pz) {
    checked_forests(structure_from(sn_start, rows_ptr, rows), to_vector(forest), pz);
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a, "pz"_a);
  m.def("solve_program", [](const std::string& algorithm, int z, int pz) {
    std::vector<nb::tuple> ops;
    const std::vector<SolveOp> program = solve_program(parse_algorithm(algorithm), z, forest_levels(pz));
    for (const SolveOp& op : program) {
      const bool sync = op.sync.solved;
      const char* kind = op.kind == SolveOp::phase ? (op.upper ? (sync ? "U-sync" : "U") : (sync ? "L-sync" : "L"))
                         : op.kind == SolveOp::z_reduce ? "Z-reduce" : "Z-broadcast";
      ops.push_back(nb::make_tuple(kind, op.lo, op.hi, op.step));
    }
    return nb::make_tuple(ops, synchronisation_points(program));
  }, "algorithm"_a, "z"_a, "pz"_a,
        "Grid z's program: ([(kind, lo, hi, step), ...], synchronisation points). kind: L, U (a message-driven "
        "solve phase of the forests at levels lo..hi), L-sync, U-sync (the same, one supernode at a time), "
        "Z-reduce, Z-broadcast (inter-grid step).");
  m.def("grid_flops", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                         In<std::int32_t> forest, int pz, const std::string& algorithm) {
    return to_numpy(grid_flops(structure_from(sn_start, rows_ptr, rows), forests_from(forest, pz),
                               parse_algorithm(algorithm)));
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a, "pz"_a, "algorithm"_a);
  m.def("solve_stats_virtual", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                                  In<std::int32_t> forest, int px, int py, int pz, const std::string& algorithm,
                                  const std::string& shape, std::uint64_t seed, int threshold, const Topology& topo,
                                  int nrhs, bool packed, const Distribution* dist,
                                  std::optional<In<std::int32_t>> row_order, std::optional<In<std::int32_t>> col_order) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    const ForestPartition f = forests_from(forest, pz);
    const SolveOptions o = solve_options(algorithm, shape, seed, threshold, packed);
    std::vector<std::int32_t> ro, co;
    if (row_order) ro = to_vector(*row_order);
    if (col_order) co = to_vector(*col_order);
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = solve_stats_virtual(sym, ProcessGrid3D{px, py, pz}, f, o.algorithm, o.shape, topo, nrhs, packed, dist,
                                row_order ? &ro : nullptr, col_order ? &co : nullptr);
    }
    return stats_array(all, false);
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a, "px"_a, "py"_a, "pz"_a, "algorithm"_a, "shape"_a, "seed"_a,
        "flat_threshold"_a, "topology"_a, "nrhs"_a, "packed"_a, "dist"_a.none(), "row_order"_a.none(),
        "col_order"_a.none(),
        "Every rank's planned statistics of one solve, shape (ranks, 8, 8) (steps as SolveStep).");

  nb::class_<TriSolve>(m, "TriSolve", "Factors on a Px x Py x Pz grid and the distributed triangular solves.")
      .def("__init__", [](TriSolve* self, std::int64_t comm, const Topology& topo, int px, int py, int pz,
                          In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                          In<std::int32_t> forest, In<std::int32_t> row_order, In<std::int32_t> col_order,
                          const Distribution& dist, const SupernodalLU* lu, const std::string& algorithm,
                          const std::string& shape, std::uint64_t seed, int threshold, bool packed, int root) {
        TriSolveArgs a(comm, pz, sn_start, rows_ptr, rows, forest, row_order, col_order, algorithm, shape, seed,
                       threshold, packed);
        nb::gil_scoped_release nogil;
        new (self) TriSolve(a.comm, topo, ProcessGrid3D{px, py, pz}, std::move(a.sym), std::move(a.forests), a.row_order,
                            a.col_order, dist, lu, a.opts, root);
      }, "comm"_a, "topology"_a, "px"_a, "py"_a, "pz"_a, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a,
           "row_order"_a, "col_order"_a, "dist"_a, "lu"_a.none(), "algorithm"_a, "shape"_a, "seed"_a, "flat_threshold"_a,
           "packed"_a, "root"_a)
      .def("__init__", [](TriSolve* self, std::int64_t comm, const Topology& topo, int px, int py, int pz,
                          In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                          In<std::int32_t> forest, In<std::int32_t> row_order, In<std::int32_t> col_order,
                          const Distribution& dist, BlockStore& store, const std::string& algorithm,
                          const std::string& shape, std::uint64_t seed, int threshold, bool packed) {
        TriSolveArgs a(comm, pz, sn_start, rows_ptr, rows, forest, row_order, col_order, algorithm, shape, seed,
                       threshold, packed);
        nb::gil_scoped_release nogil;
        new (self) TriSolve(a.comm, topo, ProcessGrid3D{px, py, pz}, std::move(a.sym), std::move(a.forests), a.row_order,
                            a.col_order, dist, std::move(store), a.opts);
      }, "comm"_a, "topology"_a, "px"_a, "py"_a, "pz"_a, "sn_start"_a, "rows_ptr"_a, "rows"_a, "forest"_a,
           "row_order"_a, "col_order"_a, "dist"_a, "store"_a, "algorithm"_a, "shape"_a, "seed"_a, "flat_threshold"_a,
           "packed"_a, "Collective. Takes over this rank's store (from factor_3d; it is left empty).")
      .def("set_options", [](TriSolve& t, const std::string& algorithm, const std::string& shape, std::uint64_t seed,
                             int threshold, bool packed) {
        t.set_options(solve_options(algorithm, shape, seed, threshold, packed));
      }, "algorithm"_a, "shape"_a, "seed"_a, "flat_threshold"_a, "packed"_a)
      .def("solve", [](TriSolve& t, RowMajorIn b, RowMajor x) {
        if (static_cast<std::int64_t>(b.shape(0)) != t.local_rows() || b.shape(0) != x.shape(0) ||
            b.shape(1) != x.shape(1) || b.shape(1) < 1)
          throw nb::value_error(("b and x must both have shape (" + std::to_string(t.local_rows()) +
                                 ", nrhs) with nrhs >= 1").c_str());
        TriSolve::Times times;
        {
          nb::gil_scoped_release nogil;
          times = t.solve(b.data(), x.data(), static_cast<int>(b.shape(1)));
        }
        nb::dict d;
        d["redistribute_b"] = times.redistribute_b;
        d["l_solve"] = times.l_solve;
        d["z_comm"] = times.z_comm;
        d["u_solve"] = times.u_solve;
        d["redistribute_x"] = times.redistribute_x;
        d["total"] = times.total;
        return d;
      }, "b"_a, "x"_a.noconvert(),
           "Collective. b: this rank's rows (n_local, nrhs), C order; x receives the solution. Returns this rank's "
           "seconds per part.")
      .def("planned_stats_array", [](const TriSolve& t, int nrhs) { return stats_array(t.planned(nrhs)); }, "nrhs"_a)
      .def("recorded_stats_array", [](const TriSolve& t) { return stats_array(t.recorded()); })
      .def_prop_ro("local_entries", &TriSolve::local_entries)
      .def_prop_ro("local_rows", &TriSolve::local_rows);
}

}  // namespace commsolve::bindings
