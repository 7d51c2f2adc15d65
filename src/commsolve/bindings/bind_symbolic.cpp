// The symbolic side of the direct solvers: orderings, the supernodal structure as one bound
// value type (what every layout, plan and simulation of a factor reads), its options with
// their defaults, and the large-diagonal matching of static pivoting.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include "commsolve/bindings/common.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/direct/leaf_ordering.hpp"
#include "commsolve/direct/matching.hpp"
#include "commsolve/direct/parallel_ordering.hpp"
#include "commsolve/direct/parallel_symbolic.hpp"
#include "commsolve/direct/structure_share.hpp"
#include "commsolve/direct/symbolic.hpp"

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

void bind_separator_tree(nb::module_& m) {
  nb::class_<SeparatorTree>(m, "SeparatorTree",
                            "The nested-dissection tree an ordering kept, in postorder (root last): node k owns "
                            "permuted columns [col_start[k], col_end[k]) and supernodes [sn_first[k], sn_last[k]); "
                            "internal nodes separate their two children, leaves are subdomains.")
      .def_prop_ro("perm", [](const SeparatorTree& t) { return view(t.perm); },
                   "perm[new] = old, where the tree is an ordering (ptscotch_ordering); empty in a structure's tree.")
      .def_prop_ro("parent", [](const SeparatorTree& t) { return view(t.parent); })
      .def_prop_ro("left", [](const SeparatorTree& t) { return view(t.left); })
      .def_prop_ro("right", [](const SeparatorTree& t) { return view(t.right); })
      .def_prop_ro("level", [](const SeparatorTree& t) { return view(t.level); })
      .def_prop_ro("col_start", [](const SeparatorTree& t) { return view(t.col_start); })
      .def_prop_ro("col_end", [](const SeparatorTree& t) { return view(t.col_end); })
      .def_prop_ro("sn_first", [](const SeparatorTree& t) { return view(t.sn_first); })
      .def_prop_ro("sn_last", [](const SeparatorTree& t) { return view(t.sn_last); })
      .def_prop_ro("num_nodes", &SeparatorTree::num_nodes)
      .def_prop_ro("root", [](const SeparatorTree& t) { return t.num_nodes() - 1; })
      .def("subtree_columns", &SeparatorTree::subtree_columns, "k"_a,
           "[first, end) of the permuted columns of node k's whole subtree.");
}

// The arrays that make a structure, as numpy arrays (n, perm, parent, sn_start, rows_ptr,
// rows, post, and the tree's eight): what pickling carries (the structure is broadcast from
// the analysing rank, so this is on the path of every distributed factorization).
nb::tuple structure_state(const SupernodalStructure& s) {
  s.require_whole("pickling");
  const SeparatorTree& t = s.tree;
  return nb::make_tuple(s.n, copy_numpy(s.perm), copy_numpy(s.parent), copy_numpy(s.sn_start),
                        copy_numpy(s.rows_ptr), copy_numpy(s.rows), copy_numpy(s.post),
                        nb::make_tuple(copy_numpy(t.parent), copy_numpy(t.left), copy_numpy(t.right),
                                       copy_numpy(t.level), copy_numpy(t.col_start), copy_numpy(t.col_end),
                                       copy_numpy(t.sn_first), copy_numpy(t.sn_last)));
}

template <class T>
std::vector<T> array_of(nb::handle h) {
  return to_vector(nb::cast<In<T>>(h));
}

SupernodalStructure structure_from_state(const nb::tuple& st) {
  SupernodalStructure s;
  s.n = nb::cast<std::int64_t>(st[0]);
  s.perm = array_of<std::int32_t>(st[1]);
  s.parent = array_of<int>(st[2]);
  s.sn_start = array_of<std::int64_t>(st[3]);
  s.rows_ptr = array_of<std::int64_t>(st[4]);
  s.rows = array_of<std::int32_t>(st[5]);
  s.post = array_of<std::int32_t>(st[6]);
  const nb::tuple t = nb::cast<nb::tuple>(st[7]);
  SeparatorTree& tree = s.tree;
  tree.parent = array_of<int>(t[0]);
  tree.left = array_of<int>(t[1]);
  tree.right = array_of<int>(t[2]);
  tree.level = array_of<int>(t[3]);
  tree.col_start = array_of<std::int64_t>(t[4]);
  tree.col_end = array_of<std::int64_t>(t[5]);
  tree.sn_first = array_of<std::int64_t>(t[6]);
  tree.sn_last = array_of<std::int64_t>(t[7]);
  s.validate();
  return s;
}

