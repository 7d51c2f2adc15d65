// Halo patterns, communication plans and their statistics.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>

#include "commsolve/bindings/common.hpp"

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/halo_pattern.hpp"
#include "commsolve/comm/plan_builder.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

template <class Index>
std::vector<HaloPattern> virtual_patterns(const In<Index>& indptr, const In<Index>& indices,
                                          const Distribution& rows, const Distribution& cols,
                                          const std::function<void(int)>& progress) {
  auto A = rows_view(indptr, indices);
  std::vector<HaloPattern> patterns;
  patterns.reserve(rows.nranks());
  for (int r = 0; r < rows.nranks(); ++r) {
    patterns.push_back(halo_recv_side_of_global(r, A, rows, cols));
    if (progress) progress(r + 1);
  }
  complete_send_sides(patterns, cols);
  return patterns;
}


}  // namespace

void bind_comm(nb::module_& m) {
  // ---- patterns, plans, statistics ------------------------------------------------
  nb::class_<HaloPattern>(m, "HaloPattern", "What must move: one rank's halo and the entries it provides.")
      .def_ro("rank", &HaloPattern::rank)
      .def_ro("nranks", &HaloPattern::nranks)
      .def_ro("n_owned", &HaloPattern::n_owned)
      .def_prop_ro("n_halo", &HaloPattern::n_halo)
      .def_prop_ro("halo_globals", [](const HaloPattern& p) { return copy_numpy(p.halo_globals); })
      .def_prop_ro("recv_peers", [](const HaloPattern& p) { return copy_numpy(p.recv_peers); })
      .def_prop_ro("recv_ptr", [](const HaloPattern& p) { return copy_numpy(p.recv_ptr); })
      .def_prop_ro("send_peers", [](const HaloPattern& p) { return copy_numpy(p.send_peers); })
      .def_prop_ro("send_ptr", [](const HaloPattern& p) { return copy_numpy(p.send_ptr); })
      .def_prop_ro("send_idx", [](const HaloPattern& p) { return copy_numpy(p.send_idx); });

  nb::class_<PlanStep>(m, "PlanStep", "One step of a plan: packed sends, contiguous receives.")
      .def_prop_ro("send_peers", [](const PlanStep& s) { return copy_numpy(s.send_peers); })
      .def_prop_ro("send_ptr", [](const PlanStep& s) { return copy_numpy(s.send_ptr); })
      .def_prop_ro("send_idx", [](const PlanStep& s) { return copy_numpy(s.send_idx); })
      .def_prop_ro("recv_peers", [](const PlanStep& s) { return copy_numpy(s.recv_peers); })
      .def_prop_ro("recv_offset", [](const PlanStep& s) { return copy_numpy(s.recv_offset); })
      .def_prop_ro("recv_count", [](const PlanStep& s) { return copy_numpy(s.recv_count); });

  nb::class_<CommPlan>(m, "CommPlan", "How values move: a rank's steps over the space [owned | halo | work].")
      .def_ro("rank", &CommPlan::rank)
      .def_ro("nranks", &CommPlan::nranks)
      .def_ro("strategy", &CommPlan::strategy)
      .def_ro("n_owned", &CommPlan::n_owned)
      .def_ro("n_halo", &CommPlan::n_halo)
      .def_ro("n_work", &CommPlan::n_work)
      .def_ro("steps", &CommPlan::steps)
      .def_prop_ro("copy_src", [](const CommPlan& p) { return copy_numpy(p.copy_src); })
      .def_prop_ro("copy_dst", [](const CommPlan& p) { return copy_numpy(p.copy_dst); })
      .def("validate", &CommPlan::validate)
      .def("stats_array", [](const CommPlan& p, const Topology& t) { return stats_array(plan_stats(p, t)); },
           "topology"_a, "Planned statistics, shape (steps, 8).");

  m.def("strategy_names", &strategy_names);
  m.def("build_plans_virtual", &build_plans_virtual, "patterns"_a, "topology"_a, "col_dist"_a, "strategy"_a,
        nb::call_guard<nb::gil_scoped_release>(), "Every rank's plan of the named strategy (virtual world).");
  m.def("virtual_halo_patterns", &virtual_patterns<std::int32_t>, "indptr"_a, "indices"_a, "row_dist"_a,
        "col_dist"_a, "progress"_a.none() = nb::none());
  m.def("virtual_halo_patterns", &virtual_patterns<std::int64_t>, "indptr"_a, "indices"_a, "row_dist"_a,
        "col_dist"_a, "progress"_a.none() = nb::none());
}

}  // namespace commsolve::bindings
