// The numeric factorizations: serial supernodal LU, a rank's block store, and the 3D
// factorization on a SolveLayout (its entry move, its plan, its memory per rank).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "commsolve/bindings/common.hpp"
#include "commsolve/direct/block_layout.hpp"
#include "commsolve/direct/block_store.hpp"
#include "commsolve/direct/entry_move.hpp"
#include "commsolve/direct/factor3d.hpp"
#include "commsolve/direct/factor_grid.hpp"
#include "commsolve/direct/selected_inverse.hpp"
#include "commsolve/direct/supernodal_lu.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

using Orientation = nb::ndarray<double, nb::ndim<2>, nb::f_contig, nb::device::cpu>;

void bind_serial(nb::module_& m) {
  nb::class_<SupernodalLU>(m, "SupernodalLU", "Supernodal LU without pivoting (multifrontal, serial).")
      .def("__init__", [](SupernodalLU* self, const SupernodalStructure& sym, In<std::int32_t> indptr,
                          In<std::int32_t> indices, In<double> data, In<std::int32_t> t_indptr,
                          In<std::int32_t> t_indices, In<double> t_data, double zero_pivot, bool replace_tiny) {
        if (sym.n != static_cast<std::int64_t>(indptr.shape(0)) - 1)
          throw nb::value_error("supernodal LU: structure and matrix disagree");
        nb::gil_scoped_release nogil;
        new (self) SupernodalLU(sym,
                                LUEntries{indptr.data(), indices.data(), data.data(), t_indptr.data(),
                                          t_indices.data(), t_data.data()},
                                LUOptions{zero_pivot, replace_tiny});
      }, "structure"_a, "indptr"_a, "indices"_a, "data"_a, "t_indptr"_a, "t_indices"_a, "t_data"_a, "zero_pivot"_a,
           "replace_tiny"_a)
      .def("solve", [](const SupernodalLU& lu, Orientation b) {
        if (static_cast<std::int64_t>(b.shape(0)) != lu.structure().n) throw nb::value_error("b has the wrong length");
        nb::gil_scoped_release nogil;
        lu.solve(b.data(), static_cast<int>(b.shape(1)));
      }, "b"_a.noconvert())
      .def("selected_inverse", [](const SupernodalLU& lu, In<std::int64_t> row_of, In<std::int64_t> col_of,
                                  In<double> row_scale, In<double> col_scale) {
        const std::int64_t n = lu.structure().n;
        for (const auto* a : {&row_of, &col_of}) require_len(*a, n, "order");
        require_len(row_scale, n, "row_scale");
        require_len(col_scale, n, "col_scale");
        SelectedCsr c;
        {
          nb::gil_scoped_release nogil;
          c = selected_csr(n, selected_inverse(lu), row_of.data(), col_of.data(), row_scale.data(), col_scale.data());
        }
        return nb::make_tuple(to_numpy(std::move(c.indptr)), to_numpy(std::move(c.indices)), to_numpy(std::move(c.data)));
      }, "row_of"_a, "col_of"_a, "row_scale"_a, "col_scale"_a,
         "The entries of (L U)^-1 in the pattern of L + U, mapped to A^-1's (rows of Z: row_of, columns: col_of, "
         "scaled) -> CSR (indptr, indices, data).")
      .def("triangular_factor", [](const SupernodalLU& lu, bool upper) {
        // Every stored entry of L (with its unit diagonal) or U as triples, then CSR: the
        // factors as a general sparse solver (cuSPARSE, scipy) takes them.
        const SupernodalStructure& sym = lu.structure();
        std::vector<std::int32_t> row, col;
        std::vector<double> val;
        SelectedCsr c;
        {
          nb::gil_scoped_release nogil;
          auto put = [&](std::int64_t i, std::int64_t j, double v) {
            row.push_back(static_cast<std::int32_t>(i));
            col.push_back(static_cast<std::int32_t>(j));
            val.push_back(v);
          };
          for (std::size_t s = 0; s + 1 < sym.sn_start.size(); ++s) {
            const std::int64_t f = sym.sn_start[s], w = sym.sn_start[s + 1] - f;
            const std::int64_t r = sym.rows_ptr[s + 1] - sym.rows_ptr[s];
            const std::int32_t* below = sym.rows.data() + sym.rows_ptr[s];
            const double *d = lu.diag(s), *l = lu.l21(s), *u = lu.u12(s);
            for (std::int64_t j = 0; j < w; ++j) {
              for (std::int64_t i = 0; i < w; ++i)
                if (upper ? i <= j : i > j) put(f + i, f + j, d[j * w + i]);
              if (!upper) put(f + j, f + j, 1.0);
              for (std::int64_t a = 0; a < r; ++a)
                if (upper) put(f + j, below[a], u[a * w + j]);
                else put(below[a], f + j, l[j * r + a]);
            }
          }
          c = triples_csr(sym.n, row.data(), col.data(), val.data(), static_cast<std::int64_t>(val.size()));
        }
        return nb::make_tuple(to_numpy(std::move(c.indptr)), to_numpy(std::move(c.indices)),
                              to_numpy(std::move(c.data)));
      }, "upper"_a, "L (unit diagonal stored) or U of the permuted matrix as CSR (indptr, indices, data).")
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
      .def("pieces", [](const BlockStore& st, const SupernodalStructure& sym) {
        const SupernodeBlocks blocks = supernode_blocks(sym);
        const StoreIndex index(sym, blocks, st);
        std::vector<std::int64_t> k_of, part_of, off, len;
        for (std::int64_t k = 0; k < sym.nsuper(); ++k)
          for (FactorPart part : {part_diag, part_l, part_u})
            for_each_piece(sym, blocks, st, index, k, part, true, [&](std::int64_t o, std::int64_t n) {
              k_of.push_back(k), part_of.push_back(part), off.push_back(o), len.push_back(n);
            });
        return nb::make_tuple(to_numpy(std::move(k_of)), to_numpy(std::move(part_of)), to_numpy(std::move(off)),
                              to_numpy(std::move(len)));
      }, "structure"_a,
           "(supernode, part (0 diagonal, 1 L panel, 2 U block), offset, length) of every piece of the store.");
}

