// The row-distributed sparse matrix.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>

#include "bindings/common.hpp"

#include "dist/par_csr.hpp"
#include "sparse/distribution.hpp"
#include "topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

void bind_dist(nb::module_& m) {
  // ---- distributed matrix ---------------------------------------------------------
  nb::class_<ParCsr>(m, "ParCsr", "Row-distributed sparse matrix (collective construction).")
      .def("__init__", [](ParCsr* self, In<std::int64_t> indptr, In<std::int64_t> indices, In<double> values,
                          const Distribution& rows, const Distribution& cols, const Topology& topo,
                          std::int64_t comm, const std::string& strategy) {
        auto view = rows_view(indptr, indices);
        require_len(values, indices.shape(0), "values");
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) ParCsr(view, values.data(), rows, cols, topo, c, strategy);
      }, "indptr"_a, "indices"_a, "values"_a, "row_dist"_a, "col_dist"_a, "topology"_a, "comm"_a,
           "strategy"_a = "standard")
      .def("matvec", [](ParCsr& A, In<double> x, Out<double> y) {
        require_len(x, A.local_cols(), "x");
        require_len(y, A.local_rows(), "y");
        nb::gil_scoped_release nogil;
        A.matvec(x.data(), y.data());
      }, "x"_a, "y"_a.noconvert())
      .def("exchange", [](ParCsr& A, In<double> x, Out<double> halo) {
        require_len(x, A.local_cols(), "x");
        require_len(halo, static_cast<std::int64_t>(A.col_map().size()), "halo");
        nb::gil_scoped_release nogil;
        A.executor().begin(x.data());
        const double* h = A.executor().end();
        std::copy(h, h + A.col_map().size(), halo.data());
      }, "x"_a, "halo"_a.noconvert())
      .def("timed_exchanges", [](ParCsr& A, In<double> x, std::int64_t comm, int repeat) {
        require_len(x, A.local_cols(), "x");
        if (repeat < 1) throw nb::value_error("timed_exchanges: repeat must be at least 1");
        MPI_Comm c = comm_from_handle(comm);
        std::vector<double> t(static_cast<std::size_t>(repeat));
        {
          nb::gil_scoped_release nogil;
          for (double& v : t) {
            MPI_Barrier(c);
            const double t0 = MPI_Wtime();
            A.executor().begin(x.data());
            A.executor().end();
            v = MPI_Wtime() - t0;
          }
        }
        return to_numpy(std::move(t));
      }, "x"_a, "comm"_a, "repeat"_a,
         "Collective: `repeat` exchanges, each after a barrier, timed in C++ on this rank (seconds each).")
      .def("rmatvec", [](ParCsr& A, In<double> x, Out<double> y) {
        require_len(x, A.local_rows(), "x");
        require_len(y, A.local_cols(), "y");
        nb::gil_scoped_release nogil;
        A.rmatvec(x.data(), y.data());
      }, "x"_a, "y"_a.noconvert())
      .def_prop_ro("rank", &ParCsr::rank)
      .def_prop_ro("local_rows", &ParCsr::local_rows)
      .def_prop_ro("local_cols", &ParCsr::local_cols)
      .def_prop_ro("local_nnz", &ParCsr::local_nnz)
      .def_prop_ro("spmv_bytes", &ParCsr::spmv_bytes)
      .def_prop_ro("col_map", [](const ParCsr& A) { return copy_numpy(A.col_map()); })
      .def_prop_ro("pattern", &ParCsr::pattern)
      .def_prop_ro("plan", &ParCsr::plan)
      .def("block", [](const ParCsr& A, const std::string& which) {
        const LocalCsr& b = which == "diag" ? A.diag()
                            : which == "offd_on_node" ? A.offd_on_node()
                            : which == "offd_off_node" ? A.offd_off_node()
                            : throw nb::value_error("block is one of 'diag', 'offd_on_node', 'offd_off_node'");
        return nb::make_tuple(copy_numpy(b.indptr), copy_numpy(b.indices), copy_numpy(b.data), b.nrows, b.ncols);
      }, "which"_a)
      .def("recorded_stats_array", [](ParCsr& A, bool reverse) {
        return stats_array(reverse ? A.executor().recorded_reverse() : A.executor().recorded_forward());
      }, "reverse"_a = false)
      .def("planned_stats_array", [](const ParCsr& A) { return stats_array(plan_stats(A.plan(), A.topology())); })
      .def_prop_ro("forward_runs", [](ParCsr& A) { return A.executor().forward_runs(); })
      .def_prop_ro("reverse_runs", [](ParCsr& A) { return A.executor().reverse_runs(); })
      .def("reset_recorded", [](ParCsr& A) { A.executor().reset_recorded(); });
}

}  // namespace commsolve::bindings
