// Restricted collectives, their trees and the message engine that runs them.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <optional>
#include <tuple>

#include "commsolve/bindings/common.hpp"
#include "commsolve/trees/engine.hpp"
#include "commsolve/trees/tree_plan.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

void bind_trees(nb::module_& m) {
  // ---- restricted collectives ------------------------------------------------------
  nb::class_<CollectiveSet>(m, "CollectiveSet", "Restricted collectives as arrays (see commsolve.trees).")
      .def("__init__", [](CollectiveSet* self, In<std::int64_t> id, In<std::int8_t> kind, In<std::int32_t> root,
                          In<std::int64_t> part_ptr, In<std::int32_t> part, In<std::int64_t> count) {
        auto vec = [](const auto& a) { return std::vector(a.data(), a.data() + a.shape(0)); };
        new (self) CollectiveSet{vec(id), vec(kind), std::vector<int>(root.data(), root.data() + root.shape(0)),
                                 vec(part_ptr), std::vector<int>(part.data(), part.data() + part.shape(0)), vec(count)};
      }, "id"_a, "kind"_a, "root"_a, "part_ptr"_a, "part"_a, "count"_a)
      .def_prop_ro("id", [](const CollectiveSet& c) { return copy_numpy(c.id); })
      .def_prop_ro("kind", [](const CollectiveSet& c) { return copy_numpy(c.kind); })
      .def_prop_ro("root", [](const CollectiveSet& c) { return copy_numpy(c.root); })
      .def_prop_ro("part_ptr", [](const CollectiveSet& c) { return copy_numpy(c.part_ptr); })
      .def_prop_ro("part", [](const CollectiveSet& c) { return copy_numpy(c.part); })
      .def_prop_ro("count", [](const CollectiveSet& c) { return copy_numpy(c.count); })
      .def("validate", &CollectiveSet::validate, "nranks"_a)
      .def("__len__", &CollectiveSet::size);
  m.def("tree_shape_names", &tree_shape_names);
  nb::class_<TreeShape>(m, "TreeShape",
                        "How restricted collectives become trees: a shape name (tree_shape_names), the seed of the "
                        "shifted trees, and the flat threshold of auto. Unset arguments take the C++ defaults.")
      .def("__init__", [](TreeShape* self, std::optional<std::string> name, std::optional<std::uint64_t> seed,
                          std::optional<int> flat_threshold) {
        TreeShape t;
        if (name) t.name = *name;
        if (seed) t.seed = *seed;
        if (flat_threshold) t.flat_threshold = *flat_threshold;
        check_tree_shape(t);
        new (self) TreeShape(std::move(t));
      }, "name"_a = nb::none(), "seed"_a = nb::none(), "flat_threshold"_a = nb::none())
      .def_ro("name", &TreeShape::name)
      .def_ro("seed", &TreeShape::seed)
      .def_ro("flat_threshold", &TreeShape::flat_threshold)
      .def("__eq__", [](const TreeShape& a, const TreeShape& b) {
        return a.name == b.name && a.seed == b.seed && a.flat_threshold == b.flat_threshold;
      })
      .def("__repr__", [](const TreeShape& t) {
        return "TreeShape('" + t.name + "', seed=" + std::to_string(t.seed) + ", flat_threshold=" +
               std::to_string(t.flat_threshold) + ")";
      })
      .def("__getstate__", [](const TreeShape& t) { return nb::make_tuple(t.name, t.seed, t.flat_threshold); })
      .def("__setstate__", [](TreeShape& t, const std::tuple<std::string, std::uint64_t, int>& state) {
        new (&t) TreeShape{std::get<0>(state), std::get<1>(state), std::get<2>(state)};
      });
  nb::class_<TreePlan>(m, "TreePlan", "One rank's parent and children in every collective it takes part in.")
      .def_ro("rank", &TreePlan::rank)
      .def_ro("nranks", &TreePlan::nranks)
      .def_prop_ro("index", [](const TreePlan& p) { return copy_numpy(p.index); })
      .def_prop_ro("parents", [](const TreePlan& p) {
        std::vector<int> v;
        for (const auto& l : p.links) v.push_back(l.parent);
        return to_numpy(std::move(v));
      })
      .def("children", [](const TreePlan& p, std::size_t i) { return p.links.at(i).children; }, "i"_a)
      .def("stats_array", [](const TreePlan& p, const CollectiveSet& s, const Topology& t) {
        return stats_array(tree_stats(p, s, t));
      }, "collectives"_a, "topology"_a, "Planned statistics, shape (2, 8): broadcasts, reductions.");
  m.def("build_tree_plans_virtual", [](const CollectiveSet& s, const TreeShape& shape, const Topology& t) {
    return build_tree_plans_virtual(s, shape, t);
  }, "collectives"_a, "shape"_a, "topology"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def("tree_stats_virtual", [](const CollectiveSet& s, const TreeShape& shape, const Topology& t) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = tree_stats_virtual(s, shape, t);
    }
    return stats_array(all, false);
  }, "collectives"_a, "shape"_a, "topology"_a,
        "Every rank's planned statistics, shape (ranks, 2, 8), without keeping plans.");
  m.def("build_tree_plan", [](const CollectiveSet& s, int rank, const TreeShape& shape, const Topology& t) {
    s.validate(t.size());
    return build_tree_plan(s, rank, shape, t);
  }, "collectives"_a, "rank"_a, "shape"_a, "topology"_a);
  m.def("run_collectives", [](const CollectiveSet& s, const TreePlan& plan, Out<double> flat, const Topology& t,
                              std::int64_t comm, int max_posted) {
    std::vector<std::vector<double>> data;
    std::int64_t off = 0;
    for (std::int64_t c : plan.index) {
      std::int64_t n = s.count[static_cast<std::size_t>(c)];
      if (off + n > static_cast<std::int64_t>(flat.shape(0))) throw nb::value_error("data array too short for the plan");
      data.emplace_back(flat.data() + off, flat.data() + off + n);
      off += n;
    }
    if (off != static_cast<std::int64_t>(flat.shape(0))) throw nb::value_error("data array longer than the plan needs");
    MPI_Comm c = comm_from_handle(comm);
    CommStats rec;
    {
      nb::gil_scoped_release nogil;
      rec = run_collectives(s, plan, data, t, c, max_posted);
    }
    off = 0;
    for (const auto& d : data) {
      std::copy(d.begin(), d.end(), flat.data() + off);
      off += static_cast<std::int64_t>(d.size());
    }
    return stats_array(rec);
  }, "collectives"_a, "plan"_a, "data"_a.noconvert(), "topology"_a, "comm"_a, "max_posted"_a = 64);
}

}  // namespace commsolve::bindings