void bind_structure(nb::module_& m) {
  nb::class_<SupernodalStructure>(
      m, "SupernodalStructure",
      "The supernodal structure of a factor (symbolic_analysis): the ordering perm (perm[k] is the original index "
      "of the k-th eliminated unknown), the elimination tree, supernode s's columns [sn_start[s], sn_start[s+1]) "
      "and the rows of L below its diagonal block rows[rows_ptr[s]:rows_ptr[s+1]], and the separator tree kept by "
      "ordering 'tree' (None otherwise). Read-only; its arrays are views.")
      .def("__init__", [](SupernodalStructure* self, In<std::int32_t> perm, In<std::int32_t> parent,
                          In<std::int64_t> sn_start, In<std::int64_t> rows_ptr, In<std::int32_t> rows,
                          std::optional<std::int64_t> nnz_L) {
        SupernodalStructure s;
        s.perm = to_vector(perm);
        s.parent.assign(parent.data(), parent.data() + parent.shape(0));
        s.sn_start = to_vector(sn_start);
        s.rows_ptr = to_vector(rows_ptr);
        s.rows = to_vector(rows);
        s.n = s.sn_start.empty() ? 0 : s.sn_start.back();
        s.post.resize(static_cast<std::size_t>(std::max<std::int64_t>(s.n, 0)));
        for (std::size_t k = 0; k < s.post.size(); ++k) s.post[k] = static_cast<std::int32_t>(k);
        s.validate();
        if (nnz_L && *nnz_L != s.nnz_L())
          throw nb::value_error(("supernodal structure: nnz_L " + std::to_string(*nnz_L) + " given, the arrays hold " +
                                 std::to_string(s.nnz_L()))
                                    .c_str());
        new (self) SupernodalStructure(std::move(s));
      }, "perm"_a, "parent"_a, "sn_start"_a, "rows_ptr"_a, "rows"_a, "nnz_L"_a = nb::none(),
           "A structure given by its arrays (checked to agree), e.g. one written by hand for a test.")
      .def_ro("n", &SupernodalStructure::n)
      .def_prop_ro("perm", [](const SupernodalStructure& s) { return view(s.perm); })
      .def_prop_ro("parent", [](const SupernodalStructure& s) { return view(s.parent); })
      .def_prop_ro("sn_start", [](const SupernodalStructure& s) { return view(s.sn_start); })
      .def_prop_ro("rows_ptr", [](const SupernodalStructure& s) { return view(s.rows_ptr); })
      .def_prop_ro("rows", [](const SupernodalStructure& s) { return view(s.rows); })
      .def_prop_ro("post", [](const SupernodalStructure& s) { return view(s.post); })
      .def_prop_ro("nnz_L", &SupernodalStructure::nnz_L, "Nonzeros of L, diagonal blocks as dense triangles.")
      .def_prop_ro("nsuper", &SupernodalStructure::nsuper)
      .def_prop_ro("tree", [](const SupernodalStructure& s) -> const SeparatorTree* {
        return s.tree.num_nodes() > 0 ? &s.tree : nullptr;
      }, nb::rv_policy::reference_internal)
      .def_prop_ro("sn_of", [](const SupernodalStructure& s) {
        std::vector<std::int64_t> out(static_cast<std::size_t>(s.n));
        for (std::int64_t k = 0; k < s.nsuper(); ++k)
          for (std::int64_t c = s.sn_start[k]; c < s.sn_start[k + 1]; ++c) out[c] = k;
        return to_numpy(std::move(out));
      }, "The supernode of every column (a new array).")
      .def("block_rows", [](const SupernodalStructure& s, std::int64_t k) {
        if (k < 0 || k >= s.nsuper()) throw nb::index_error("supernode out of range");
        std::vector<std::int64_t> sn, count;
        std::int64_t at = 0;  // rows are ascending, so each block's rows are consecutive
        for (std::int64_t p = s.rows_ptr[k]; p < s.rows_ptr[k + 1]; ++p) {
          const std::int32_t r = s.rows[p];
          while (s.sn_start[at + 1] <= r) ++at;
          if (sn.empty() || sn.back() != at) {
            sn.push_back(at);
            count.push_back(0);
          }
          ++count.back();
        }
        return nb::make_tuple(to_numpy(std::move(sn)), to_numpy(std::move(count)));
      }, "k"_a, "(supernodes I, rows in each) of the off-diagonal blocks L(I, k), ascending I.")
      .def_prop_ro("below", [](const SupernodalStructure& s) {
        std::vector<std::int64_t> out(static_cast<std::size_t>(s.nsuper()));
        for (std::int64_t k = 0; k < s.nsuper(); ++k) out[k] = s.rows_below(k);
        return to_numpy(std::move(out));
      }, "Per supernode, its rows below the diagonal block (of the whole structure, for a share too; a new array).")
      .def_prop_ro("share", [](const SupernodalStructure& s) -> nb::object {
        if (!s.share) return nb::none();
        const StructureShare& h = *s.share;
        nb::dict d;
        d["grid"] = nb::make_tuple(h.px, h.py);
        d["place"] = nb::make_tuple(h.x, h.y);
        d["rows_ptr"] = copy_numpy(h.rows_ptr);
        d["rows"] = copy_numpy(h.rows);
        d["cols_ptr"] = copy_numpy(h.cols_ptr);
        d["cols"] = copy_numpy(h.cols);
        return d;
      }, "None for a whole structure; for a share (structure_share) a dict: its grid (px, py), place (x, y), "
         "and per supernode K the process rows (rows[rows_ptr[K]:rows_ptr[K+1]]) and columns its blocks lie on "
         "(empty where the rank takes no part in K's broadcasts).")
      .def("__getstate__", &structure_state)
      .def("__setstate__", [](SupernodalStructure& s, const nb::tuple& state) {
        new (&s) SupernodalStructure(structure_from_state(state));
      });
  m.def("structure_share", &structure_share, "whole"_a, "px"_a, "py"_a, "x"_a, "y"_a,
        "Rank (x, y)'s share of the whole structure on a px x py layer: the rows of its blocks (I, K), "
        "I mod px = x or I mod py = y, what its part of the factorization reads (C++ direct/structure_share.hpp).");
  m.def("supernodal_etree", [](const SupernodalStructure& s) { return to_numpy(supernodal_etree(s)); },
        "structure"_a, "Supernode s's parent: the supernode of the first row below its diagonal block (-1: root).");
}

