// The 2.5D dense algorithms (dense/): their plans and statistics at any scale, and the MPI
// runs on each rank's block-cyclic blocks (flat column-major arrays).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>

#include "commsolve/bindings/common.hpp"
#include "commsolve/dense/dense_executor.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

using GridTuple = std::tuple<int, int, int>;

Grid25D grid_of(const GridTuple& t) {
  Grid25D g{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  g.validate();
  return g;
}

DensePlan plan_of(const std::string& kind, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t nb,
                  const Grid25D& g, std::int64_t panel, std::int64_t piece, int rank = -1, bool tournament = false) {
  if (rank >= g.size()) throw nb::value_error("dense plan: rank outside the grid");
  if (kind == "matmul") return matmul_plan(MatmulShape{m, n, k, nb, panel, piece}, g, rank);
  if (kind == "lu") {
    if (m != n) throw nb::value_error(("LU of a square matrix: got " + std::to_string(m) + " x " + std::to_string(n)).c_str());
    return lu_plan(n, nb, g, piece, rank, tournament);
  }
  throw nb::value_error(("dense plan kind must be 'matmul' or 'lu', got '" + kind + "'").c_str());
}

nb::dict times_dict(const DenseTimes& t) {
  nb::dict d;
  d["total"] = t.total;
  d["compute"] = t.compute;
  return d;
}

}  // namespace

