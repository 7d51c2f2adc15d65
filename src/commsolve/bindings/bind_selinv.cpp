// Parallel selected inversion (direct/selinv_plan.hpp, direct/selinv_executor.hpp): run on
// the factors a TriSolve holds, or counted for a layout at virtual scale.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "commsolve/bindings/common.hpp"
#include "commsolve/direct/selinv_executor.hpp"
#include "commsolve/direct/trisolve.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

ProcessGrid2D grid_2d(const SolveLayout& layout) {
  const ProcessGrid3D& g = layout.grid();
  if (g.pz != 1)
    throw nb::value_error(("selected inversion runs on a 2D grid (Pz = 1), got Pz = " + std::to_string(g.pz)).c_str());
  return ProcessGrid2D{g.px, g.py, 0};
}

nb::dict phase_dict(const SelinvPhase& ph) {
  nb::dict d;
  d["set"] = ph.set;
  d["sn"] = copy_numpy(ph.sn);
  d["role"] = copy_numpy(ph.role);
  d["gx"] = copy_numpy(ph.gx);
  d["gy"] = copy_numpy(ph.gy);
  return d;
}

}  // namespace

void bind_selinv(nb::module_& m) {
  m.def("selinv_role_names", &selinv_role_names, "The roles of selected inversion's collectives (its statistics steps).");
  m.def("selinv_plan", [](const SolveLayout& layout, bool symmetric) {
    SelinvPlan p = selinv_plan(layout.sym(), layout.blocks(), grid_2d(layout), symmetric);
    return nb::make_tuple(phase_dict(p.prepare), phase_dict(p.invert));
  }, "layout"_a, "symmetric"_a, "Selected inversion's collectives on the layout's 2D grid: (prepare, invert), each "
     "a dict of the CollectiveSet and per collective its supernode, role, process row and column.");
  m.def("selinv_stats_virtual", [](const SolveLayout& layout, const TreeShape& shape, const Topology& topo,
                                   bool symmetric) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = selinv_stats_virtual(selinv_plan(layout.sym(), layout.blocks(), grid_2d(layout), symmetric), shape, topo);
    }
    return stats_array(all, false);
  }, "layout"_a, "shape"_a, "topology"_a, "symmetric"_a,
     "Every rank's planned statistics of selected inversion on the layout's grid: (ranks, roles, 8).");

  m.def("triples_csr", [](std::int64_t n, In<std::int32_t> rows, In<std::int32_t> cols, In<double> values) {
    const std::int64_t nnz = static_cast<std::int64_t>(rows.shape(0));
    require_len(cols, nnz, "cols");
    require_len(values, nnz, "values");
    SelectedCsr c;
    {
      nb::gil_scoped_release nogil;
      c = triples_csr(n, rows.data(), cols.data(), values.data(), nnz);
    }
    return nb::make_tuple(to_numpy(std::move(c.indptr)), to_numpy(std::move(c.indices)), to_numpy(std::move(c.data)));
  }, "n"_a, "rows"_a, "cols"_a, "values"_a,
     "Distinct triples as CSR of n rows (columns ascending), by two counting sorts -> (indptr, indices, data).");

  nb::class_<SelectedInversion2D>(m, "SelectedInversion", "Parallel selected inversion on a TriSolve's factors.")
      .def("__init__", [](SelectedInversion2D* self, const TriSolve& t, const TreeShape& shape, bool symmetric) {
        grid_2d(t.layout());
        nb::gil_scoped_release nogil;
        new (self) SelectedInversion2D(t.comm(), t.topology(), t.layout_ptr(), t.store(), shape, symmetric);
      }, "trisolve"_a, "shape"_a, "symmetric"_a, nb::keep_alive<1, 2>(),
           "Collective. Reads the factors `trisolve` holds (kept alive).")
      .def("run", [](SelectedInversion2D& s) {
        SelectedInversion2D::Times t;
        {
          nb::gil_scoped_release nogil;
          t = s.run();
        }
        nb::dict d;
        d["prepare"] = t.prepare;
        d["invert"] = t.invert;
        d["total"] = t.total;
        return d;
      }, "Collective. Returns this rank's seconds (prepare, invert, total).")
      .def("entries", [](const SelectedInversion2D& s, In<std::int64_t> row_of, In<std::int64_t> col_of,
                         In<double> row_scale, In<double> col_scale) {
        const std::int64_t n = static_cast<std::int64_t>(row_of.shape(0));
        require_len(col_of, n, "col_of");
        require_len(row_scale, n, "row_scale");
        require_len(col_scale, n, "col_scale");
        SelectedEntries z;
        {
          nb::gil_scoped_release nogil;
          z = s.entries();
          map_entries(z, row_of.data(), col_of.data(), row_scale.data(), col_scale.data());
        }
        return nb::make_tuple(to_numpy(std::move(z.row)), to_numpy(std::move(z.col)), to_numpy(std::move(z.value)));
      }, "row_of"_a, "col_of"_a, "row_scale"_a, "col_scale"_a,
           "This rank's entries of Z mapped to A^-1's (as SparseLU.selected_inverse maps them) -> (rows, cols, "
           "values).")
      .def("planned_stats_array", [](const SelectedInversion2D& s) { return stats_array(s.planned()); })
      .def("recorded_stats_array", [](const SelectedInversion2D& s) { return stats_array(s.recorded()); })
      .def_prop_ro("flops", &SelectedInversion2D::flops)
      .def_prop_ro("split_supernodes", &SelectedInversion2D::split_supernodes,
                   "Supernodes whose products ran in several pieces on this rank (last run).");
}

}  // namespace commsolve::bindings
