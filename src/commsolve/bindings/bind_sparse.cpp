// Topology, distributions, local kernels, Matrix Market files and graph partitioning.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/function.h>

#include "commsolve/bindings/common.hpp"

#include "commsolve/core/error.hpp"
#include "commsolve/sparse/distribution.hpp"
#include "commsolve/sparse/kernels.hpp"
#include "commsolve/sparse/dia.hpp"
#include "commsolve/sparse/sell.hpp"
#include "commsolve/sparse/matrix_market.hpp"
#include "commsolve/sparse/partition.hpp"
#include "commsolve/topology/topology.hpp"

extern "C" char* openblas_get_corename(void);

namespace commsolve::bindings {

using namespace nb::literals;

namespace {

void bind_layouts(nb::module_& m) {  // ranks to nodes, indices to ranks
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
      .def_prop_ro("node_of_rank", [](const Topology& t) { return copy_numpy(t.node_of_rank()); })
      .def_static("torus", &Topology::torus, "dims"_a, "ppn"_a = 1,
                  "Nodes on a torus of extents `dims` (node id: coordinates, dimension 0 fastest), ppn ranks each.")
      .def_static("torus_placed", &Topology::torus_placed, "dims"_a, "node_of_rank"_a,
                  "A torus of extents `dims` with each rank's node given (node ids: torus positions).")
      .def_prop_ro("torus_dims", &Topology::torus_dims, "The node torus's extents (empty: none).")
      .def("hops", &Topology::hops, "a"_a, "b"_a, "Torus links between nodes a and b (dimension-ordered route).")
      .def("route", [](const Topology& t, int a, int b) {
        std::vector<std::int64_t> l;
        t.route(a, b, l);
        return to_numpy(std::move(l));
      }, "a"_a, "b"_a, "Link ids from node a to node b: (node * ndims + dim) * 2 + (0 +, 1 -).");

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
      .def("same_share", &Distribution::same_share, "other"_a, "rank"_a,
           "Whether `other` gives `rank` the same global indices in the same order (same size and rank count).")
      .def("owners_of", [](const Distribution& d, In<std::int64_t> g) {
        std::vector<std::int32_t> out(g.shape(0));
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (g.data()[k] < 0 || g.data()[k] >= d.global_size()) throw nb::index_error("global index out of range");
          out[k] = d.owner(g.data()[k]);
        }
        return to_numpy(std::move(out));
      }, "globals"_a)
      .def_prop_ro("offsets", [](const Distribution& d) { return copy_numpy(d.offsets()); });

}

namespace {

// Borrowed CSR arrays (int32 indices) checked to describe their entries, for a storage's constructor.
CsrView csr_arrays(const In<std::int32_t>& indptr, const In<std::int32_t>& indices, const In<double>& data,
                   const char* what) {
  const std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
  if (n < 0 || indptr.data()[0] != 0 || indptr.data()[n] != static_cast<std::int64_t>(indices.shape(0)))
    throw nb::value_error((std::string(what) + ": indptr does not describe the entries").c_str());
  require_len(data, indices.shape(0), "data");
  return {n, indptr.data(), indices.data(), data.data()};
}

}  // namespace

void bind_kernels(nb::module_& m) {
  m.def("spmv", [](In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data, In<double> x,
                   Out<double> y) {
    std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(y, n, "y");
    require_len(data, indices.shape(0), "data");
    nb::gil_scoped_release nogil;
    spmv({n, indptr.data(), indices.data(), data.data()}, x.data(), y.data());
  }, "indptr"_a, "indices"_a, "data"_a, "x"_a, "y"_a.noconvert(),
        "y = A x for a CSR matrix with int32 indices (no checks on column range: trusted input).");
  m.def("ilu0_factor", [](In<std::int32_t> indptr, In<std::int32_t> indices, Out<double> lu) {
    std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(lu, indices.shape(0), "lu");
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int32_t p = indptr.data()[i]; p < indptr.data()[i + 1]; ++p)
        if (indices.data()[p] < 0 || indices.data()[p] >= n || (p > indptr.data()[i] && indices.data()[p] <= indices.data()[p - 1]))
          throw nb::value_error("ilu0_factor needs a square matrix with sorted, distinct column indices");
    nb::gil_scoped_release nogil;
    return ilu0_factor(n, indptr.data(), indices.data(), lu.data());
  }, "indptr"_a, "indices"_a, "lu"_a.noconvert(),
        "ILU(0) in place on lu (A's values; sorted square CSR): returns -1, or the first row with a zero pivot.");
  m.def("ilu0_solve", [](In<std::int32_t> indptr, In<std::int32_t> indices, In<double> lu, In<double> b,
                         Out<double> x) {
    std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(lu, indices.shape(0), "lu");
    require_len(b, n, "b");
    require_len(x, n, "x");
    nb::gil_scoped_release nogil;
    ilu0_solve({n, indptr.data(), indices.data(), lu.data()}, b.data(), x.data());
  }, "indptr"_a, "indices"_a, "lu"_a, "b"_a, "x"_a.noconvert(), "x = (L U)^-1 b with ilu0_factor's factor.");
  m.def("truncate_rows", [](Out<std::int64_t> indptr, Out<std::int64_t> indices, Out<double> data, double factor,
                            int max_elements) {
    const std::int64_t n = static_cast<std::int64_t>(indptr.shape(0)) - 1;
    require_len(data, indices.shape(0), "data");
    if (n < 0 || indptr.data()[0] != 0 || indptr.data()[n] != static_cast<std::int64_t>(indices.shape(0)))
      throw nb::value_error("indptr does not describe the entries");
    nb::gil_scoped_release nogil;
    return truncate_rows(n, indptr.data(), indices.data(), data.data(), factor, max_elements);
  }, "indptr"_a.noconvert(), "indices"_a.noconvert(), "data"_a.noconvert(), "factor"_a, "max_elements"_a,
        "Truncates a CSR's rows in place (hypre's trunc_factor, P_max_elmts); returns the entries kept.");
  nb::class_<LocalSell>(m, "SellMatrix",
                        "A local matrix in SELL-C-sigma storage (sparse/sell.hpp): ELL is C = nrows, sigma = 1; "
                        "sliced ELL is sigma = 1.")
      .def("__init__", [](LocalSell* self, In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data,
                          std::int64_t ncols, int C, std::int64_t sigma) {
        const CsrView A = csr_arrays(indptr, indices, data, "SellMatrix");
        nb::gil_scoped_release nogil;
        new (self) LocalSell(sell_from_csr(A, ncols, C, sigma));
      }, "indptr"_a, "indices"_a, "data"_a, "ncols"_a, "C"_a, "sigma"_a,
           "From CSR arrays (int32 indices; columns checked against ncols).")
      .def("spmv", [](const LocalSell& s, In<double> x, Out<double> y) {
        require_len(x, s.ncols, "x");
        require_len(y, s.nrows, "y");
        nb::gil_scoped_release nogil;
        spmv(s, x.data(), y.data());
      }, "x"_a, "y"_a.noconvert(), "y = A x.")
      .def_ro("nrows", &LocalSell::nrows)
      .def_ro("ncols", &LocalSell::ncols)
      .def_ro("nnz", &LocalSell::nnz)
      .def_ro("C", &LocalSell::C)
      .def_ro("sigma", &LocalSell::sigma)
      .def_prop_ro("stored", &LocalSell::stored, "Entries stored, padding included.")
      .def_prop_ro("spmv_bytes", &LocalSell::spmv_bytes, "Bytes one SpMV reads and writes.");
  nb::class_<LocalDia>(m, "DiaMatrix", "A local matrix in DIA storage (sparse/dia.hpp): banded and stencil matrices.")
      .def("__init__", [](LocalDia* self, In<std::int32_t> indptr, In<std::int32_t> indices, In<double> data,
                          std::int64_t ncols, int max_diagonals) {
        const CsrView A = csr_arrays(indptr, indices, data, "DiaMatrix");
        nb::gil_scoped_release nogil;
        new (self) LocalDia(dia_from_csr(A, ncols, max_diagonals));
      }, "indptr"_a, "indices"_a, "data"_a, "ncols"_a, "max_diagonals"_a = 64,
           "From CSR arrays (int32 indices; columns checked against ncols); ValueError if not banded enough.")
      .def("spmv", [](const LocalDia& d, In<double> x, Out<double> y) {
        require_len(x, d.ncols, "x");
        require_len(y, d.nrows, "y");
        nb::gil_scoped_release nogil;
        spmv(d, x.data(), y.data());
      }, "x"_a, "y"_a.noconvert(), "y = A x.")
      .def_ro("nrows", &LocalDia::nrows)
      .def_ro("ncols", &LocalDia::ncols)
      .def_ro("nnz", &LocalDia::nnz)
      .def_prop_ro("ndiag", &LocalDia::ndiag)
      .def_prop_ro("offsets", [](const LocalDia& d) { return copy_numpy(d.offsets); })
      .def_prop_ro("stored", &LocalDia::stored, "Values stored, padding included.")
      .def_prop_ro("spmv_bytes", &LocalDia::spmv_bytes, "Bytes one SpMV reads and writes.");
  m.def("blas_kernel", [] { return std::string(openblas_get_corename()); },
        "The CPU kernels OpenBLAS chose at load time (e.g. SkylakeX, Haswell, Prescott: generic).");
  m.def("stream_triad_bandwidth", &stream_triad_bandwidth, "n"_a, "reps"_a,
        nb::call_guard<nb::gil_scoped_release>(), "Triad bandwidth of every repetition, bytes/s.");
  m.def("stream_read_bandwidth", &stream_read_bandwidth, "n"_a, "reps"_a,
        nb::call_guard<nb::gil_scoped_release>(), "Read-only streaming bandwidth of every repetition, bytes/s.");

}