void bind_analysis(nb::module_& m) {
  nb::class_<SymbolicOptions>(m, "SymbolicOptions",
                              "How symbolic_analysis orders and groups; unset arguments take the C++ defaults, the "
                              "defaults of every entry point.")
      .def("__init__", [](SymbolicOptions* self, std::optional<int> max_supernode, std::optional<std::string> ordering,
                          std::optional<int> levels, std::optional<double> relax, std::optional<int> relax_subtree) {
        SymbolicOptions o;
        if (max_supernode) o.max_supernode = *max_supernode;
        if (ordering) o.ordering = *ordering;
        if (levels) o.levels = *levels;
        if (relax) o.relax = *relax;
        if (relax_subtree) o.relax_subtree = *relax_subtree;
        o.check();
        new (self) SymbolicOptions(std::move(o));
      }, "max_supernode"_a = nb::none(), "ordering"_a = nb::none(), "levels"_a = nb::none(), "relax"_a = nb::none(),
           "relax_subtree"_a = nb::none())
      .def_ro("max_supernode", &SymbolicOptions::max_supernode)
      .def_ro("ordering", &SymbolicOptions::ordering)
      .def_ro("levels", &SymbolicOptions::levels)
      .def_ro("relax", &SymbolicOptions::relax)
      .def_ro("relax_subtree", &SymbolicOptions::relax_subtree);
  m.def("ordering_names", &ordering_names);
  m.def("symbolic_analysis", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, const SymbolicOptions& opts,
                                 std::optional<nb::dict> times) {
    const auto g = rows_view(xadj, adjncy);
    SupernodalStructure s;
    SymbolicTimes t;
    {
      nb::gil_scoped_release nogil;
      s = symbolic_analysis(g.nrows, g.indptr, g.indices, opts, &t);
    }
    if (times) {
      (*times)["nested_dissection"] = t.ordering;
      (*times)["permute"] = t.permute;
      (*times)["symbolic"] = t.structure;
    }
    return s;
  }, "xadj"_a, "adjncy"_a, "options"_a, "times"_a = nb::none(),
        "The supernodal structure of the matrix whose symmetric pattern (no diagonal) is the graph xadj/adjncy; "
        "`times` (a dict), if given, receives the seconds of its parts (nested_dissection, permute, symbolic).");
  m.def("symbolic_for_ordering", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, const SeparatorTree& ordering,
                                     const SymbolicOptions& opts, std::optional<nb::dict> times) {
    const auto g = rows_view(xadj, adjncy);
    SupernodalStructure s;
    SymbolicTimes t;
    {
      nb::gil_scoped_release nogil;
      s = symbolic_for_ordering(g.nrows, g.indptr, g.indices, ordering, opts, &t);
    }
    if (times) {
      (*times)["permute"] = t.permute;
      (*times)["symbolic"] = t.structure;
    }
    return s;
  }, "xadj"_a, "adjncy"_a, "ordering"_a, "options"_a, "times"_a = nb::none(),
        "symbolic_analysis for an ordering computed elsewhere (a SeparatorTree with perm, e.g. ptscotch_ordering's); "
        "`times` receives permute and symbolic.");
  m.def("ptscotch_ordering", [](std::int64_t comm, std::int64_t n, std::int64_t first_row, In<std::int64_t> indptr,
                                 In<std::int32_t> indices, std::optional<In<double>> values,
                                 std::optional<In<std::int64_t>> new_row, const std::string& leaves, int max_ranks,
                                 std::optional<nb::dict> times) {
    const std::int64_t rows = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    if (rows < 0 || indptr.data()[rows] != static_cast<std::int64_t>(indices.shape(0)) || indptr.data()[0] != 0)
      throw nb::value_error("parallel ordering: indptr and indices disagree");
    if (values) require_len(*values, indices.shape(0), "values");
    if (new_row) require_len(*new_row, static_cast<std::size_t>(rows), "new_row");
    LeafOrdering how = LeafOrdering::by_dimension;
    if (leaves == "scotch") how = LeafOrdering::scotch;
    else if (leaves == "metis") how = LeafOrdering::metis;
    else if (leaves != "auto")
      throw nb::value_error(("parallel ordering: leaves must be scotch, metis or auto, got '" + leaves + "'").c_str());
    MPI_Comm c = comm_from_handle(comm);
    SeparatorTree tree;
    ParallelOrderingTimes t;
    {
      nb::gil_scoped_release nogil;
      tree = ptscotch_nested_dissection(c, n, first_row, rows, indptr.data(), indices.data(),
                                        values ? values->data() : nullptr, new_row ? new_row->data() : nullptr, how,
                                        max_ranks, &t);
    }
    if (times) {
      (*times)["ordering_graph"] = t.graph;
      if (how != LeafOrdering::metis) (*times)["ordering_dimension"] = t.dimension;
      (*times)["nested_dissection"] = t.nested_dissection;
      (*times)["ordering_gather"] = t.gather;
      (*times)["leaf_ordering"] = t.leaves;
    }
    return nb::make_tuple(std::move(tree), t.metis_leaves ? "metis" : "scotch");
  }, "comm"_a, "n"_a, "first_row"_a, "indptr"_a, "indices"_a, "values"_a = nb::none(), "new_row"_a = nb::none(),
        "leaves"_a = "scotch", "max_ranks"_a = 0, "times"_a = nb::none(),
        "Collective on comm (a Fortran handle). Nested dissection of the pattern of B + B^T: PT-Scotch's separators on "
        "the largest power of two of ranks, each leaf then ordered on a rank of its own (direct/parallel_ordering.hpp). "
        "This rank holds rows [first_row, first_row + rows) of A (CSR, global columns; a zero value is not an entry), "
        "new_row their rows in B (default: the same). Returns (the SeparatorTree with perm, the same on every rank; "
        "the leaves' ordering, 'scotch' or 'metis'). leaves: 'scotch' (Scotch's), 'metis' (METIS's) or 'auto' "
        "(METIS's on a 3D mesh, mesh_dimension).");
  m.def("parallel_symbolic", [](std::int64_t comm, std::int64_t n, In<std::int64_t> indptr, In<std::int32_t> indices,
                                 std::optional<In<double>> values, In<std::int64_t> row_index,
                                 const SeparatorTree& ordering, const SymbolicOptions& opts, int root,
                                 std::optional<nb::dict> times, std::optional<std::pair<int, int>> share) {
    const std::int64_t rows = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    if (rows < 0 || indptr.data()[rows] != static_cast<std::int64_t>(indices.shape(0)) || indptr.data()[0] != 0)
      throw nb::value_error("parallel symbolic: indptr and indices disagree");
    if (values) require_len(*values, indices.shape(0), "values");
    require_len(row_index, static_cast<std::size_t>(rows), "row_index");
    MPI_Comm c = comm_from_handle(comm);
    SupernodalStructure s;
    ParallelSymbolicTimes t;
    {
      nb::gil_scoped_release nogil;
      s = parallel_symbolic(c, n, rows, indptr.data(), indices.data(), values ? values->data() : nullptr,
                            row_index.data(), ordering, opts, root, &t,
                            share ? ShareGrid{share->first, share->second} : ShareGrid{});
    }
    if (times) {
      (*times)["symbolic_exchange"] = t.exchange;
      (*times)["symbolic_leaves"] = t.leaves;
      (*times)["symbolic_separators"] = t.separators;
      (*times)["symbolic_assemble"] = t.assemble;
    }
    return s;
  }, "comm"_a, "n"_a, "indptr"_a, "indices"_a, "values"_a, "row_index"_a, "ordering"_a, "options"_a, "root"_a = 0,
        "times"_a = nb::none(), "share"_a = nb::none(),
        "Collective on comm (a Fortran handle). The supernodal structure of B + B^T for the separator-tree ordering "
        "`ordering` (with perm), computed without gathering B (direct/parallel_symbolic.hpp): this rank holds rows "
        "row_index of B (CSR, global columns; a zero value is not an entry). Equals symbolic_for_ordering's; the same "
        "on every rank. With share=(px, py): each rank's share of it on layers of px x py ranks (structure_share), "
        "no rank holding the whole.");
  m.def("separator_tree", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, int levels, bool order_leaves) {
    const auto g = rows_view(xadj, adjncy);
    nb::gil_scoped_release nogil;
    return separator_tree(g.nrows, g.indptr, g.indices, levels, 8, order_leaves);
  }, "xadj"_a, "adjncy"_a, "levels"_a, "order_leaves"_a = true,
        "The ordering \"tree\" computes on one process (METIS separators, `levels` levels kept, METIS nested "
        "dissection in the leaves): a SeparatorTree with perm, for symbolic_for_ordering or parallel_symbolic. "
        "order_leaves=False: the leaves' vertices left in ascending order, for order_leaves_on_ranks.");
  m.def("order_leaves_on_ranks", [](std::int64_t comm, int root, std::optional<In<std::int32_t>> xadj,
                                     std::optional<In<std::int32_t>> adjncy, std::optional<SeparatorTree> tree) {
    MPI_Comm c = comm_from_handle(comm);
    int rank = 0;
    check_mpi(MPI_Comm_rank(c, &rank), "MPI_Comm_rank");
    SeparatorTree t;
    const std::int32_t *x = nullptr, *a = nullptr;
    std::string refusal;  // said on every rank by the collective, not here: the others are in it
    if (rank == root && (!xadj || !adjncy || !tree)) {
      refusal = "the root needs the graph and tree";
    } else if (rank == root) {
      try {
        const auto g = rows_view(*xadj, *adjncy);
        if (g.nrows != static_cast<std::int64_t>(tree->perm.size()))
          refusal = "the tree orders " + std::to_string(tree->perm.size()) + " vertices, the graph has " +
                    std::to_string(g.nrows);
        x = g.indptr;
        a = g.indices;
      } catch (const nb::builtin_exception& e) {
        refusal = e.what();
      }
      t = std::move(*tree);
    }
    double seconds = 0;
    {
      nb::gil_scoped_release nogil;
      seconds = order_leaves_on_ranks(c, root, x, a, t, refusal);
    }
    return std::make_pair(rank == root ? std::optional<SeparatorTree>(std::move(t)) : std::nullopt, seconds);
  }, "comm"_a, "root"_a, "xadj"_a = nb::none(), "adjncy"_a = nb::none(), "tree"_a = nb::none(),
        "Collective on comm (a Fortran handle; direct/leaf_ordering.hpp). On root, `tree` (separator_tree with "
        "order_leaves=False of the graph xadj/adjncy) gets each leaf ordered by METIS_NodeND, leaf i on rank "
        "(root + i) mod P. Returns (the tree on root, None elsewhere; this rank's seconds inside METIS).");
  m.def("ordering_from_perm", [](In<std::int32_t> perm) {
    SeparatorTree t;
    t.perm = to_vector(perm);
    return t;
  }, "perm"_a, "An ordering given as a permutation (perm[new] = old), without separator-tree nodes, for "
              "symbolic_for_ordering (checked there).");
  m.def("ordering_ranks", &ordering_ranks, "ranks"_a, "n"_a, "max_ranks"_a = 0,
        "The ranks ptscotch_ordering orders with: the largest power of two <= ranks, max_ranks (if > 0) and n / 2.");
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
}

}  // namespace

void bind_symbolic(nb::module_& m) {
  bind_separator_tree(m);
  bind_structure(m);
  bind_analysis(m);
}

}  // namespace commsolve::bindings
