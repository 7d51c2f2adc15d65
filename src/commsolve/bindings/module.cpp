// commsolve._core: the Python face of the C++ core. Arrays are validated here, at the
// boundary (dtype, contiguity, length), so the core can trust its inputs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>

#include <functional>
#include <string>

#include "comm/comm_plan.hpp"
#include "comm/comm_stats.hpp"
#include "comm/halo_pattern.hpp"
#include "comm/plan_builder.hpp"
#include "core/error.hpp"
#include "direct/separator_tree.hpp"
#include "direct/supernodal_lu.hpp"
#include "direct/symbolic.hpp"
#include "direct/trisolve_2d.hpp"
#include "dist/par_csr.hpp"
#include "sparse/distribution.hpp"
#include "sparse/kernels.hpp"
#include "sparse/matrix_market.hpp"
#include "sparse/partition.hpp"
#include "topology/topology.hpp"
#include "trees/engine.hpp"
#include "trees/tree_plan.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace commsolve;

namespace {

template <class T>
using In = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using NumpyArray = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

// Hands a vector to numpy without copying (the capsule owns it).
// Returned as a plain object so getters' reference_internal policy does not apply.
template <class T>
nb::object to_numpy(std::vector<T> v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(NumpyArray<T>(heap->data(), {heap->size()}, owner), nb::rv_policy::move);
}

template <class T>
nb::object copy_numpy(const std::vector<T>& v) { return to_numpy(std::vector<T>(v)); }

template <class A>
void require_len(const A& a, std::int64_t n, const char* name) {
  if (static_cast<std::int64_t>(a.shape(0)) != n)
    throw nb::value_error((std::string(name) + " has length " + std::to_string(a.shape(0)) +
                           ", expected " + std::to_string(n)).c_str());
}

MPI_Comm comm_from_handle(std::int64_t fortran_handle) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::runtime_error("MPI is not initialized (import mpi4py.MPI first)");
  return MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
}

// A supernodal structure from its arrays (n is the last column start), checked for shape.
SupernodalStructure structure_from(const In<std::int64_t>& sn_start, const In<std::int64_t>& rows_ptr,
                                   const In<std::int32_t>& rows) {
  SupernodalStructure sym;
  sym.sn_start.assign(sn_start.data(), sn_start.data() + sn_start.shape(0));
  sym.rows_ptr.assign(rows_ptr.data(), rows_ptr.data() + rows_ptr.shape(0));
  sym.rows.assign(rows.data(), rows.data() + rows.shape(0));
  if (sym.sn_start.size() < 2 || sym.sn_start.front() != 0 || sym.rows_ptr.size() != sym.sn_start.size() ||
      sym.rows_ptr.back() != static_cast<std::int64_t>(sym.rows.size()))
    throw nb::value_error("supernodal structure: sn_start, rows_ptr and rows disagree");
  sym.n = sym.sn_start.back();
  return sym;
}

// Per step: [msgs_sent, bytes_sent, msgs_recv, bytes_recv] x [intra, inter], flattened to 8.
void append_stats(std::vector<std::int64_t>& out, const CommStats& s) {
  for (const StepStats& st : s.steps)
    for (const auto* a : {&st.msgs_sent, &st.bytes_sent, &st.msgs_recv, &st.bytes_recv})
      out.insert(out.end(), a->begin(), a->end());
}

// Statistics of several ranks as one array of shape (ranks, steps, 8) (or (steps, 8)).
nb::object stats_array(const std::vector<CommStats>& all, bool squeeze) {
  auto* heap = new std::vector<std::int64_t>();
  for (const CommStats& s : all) append_stats(*heap, s);
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
  const std::size_t steps = all.empty() ? 0 : all.front().steps.size();
  if (squeeze)
    return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<2>>(heap->data(), {steps, 8}, owner),
                    nb::rv_policy::move);
  return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<3>>(heap->data(), {all.size(), steps, 8}, owner),
                  nb::rv_policy::move);
}

nb::object stats_array(const CommStats& s) { return stats_array(std::vector<CommStats>{s}, true); }