void bind_dense(nb::module_& m) {
  m.def("dense_role_names", [](const std::string& kind) {
    return kind == "lu" ? lu_role_names() : kind == "matmul" ? matmul_role_names()
                                                              : throw nb::value_error("kind must be 'matmul' or 'lu'");
  }, "kind"_a, "The roles of a 2.5D algorithm's collectives (its statistics steps).");
  m.def("cyclic_indices", [](std::int64_t n, std::int64_t nb, int p, int proc) {
    if (n < 0 || nb < 1 || p < 1 || proc < 0 || proc >= p) throw nb::value_error("cyclic_indices: bad arguments");
    const Cyclic1D d{n, nb, p};
    std::vector<std::int64_t> idx;
    idx.reserve(static_cast<std::size_t>(d.local_size(proc)));
    for (std::int64_t b = proc; b < d.nblocks(); b += p)
      for (std::int64_t i = b * nb; i < b * nb + d.width(b); ++i) idx.push_back(i);
    return to_numpy(std::move(idx));
  }, "n"_a, "nb"_a, "p"_a, "proc"_a,
     "The global indices process `proc` of `p` holds, in local order, of n indices block-cyclic in blocks of nb.");
  m.def("dense_plan", [](const std::string& kind, std::int64_t m_, std::int64_t n, std::int64_t k, std::int64_t nb,
                         const GridTuple& grid, std::int64_t panel, std::int64_t piece, int rank, bool tournament) {
    DensePlan p = plan_of(kind, m_, n, k, nb, grid_of(grid), panel, piece, rank, tournament);
    nb::dict d;
    d["set"] = p.set;
    d["role"] = copy_numpy(p.role);
    d["step"] = copy_numpy(p.step);
    d["pos"] = copy_numpy(p.pos);
    d["piece"] = copy_numpy(p.piece);
    return d;
  }, "kind"_a, "m"_a, "n"_a, "k"_a, "nb"_a, "grid"_a, "panel"_a = 512, "piece"_a = 1 << 16, "rank"_a = -1,
     "tournament"_a = false,
     "The collectives (all, or only those rank takes part in, with the same ids) of the 2.5D multiply (A m x k times B k x n) or LU (n x n; m = k = n; tournament: with tournament pivoting) on grid (pr, pc, c).");
  m.def("dense_stats_virtual", [](const std::string& kind, std::int64_t m_, std::int64_t n, std::int64_t k,
                                  std::int64_t nb, const GridTuple& grid, const TreeShape& shape, const Topology& topo,
                                  std::int64_t panel, std::int64_t piece, bool tournament) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = dense_stats_virtual(plan_of(kind, m_, n, k, nb, grid_of(grid), panel, piece, -1, tournament), shape, topo);
    }
    return stats_array(all, false);
  }, "kind"_a, "m"_a, "n"_a, "k"_a, "nb"_a, "grid"_a, "shape"_a, "topology"_a, "panel"_a = 512, "piece"_a = 1 << 16,
     "tournament"_a = false,
     "Every rank's planned statistics of the 2.5D multiply or LU: (ranks, roles, 8).");

  nb::class_<Matmul25D>(m, "Matmul25D", "The 2.5D multiply C = A B on MPI.")
      .def("__init__", [](Matmul25D* self, std::int64_t comm, const Topology& topo, std::int64_t m_, std::int64_t n,
                          std::int64_t k, std::int64_t nb, const GridTuple& grid, const TreeShape& shape,
                          std::int64_t panel, std::int64_t piece) {
        const Grid25D g = grid_of(grid);
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) Matmul25D(c, topo, MatmulShape{m_, n, k, nb, panel, piece}, g, shape);
      }, "comm"_a, "topology"_a, "m"_a, "n"_a, "k"_a, "nb"_a, "grid"_a, "shape"_a, "panel"_a = 512,
           "piece"_a = 1 << 16,
           "Collective. panel: widest SUMMA panel (columns of A, whole blocks); piece: most values per message.")
      .def("run", [](Matmul25D& s, In<double> a, In<double> b, Out<double> c) {
        const MatmulLayout& L = s.layout();
        if (s.z() == 0) {
          require_len(a, L.a_rows.local_size(s.x()) * L.a_cols.local_size(s.y()), "a");
          require_len(b, L.b_rows.local_size(s.x()) * L.b_cols.local_size(s.y()), "b");
          require_len(c, L.a_rows.local_size(s.x()) * L.b_cols.local_size(s.y()), "c");
        }
        DenseTimes t;
        {
          nb::gil_scoped_release nogil;
          t = s.run(s.z() == 0 ? a.data() : nullptr, s.z() == 0 ? b.data() : nullptr, s.z() == 0 ? c.data() : nullptr);
        }
        return times_dict(t);
      }, "a"_a, "b"_a, "c"_a.noconvert(),
           "Collective. Layer 0: this rank's blocks of A and B (flat, column-major) in, of C out (c is written); "
           "other layers' arrays are not read. Returns this rank's seconds (total, compute).")
      .def("planned_stats_array", [](const Matmul25D& s) { return stats_array(s.planned()); })
      .def("recorded_stats_array", [](const Matmul25D& s) { return stats_array(s.recorded()); })
      .def_prop_ro("flops", &Matmul25D::flops)
      .def_prop_ro("position", [](const Matmul25D& s) { return std::make_tuple(s.x(), s.y(), s.z()); });

  nb::class_<LU25D>(m, "LU25D", "2.5D LU, without pivoting or with tournament pivoting, on MPI.")
      .def("__init__", [](LU25D* self, std::int64_t comm, const Topology& topo, std::int64_t n, std::int64_t nb,
                          const GridTuple& grid, const TreeShape& shape, std::int64_t piece, bool tournament) {
        const Grid25D g = grid_of(grid);
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) LU25D(c, topo, n, nb, g, shape, piece, tournament);
      }, "comm"_a, "topology"_a, "n"_a, "nb"_a, "grid"_a, "shape"_a, "piece"_a = 1 << 16, "tournament"_a = false,
           "Collective. piece: most values per message; tournament: tournament pivoting.")
      .def("run", [](LU25D& s, Out<double> a) {
        if (s.z() == 0) require_len(a, s.rows().local_size(s.x()) * s.cols().local_size(s.y()), "a");
        DenseTimes t;
        {
          nb::gil_scoped_release nogil;
          t = s.run(s.z() == 0 ? a.data() : nullptr);
        }
        return times_dict(t);
      }, "a"_a.noconvert(),
           "Collective. Layer 0: this rank's blocks of A (flat, column-major) in, of L and U out, in place; other "
           "layers' array is not read. Returns this rank's seconds (total, compute).")
      .def("planned_stats_array", [](const LU25D& s) { return stats_array(s.planned()); })
      .def("recorded_stats_array", [](const LU25D& s) { return stats_array(s.recorded()); })
      .def_prop_ro("ipiv", [](const LU25D& s) { return to_numpy(std::vector<std::int64_t>(s.ipiv())); },
                   "With tournament pivoting, after a run: row i was interchanged with row ipiv[i] (0-based, in order).")
      .def_prop_ro("flops", &LU25D::flops)
      .def_prop_ro("position", [](const LU25D& s) { return std::make_tuple(s.x(), s.y(), s.z()); });
}

}  // namespace commsolve::bindings
