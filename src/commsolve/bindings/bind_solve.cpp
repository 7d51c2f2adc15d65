// The distributed triangular solves on MPI (direct/trisolve.hpp): a TriSolve is built from a
// SolveLayout, an RhsMap, the factors (a rank's BlockStore, or the serial factors on one
// rank) and SolveOptions.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <memory>

#include "commsolve/bindings/common.hpp"
#include "commsolve/direct/trisolve.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

using RowMajor = nb::ndarray<double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using RowMajorIn = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

nb::dict times_dict(const TriSolve::Times& times) {
  nb::dict d;
  d["redistribute_b"] = times.redistribute_b;
  d["l_solve"] = times.l_solve;
  d["z_comm"] = times.z_comm;
  d["u_solve"] = times.u_solve;
  d["redistribute_x"] = times.redistribute_x;
  d["total"] = times.total;
  d["device_copy"] = times.device_copy;
  return d;
}

}  // namespace

void bind_solve(nb::module_& m) {
  m.def("device_available", &device_available, "device"_a,
        "Whether this build has the device's backend ('cuda') and a device to run it on.");
  m.def("check_solve_threads", &check_solve_threads, "threads"_a, "The threads rule: ValueError unless threads >= 1.");
  nb::class_<TriSolve>(m, "TriSolve", "Factors on a Px x Py x Pz grid and the distributed triangular solves.")
      .def("__init__", [](TriSolve* self, std::int64_t comm, const Topology& topo,
                          std::shared_ptr<SolveLayout> layout, const RhsMap& rhs, const SupernodalLU* lu,
                          const SolveOptions& opts, int root) {
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) TriSolve(c, topo, std::move(layout), rhs, lu, opts, root);
      }, "comm"_a, "topology"_a, "layout"_a, "rhs"_a, "lu"_a.none(), "options"_a, "root"_a,
           "Collective. The serial factors `lu` are given on rank `root` only; every rank receives its blocks.")
      .def("__init__", [](TriSolve* self, std::int64_t comm, const Topology& topo,
                          std::shared_ptr<SolveLayout> layout, const RhsMap& rhs, BlockStore& store,
                          const SolveOptions& opts) {
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) TriSolve(c, topo, std::move(layout), rhs, std::move(store), opts);
      }, "comm"_a, "topology"_a, "layout"_a, "rhs"_a, "store"_a, "options"_a,
           "Collective. Takes over this rank's store (from factor_3d; it is left empty).")
      .def("set_options", &TriSolve::set_options, "options"_a,
           "Local: another algorithm, tree or inter-grid packing for the next solves (every rank the same).")
      .def_prop_ro("options", &TriSolve::options)
      .def("set_threads", [](TriSolve& t, int threads, std::uint64_t chaos_seed, int chaos_sleep_us) {
        t.set_threads(threads, ScheduleChaos{chaos_seed, chaos_sleep_us});
      }, "threads"_a, "chaos_seed"_a = 0, "chaos_sleep_us"_a = 50,
           "Threads per rank for the next solves (every rank the same; > 1 on a grid with several ranks per layer: "
           "collective the first time). chaos_seed != 0 perturbs the sync-free threads' schedule (tests).")
      .def_prop_ro("threads", &TriSolve::threads)
      .def("to_device", [](TriSolve& t, const std::string& device) {
        nb::gil_scoped_release nogil;
        t.to_device(device);
      }, "device"_a, "Local: the next solves' phases on `device` ('cuda', or 'cpu' to come back); 1 x 1 x Pz grids.")
      .def_prop_ro("device", &TriSolve::device)
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
        return times_dict(times);
      }, "b"_a, "x"_a.noconvert(),
           "Collective. b: this rank's rows (n_local, nrhs), C order; x receives the solution. Returns this rank's "
           "seconds per part.")
      .def("planned_stats_array", [](const TriSolve& t, int nrhs) { return stats_array(t.planned(nrhs)); }, "nrhs"_a)
      .def("recorded_stats_array", [](const TriSolve& t) { return stats_array(t.recorded()); })
      .def_prop_ro("local_entries", &TriSolve::local_entries)
      .def_prop_ro("local_rows", &TriSolve::local_rows);
}

}  // namespace commsolve::bindings