template <class Index>
GlobalRowsView<Index> rows_view(const In<Index>& indptr, const In<Index>& indices) {
  if (indptr.shape(0) < 1) throw nb::value_error("indptr must have at least one entry");
  std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
  std::int64_t nnz = static_cast<std::int64_t>(indptr.data()[n] - indptr.data()[0]);
  if (static_cast<std::int64_t>(indices.shape(0)) < nnz)
    throw nb::value_error("indices shorter than indptr says");
  return {n, indptr.data(), indices.data()};
}

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

NB_MODULE(_core, m) {
  m.doc() = "commsolve C++ core";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mpi_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  // ---- topology -------------------------------------------------------------------
  nb::class_<Topology>(m, "Topology", "Rank -> node map. Build with from_node_list, regular or from_comm.")
      .def_static("from_node_list", &Topology::from_node_list, "node_of_rank"_a)
      .def_static("regular", &Topology::regular, "nranks"_a, "ppn"_a, "layout"_a = "smp")
      .def_static("_from_comm", [](std::int64_t h) { return Topology::from_comm(comm_from_handle(h)); },
                  "fortran_handle"_a, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("size", &Topology::size)
      .def_prop_ro("num_nodes", &Topology::num_nodes)
      .def_prop_ro("max_ppn", &Topology::max_ppn)
      .def("node_of", &Topology::node_of, "rank"_a)
      .def("local_rank", &Topology::local_rank, "rank"_a)
      .def("same_node", &Topology::same_node, "a"_a, "b"_a)
      .def("ranks_on_node", &Topology::ranks_on_node, "node"_a)
      .def_prop_ro("node_of_rank", [](const Topology& t) { return copy_numpy(t.node_of_rank()); });

  // ---- distribution ---------------------------------------------------------------
  nb::class_<Distribution>(m, "Distribution", "Owner rank and local position of every global index.")
      .def_static("contiguous", &Distribution::contiguous, "n"_a, "nranks"_a)
      .def_static("from_offsets", [](In<std::int64_t> o) {
        return Distribution::from_offsets(std::vector<std::int64_t>(o.data(), o.data() + o.shape(0)));
      }, "offsets"_a)
      .def_static("from_owners", [](In<std::int32_t> o, int nranks) {
        return Distribution::from_owners(std::vector<std::int32_t>(o.data(), o.data() + o.shape(0)), nranks);
      }, "owners"_a, "nranks"_a)
      .def_prop_ro("global_size", &Distribution::global_size)
      .def_prop_ro("nranks", &Distribution::nranks)
      .def_prop_ro("is_contiguous", &Distribution::is_contiguous)
      .def("local_size", &Distribution::local_size, "rank"_a)
      .def("owned", [](const Distribution& d, int r) { return to_numpy(d.owned(r)); }, "rank"_a)
      .def("owners_of", [](const Distribution& d, In<std::int64_t> g) {
        std::vector<std::int32_t> out(g.shape(0));
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (g.data()[k] < 0 || g.data()[k] >= d.global_size()) throw nb::index_error("global index out of range");
          out[k] = d.owner(g.data()[k]);
        }
        return to_numpy(std::move(out));
      }, "globals"_a)
      .def_prop_ro("offsets", [](const Distribution& d) { return copy_numpy(d.offsets()); });

  // ---- local kernels --------------------------------------------------------------
  m.def("spmv", [](In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data, In<double> x,
                   Out<double> y) {
    std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(y, n, "y");
    require_len(data, indices.shape(0), "data");
    nb::gil_scoped_release nogil;
    spmv({n, indptr.data(), indices.data(), data.data()}, x.data(), y.data());
  }, "indptr"_a, "indices"_a, "data"_a, "x"_a, "y"_a.noconvert(),
        "y = A x for a CSR matrix with int32 indices (no checks on column range: trusted input).");
  m.def("stream_triad_bandwidth", &stream_triad_bandwidth, "n"_a, "reps"_a,
        nb::call_guard<nb::gil_scoped_release>(), "Triad bandwidth of every repetition, bytes/s.");
  m.def("stream_read_bandwidth", &stream_read_bandwidth, "n"_a, "reps"_a,
        nb::call_guard<nb::gil_scoped_release>(), "Read-only streaming bandwidth of every repetition, bytes/s.");

  // ---- Matrix Market --------------------------------------------------------------
  nb::class_<MMHeader>(m, "MMHeader")
      .def_ro("field", &MMHeader::field)
      .def_ro("symmetry", &MMHeader::symmetry)
      .def_ro("nrows", &MMHeader::nrows)
      .def_ro("ncols", &MMHeader::ncols)
      .def_ro("nnz", &MMHeader::nnz)
      .def_ro("data_offset", &MMHeader::data_offset)
      .def_ro("data_line", &MMHeader::data_line)
      .def_ro("file_size", &MMHeader::file_size);
  m.def("mm_read_header", &mm_read_header, "path"_a);
  m.def("mm_chunk", &mm_chunk, "header"_a, "path"_a, "part"_a, "nparts"_a);
  m.def("mm_parse_chunk", [](const std::string& path, const MMHeader& h, std::int64_t b, std::int64_t e) {
    MMChunk c;
    {
      nb::gil_scoped_release nogil;
      c = mm_parse_chunk(path, h, b, e);
    }
    return nb::make_tuple(to_numpy(std::move(c.rows)), to_numpy(std::move(c.cols)), to_numpy(std::move(c.vals)),
                          c.nlines, c.error_line, c.error);
  }, "path"_a, "header"_a, "begin"_a, "end"_a);
  m.def("mm_write", [](const std::string& path, std::int64_t nr, std::int64_t nc, In<std::int64_t> rows,
                       In<std::int64_t> cols, In<double> vals, const std::string& field,
                       const std::string& symmetry, const std::string& comment) {
    std::vector<std::int64_t> r(rows.data(), rows.data() + rows.shape(0)), c(cols.data(), cols.data() + cols.shape(0));
    std::vector<double> v(vals.data(), vals.data() + vals.shape(0));
    nb::gil_scoped_release nogil;
    mm_write(path, nr, nc, r, c, v, field, symmetry, comment);
  }, "path"_a, "nrows"_a, "ncols"_a, "rows"_a, "cols"_a, "vals"_a, "field"_a, "symmetry"_a, "comment"_a);

  // ---- partitioning ---------------------------------------------------------------
  m.def("metis_kway", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, int nparts, int seed) {
    std::int64_t n = static_cast<std::int64_t>(xadj.shape(0)) - 1;
    std::vector<std::int32_t> part;
    {
      nb::gil_scoped_release nogil;
      part = metis_kway(n, xadj.data(), adjncy.data(), nparts, seed);
    }
    return to_numpy(std::move(part));
  }, "xadj"_a, "adjncy"_a, "nparts"_a, "seed"_a = 0);

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
        new (self) SupernodalLU(sym, indptr.data(), indices.data(), data.data(), t_indptr.data(), t_indices.data(),
                                t_data.data(), LUOptions{zero_pivot, replace_tiny});
      }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "indptr"_a, "indices"_a, "data"_a, "t_indptr"_a, "t_indices"_a,
           "t_data"_a, "zero_pivot"_a, "replace_tiny"_a)
      .def("solve", [](const SupernodalLU& lu, nb::ndarray<double, nb::ndim<2>, nb::f_contig, nb::device::cpu> b) {
        if (static_cast<std::int64_t>(b.shape(0)) != lu.structure().n) throw nb::value_error("b has the wrong length");
        nb::gil_scoped_release nogil;
        lu.solve(b.data(), static_cast<int>(b.shape(1)));
      }, "b"_a.noconvert())
      .def_prop_ro("nnz_LU", &SupernodalLU::nnz_LU)
      .def_prop_ro("tiny_pivots_replaced", &SupernodalLU::tiny_pivots_replaced)
      .def_prop_ro("flops", &SupernodalLU::flops);

  nb::class_<TriSolve2D>(m, "TriSolve2D", "Factors on a Px x Py grid and the message-driven 2D triangular solves.")
      .def("__init__", [](TriSolve2D* self, std::int64_t comm, const Topology& topo, int px, int py,
                          In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                          const SupernodalLU* lu, const std::string& shape, std::uint64_t seed, int threshold) {
        SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
        MPI_Comm c = comm_from_handle(comm);
        nb::gil_scoped_release nogil;
        new (self) TriSolve2D(c, topo, ProcessGrid2D{px, py}, std::move(sym), lu, TreeShape{shape, seed, threshold});
      }, "comm"_a, "topology"_a, "px"_a, "py"_a, "sn_start"_a, "rows_ptr"_a, "rows"_a, "lu"_a.none(), "shape"_a,
           "seed"_a, "flat_threshold"_a)
      .def("set_tree", [](TriSolve2D& t, const std::string& shape, std::uint64_t seed, int threshold) {
        t.set_tree(TreeShape{shape, seed, threshold});
      }, "shape"_a, "seed"_a, "flat_threshold"_a)
      .def("solve", [](TriSolve2D& t, nb::ndarray<double, nb::ndim<2>, nb::f_contig, nb::device::cpu> b) {
        if (static_cast<std::int64_t>(b.shape(0)) != t.n()) throw nb::value_error("b has the wrong length");
        TriSolve2D::Times times;
        {
          nb::gil_scoped_release nogil;
          times = t.solve(b.data(), static_cast<int>(b.shape(1)));
        }
        return nb::make_tuple(times.lsolve, times.usolve, times.gather);
      }, "b"_a.noconvert(), "Collective; returns this rank's (L-solve, U-solve, gather) seconds.")
      .def("planned_stats_array", [](const TriSolve2D& t, int nrhs) { return stats_array(t.planned(nrhs)); },
           "nrhs"_a)
      .def("recorded_stats_array", [](const TriSolve2D& t) { return stats_array(t.recorded()); })
      .def_prop_ro("local_entries", &TriSolve2D::local_entries);
  m.def("triangular_solve_collectives", [](In<std::int64_t> sn_start, In<std::int64_t> rows_ptr,
                                           In<std::int32_t> rows, int px, int py, bool upper) {
    SupernodalStructure sym = structure_from(sn_start, rows_ptr, rows);
    return triangular_solve_collectives(sym, supernode_blocks(sym), ProcessGrid2D{px, py}, upper);
  }, "sn_start"_a, "rows_ptr"_a, "rows"_a, "px"_a, "py"_a, "upper"_a);

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
  m.def("build_tree_plans_virtual", [](const CollectiveSet& s, const std::string& shape, std::uint64_t seed,
                                       int threshold, const Topology& t) {
    return build_tree_plans_virtual(s, TreeShape{shape, seed, threshold}, t);
  }, "collectives"_a, "shape"_a, "seed"_a, "flat_threshold"_a, "topology"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def("tree_stats_virtual", [](const CollectiveSet& s, const std::string& shape, std::uint64_t seed, int threshold,
                                 const Topology& t) {
    std::vector<CommStats> all;
    {
      nb::gil_scoped_release nogil;
      all = tree_stats_virtual(s, TreeShape{shape, seed, threshold}, t);
    }
    return stats_array(all, false);
  }, "collectives"_a, "shape"_a, "seed"_a, "flat_threshold"_a, "topology"_a,
        "Every rank's planned statistics, shape (ranks, 2, 8), without keeping plans.");
  m.def("build_tree_plan", [](const CollectiveSet& s, int rank, const std::string& shape, std::uint64_t seed,
                              int threshold, const Topology& t) {
    const auto& names = tree_shape_names();
    if (std::find(names.begin(), names.end(), shape) == names.end())
      throw nb::value_error(("unknown tree shape '" + shape + "'").c_str());
    s.validate(t.size());
    return build_tree_plan(s, rank, TreeShape{shape, seed, threshold}, t);
  }, "collectives"_a, "rank"_a, "shape"_a, "seed"_a, "flat_threshold"_a, "topology"_a);
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