void bind_matrix_market(nb::module_& m) {
  nb::class_<MMHeader>(m, "MMHeader")
      .def_ro("field", &MMHeader::field)
      .def_ro("symmetry", &MMHeader::symmetry)
      .def_ro("nrows", &MMHeader::nrows)
      .def_ro("ncols", &MMHeader::ncols)
      .def_ro("nnz", &MMHeader::nnz)
      .def_ro("data_offset", &MMHeader::data_offset)
      .def_ro("data_line", &MMHeader::data_line)
      .def_ro("file_size", &MMHeader::file_size)
      .def("__repr__", [](const MMHeader& h) {
        return "MMHeader(" + std::to_string(h.nrows) + " x " + std::to_string(h.ncols) + ", " + std::to_string(h.nnz) +
               " entries stored, field '" + h.field + "', symmetry '" + h.symmetry + "')";
      });
  m.def("mm_read_header", &mm_read_header, "path"_a);
  m.def("mm_chunk", &mm_chunk, "header"_a, "path"_a, "part"_a, "nparts"_a);
  m.def("mm_parse_chunk", [](const std::string& path, const MMHeader& h, std::int64_t b, std::int64_t e) {
    MMChunk c;
    {
      nb::gil_scoped_release nogil;
      c = mm_parse_chunk(path, h, b, e);
    }
    return nb::make_tuple(to_numpy(std::move(c.rows)), to_numpy(std::move(c.cols)), to_numpy(std::move(c.vals)),
                          c.nlines, c.error_line, c.error, c.first_lower, c.first_upper);
  }, "path"_a, "header"_a, "begin"_a, "end"_a);
  m.def("mm_write", [](const std::string& path, std::int64_t nr, std::int64_t nc, In<std::int64_t> rows,
                       In<std::int64_t> cols, In<double> vals, const std::string& field,
                       const std::string& symmetry, const std::string& comment) {
    std::vector<std::int64_t> r(rows.data(), rows.data() + rows.shape(0)), c(cols.data(), cols.data() + cols.shape(0));
    std::vector<double> v(vals.data(), vals.data() + vals.shape(0));
    nb::gil_scoped_release nogil;
    mm_write(path, nr, nc, r, c, v, field, symmetry, comment);
  }, "path"_a, "nrows"_a, "ncols"_a, "rows"_a, "cols"_a, "vals"_a, "field"_a, "symmetry"_a, "comment"_a);

}

void bind_partitioning(nb::module_& m) {
  m.def("metis_kway", [](In<std::int32_t> xadj, In<std::int32_t> adjncy, int nparts, int seed) {
    std::int64_t n = static_cast<std::int64_t>(xadj.shape(0)) - 1;
    std::vector<std::int32_t> part;
    {
      nb::gil_scoped_release nogil;
      part = metis_kway(n, xadj.data(), adjncy.data(), nparts, seed);
    }
    return to_numpy(std::move(part));
  }, "xadj"_a, "adjncy"_a, "nparts"_a, "seed"_a = 0);
}

}  // namespace

void bind_sparse(nb::module_& m) {
  bind_layouts(m);
  bind_kernels(m);
  bind_matrix_market(m);
  bind_partitioning(m);
}

}  // namespace commsolve::bindings