nb::dict factor_info(const Factor3DResult& r) {
  nb::dict out;
  out["ok"] = r.ok;
  out["error"] = r.error;
  out["recorded"] = stats_array(r.recorded);
  out["replaced"] = r.replaced;
  out["flops"] = r.flops;
  out["move_seconds"] = r.move_seconds;
  out["arrange_seconds"] = r.arrange_seconds;
  out["allocate_seconds"] = r.allocate_seconds;
  out["numeric_seconds"] = r.numeric_seconds;
  return out;
}

void bind_distributed(nb::module_& m) {
  m.def("factor_3d", [](std::int64_t comm, const Topology& topo, const SolveLayout& layout, In<std::int32_t> rows,
                        In<std::int32_t> cols, In<double> values, double anorm, double zero_pivot, bool replace_tiny,
                        const TreeShape& tree, std::int64_t send_window) {
    if (send_window < 0) throw nb::value_error("send_window must be at least 0");
    const std::size_t nnz = rows.shape(0);
    if (cols.shape(0) != nnz || values.shape(0) != nnz)
      throw nb::value_error("3D factorization: entry rows, columns and values differ in length");
    MPI_Comm c = comm_from_handle(comm);
    Factor3DResult r;
    {
      nb::gil_scoped_release nogil;
      r = factor_3d(c, topo, layout,
                    EntryTriples{static_cast<std::int64_t>(nnz), rows.data(), cols.data(), values.data()}, anorm,
                    LUOptions{zero_pivot, replace_tiny}, tree, send_window);
    }
    nb::dict info = factor_info(r);
    return nb::make_tuple(std::move(r.store), info);
  }, "comm"_a, "topology"_a, "layout"_a, "rows"_a, "cols"_a, "values"_a, "anorm"_a, "zero_pivot"_a,
        "replace_tiny"_a, "tree"_a, "send_window"_a = 0,
        "Collective: the 3D factorization (direct/factor3d.hpp) of this rank's entries (any of the permuted, scaled "
        "matrix: they are moved by a plan to the ranks that factor them first). Returns (store, info): this rank's "
        "BlockStore; info: ok, error, recorded stats (steps, 8), replaced, flops, and move, arrange, allocate and "
        "numeric seconds.");
  m.def("factor_3d_planned", [](const SolveLayout& layout, const Topology& topo, const TreeShape& tree) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = factor_3d_planned(layout, topo, tree);
    }
    return stats_array(all, false);
  }, "layout"_a, "topology"_a, "tree"_a,
        "Every rank's planned messages of the factorization, shape (ranks, 5, 8) (FactorStep; the entries' step, "
        "which depends on where A's rows are, is left empty).");
  m.def("factor_3d_planned_rank", [](const SolveLayout& layout, const Topology& topo, const TreeShape& tree, int rank) {
    CommStats st;
    {
      nb::gil_scoped_release nogil;
      st = factor_3d_planned_rank(layout, topo, tree, rank);
    }
    return stats_array(st);
  }, "layout"_a, "topology"_a, "tree"_a, "rank"_a,
        "One rank's row of factor_3d_planned, from its own schedules (its share of the structure is enough).");
  m.def("factor_entries_per_rank", [](const SolveLayout& layout) {
    return to_numpy(factor_entries_per_rank(layout));
  }, "layout"_a, "Every rank's factor entries (its block store's size).");
  m.def("permuted_entries", [](std::int64_t n, In<std::int64_t> indptr, In<std::int32_t> indices, In<double> data,
                               In<std::int64_t> row_of, In<std::int32_t> row_order, In<std::int32_t> col_order,
                               In<double> row_scale, In<double> col_scale) {
    if (indptr.shape(0) < 1) throw nb::value_error("permuted entries: indptr needs at least one entry");
    const std::size_t rows = indptr.shape(0) - 1;
    const std::int64_t* ip = indptr.data();
    bool ok = ip[0] == 0 && ip[rows] == static_cast<std::int64_t>(indices.shape(0));
    for (std::size_t i = 0; ok && i < rows; ++i) ok = ip[i] <= ip[i + 1];
    if (!ok) throw nb::value_error("permuted entries: indptr must rise from 0 to len(indices)");
    require_len(data, indices.shape(0), "data");
    require_len(row_of, rows, "row_of");
    for (const auto* a : {&row_order, &col_order}) require_len(*a, static_cast<std::size_t>(n), "an order");
    for (const auto* a : {&row_scale, &col_scale}) require_len(*a, static_cast<std::size_t>(n), "a scale");
    PermutedEntries e;
    {
      nb::gil_scoped_release nogil;
      e = permuted_entries(n, static_cast<std::int64_t>(rows), indptr.data(), indices.data(), data.data(),
                           row_of.data(), row_order.data(), col_order.data(), row_scale.data(), col_scale.data());
    }
    return nb::make_tuple(to_numpy(std::move(e.rows)), to_numpy(std::move(e.cols)), to_numpy(std::move(e.values)));
  }, "n"_a, "indptr"_a, "indices"_a, "data"_a, "row_of"_a, "row_order"_a, "col_order"_a, "row_scale"_a,
        "col_scale"_a,
        "Local: this rank's rows of A (CSR, global columns, global row row_of[i]) as entries (rows, cols, values) of "
        "the permuted, scaled matrix the factorization reads (direct/entry_move.hpp); stored zeros left out.");
  m.def("entry_destinations", [](const SolveLayout& layout, In<std::int32_t> rows, In<std::int32_t> cols) {
    require_len(cols, rows.shape(0), "cols");
    const std::vector<double> none(rows.shape(0), 0.0);
    return to_numpy(entry_destinations(
        layout, EntryTriples{static_cast<std::int64_t>(rows.shape(0)), rows.data(), cols.data(), none.data()}));
  }, "layout"_a, "rows"_a, "cols"_a, "The rank that factors each entry (rows[e], cols[e]) of the permuted matrix.");
}

}  // namespace

void bind_factor(nb::module_& m) {
  m.attr("entry_bytes") = entry_bytes;  // what one of A's entries weighs on its way to the grids
  bind_serial(m);
  bind_distributed(m);
}

}  // namespace commsolve::bindings
