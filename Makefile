# make demo   installs what is missing, builds, runs the main job
# make test   installs what is missing, builds, runs every test
# make docs   builds the documentation site (Sphinx, offline, warnings as errors) into build/docs/html
# make install-cxx PREFIX=/opt/commsolve   the C++ package alone (no Python): headers, libcommsolve.a,
#             find_package(commsolve CONFIG) -> commsolve::core; see examples/cxx/halo_spmv
# make bench-sptrsv   also installs SuperLU_DIST, compares the 2D triangular solve with it
# make bench-threads  also installs SuperLU_DIST, compares threads and ranks for the solve with it
# make bench-factor   also installs SuperLU_DIST, compares the LU factorization with it
# make bench-amg      also installs PETSc/hypre, compares AMG-PCG with BoomerAMG, GAMG, pyamg
# make bench-sparsify also installs hypre, compares sparsified AMG with hypre's non-Galerkin
# make bench-selinv   also installs MUMPS, compares selected inversion with its inverse entries
# make bench-dense    also installs ScaLAPACK, compares the 2.5D multiply and LU with it, and
#                     simulates them and the multicasts at BG/P scale
PYTHON ?= python3
NP ?= 4
export OMPI_ALLOW_RUN_AS_ROOT ?= 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM ?= 1
export OMPI_MCA_rmaps_base_oversubscribe ?= 1

SOURCES := $(shell find src python -name '*.cpp' -o -name '*.hpp' -o -name '*.py') CMakeLists.txt pyproject.toml
STAMP := build/.installed

.PHONY: deps build docs install-cxx demo test bench bench-sptrsv bench-threads bench-factor bench-amg bench-sparsify bench-selinv bench-dense bench-mgcg clean

deps:
	PYTHON=$(PYTHON) scripts/install-deps

$(STAMP): $(SOURCES)
	PYTHON=$(PYTHON) scripts/install-deps
	$(PYTHON) scripts/build.py
	@mkdir -p build && touch $(STAMP)

build: $(STAMP)

docs: build
	$(PYTHON) -m sphinx -E -W --keep-going -q -b html docs build/docs/html
	@echo "docs: build/docs/html/index.html"

PREFIX ?= $(HOME)/.local
install-cxx:
	PYTHON=$(PYTHON) scripts/install-deps
	cmake -S . -B build/cxx -G Ninja -DCOMMSOLVE_PYTHON=OFF
	cmake --build build/cxx
	cmake --install build/cxx --prefix $(PREFIX)

demo: build
	$(PYTHON) -m commsolve demo -np $(NP)

# Two workers over the test files, then alone the tests marked serial (timings, timeouts,
# /tmp seen whole); the status fails if either pass fails.
test: build
	status=0; \
	$(PYTHON) -m pytest -q -n 2 --dist loadfile -m "not serial" tests || status=1; \
	$(PYTHON) -m pytest -q -m serial tests || status=1; \
	exit $$status

bench: build
	$(PYTHON) bench/spmv_local.py

bench-sptrsv: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/sptrsv_vs_superlu.py

bench-threads: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/sptrsv_threads.py

bench-factor: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/factor_vs_superlu.py

bench-amg: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/amg_vs_hypre.py

bench-sparsify: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/sparsify.py

bench-selinv: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/selinv.py

bench-dense: build
	PYTHON=$(PYTHON) scripts/install-deps --peers
	$(PYTHON) bench/dense25d.py

bench-mgcg: build  # builds HPCG 3.1 from ../shared/peers into ~/.cache (the bench calls its script)
	$(PYTHON) bench/mgcg_vs_hpcg.py

clean:
	rm -rf build
