// commsolve._core: the Python face of the C++ core, one binding file per layer (bind_*.cpp).
// Arrays are validated at the boundary (dtype, contiguity, length), so the core can trust
// its inputs.
#include <nanobind/nanobind.h>

#include "commsolve/bindings/common.hpp"
#include "commsolve/core/error.hpp"
#include "commsolve/core/memory.hpp"

NB_MODULE(_core, m) {
  using namespace commsolve;
  using namespace commsolve::bindings;
  m.doc() = "commsolve C++ core";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mpi_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  m.def("keep_freed_memory", &keep_freed_memory,
        "Freed memory kept in the process (glibc: large blocks from the heap, never trimmed); whether it took "
        "effect. commsolve calls it on import unless COMMSOLVE_KEEP_MEMORY=0.");
  m.def("minor_page_faults", &minor_page_faults, "This process's minor page faults so far.");
  bind_sparse(m);
  bind_comm(m);
  bind_trees(m);
  bind_symbolic(m);
  bind_layout(m);
  bind_factor(m);
  bind_solve(m);
  bind_parcsr(m);
  bind_sim(m);
  bind_selinv(m);
  bind_dense(m);
}
