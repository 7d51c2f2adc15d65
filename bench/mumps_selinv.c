/* MUMPS 5.5 selected inversion on a matrix file, for bench/selinv.py: the peer of commsolve's
 * selected inverse. MUMPS factors A (LU, SYM=0) and then computes the entries of A^-1 on the
 * sparsity pattern of A with its "user-specified entries of the inverse" solve (ICNTL(30)=1).
 *
 *   mpiexec -n P mumps_selinv INPUT OUTPUT [REPEAT (default 3)]
 *
 * INPUT (written by bench/selinv.py with numpy, native endianness): int64 n, int64 nnz,
 * int32 row[nnz], int32 col[nnz] (0-based), double val[nnz]: the COO triples of a square
 * matrix, general (unsymmetric) storage, no duplicates. Rank 0 reads it and hands MUMPS the
 * centralized assembled matrix (ICNTL(5)=0, ICNTL(18)=0); PAR=1, so rank 0 also computes.
 *
 * Analysis (JOB=1) runs once; factorization (JOB=2) and the inverse entries (JOB=3 with
 * ICNTL(30)=1) run REPEAT times. Each phase is timed with MPI_Wtime between barriers (so it is
 * the slowest rank's time) and the median over the repetitions is reported.
 *
 * OUTPUT (rank 0): int64 nnz, then double inv[nnz], the entries A^-1(row[k], col[k]) in the
 * order of the input triples. Rank 0 prints one JSON line on stdout:
 *   {"n", "nnz", "procs", "analysis_s", "factor_s", "inverse_s", "repeat",
 *    "ordering" (INFOG(7): 0 AMD, 2 AMF, 3 SCOTCH, 4 PORD, 5 METIS, 6 QAMD),
 *    "entries_in_factors" (INFOG(29), summed over the ranks)}
 * Any MUMPS error (INFOG(1) < 0) prints INFOG(1), INFOG(2) on stderr and aborts with code 2. */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmumps_c.h"

#define ICNTL(I) icntl[(I) - 1] /* 1-based indexing as in the MUMPS user guide */
#define INFOG(I) infog[(I) - 1]

static void die(const char* what, int code) {
  fprintf(stderr, "mumps_selinv: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, code);
}

/* Runs one MUMPS phase and stops everything if it failed (INFOG is the same on all ranks). */
static void call_mumps(DMUMPS_STRUC_C* id, int job, const char* phase) {
  id->job = job;
  dmumps_c(id);
  if (id->INFOG(1) < 0) {
    fprintf(stderr, "mumps_selinv: MUMPS %s (JOB=%d) failed: INFOG(1)=%d INFOG(2)=%d\n", phase,
            job, (int)id->INFOG(1), (int)id->INFOG(2));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static double timed(DMUMPS_STRUC_C* id, int job, const char* phase) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  call_mumps(id, job, phase);
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - t0;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* t, int m) {
  qsort(t, (size_t)m, sizeof(double), cmp_double);
  return m % 2 ? t[m / 2] : 0.5 * (t[m / 2 - 1] + t[m / 2]);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3 || argc > 4) die("usage: mumps_selinv INPUT OUTPUT [REPEAT]", 1);
  const int repeat = argc == 4 ? atoi(argv[3]) : 3;
  if (repeat < 1) die("REPEAT must be at least 1", 1);

  /* Rank 0 reads the COO triples and converts them to MUMPS's 1-based indices. */
  int64_t n = 0, nnz = 0;
  MUMPS_INT *irn = NULL, *jcn = NULL;
  double* a = NULL;
  if (rank == 0) {
    FILE* f = fopen(argv[1], "rb");
    if (!f) die("cannot open the input file", 1);
    if (fread(&n, 8, 1, f) != 1 || fread(&nnz, 8, 1, f) != 1) die("short header", 1);
    if (n < 1 || nnz < 1 || n >= INT_MAX || nnz >= INT_MAX) die("bad n or nnz", 1);
    int32_t* buf = malloc(sizeof(int32_t) * (size_t)nnz);
    irn = malloc(sizeof(MUMPS_INT) * (size_t)nnz);
    jcn = malloc(sizeof(MUMPS_INT) * (size_t)nnz);
    a = malloc(sizeof(double) * (size_t)nnz);
    if (fread(buf, 4, (size_t)nnz, f) != (size_t)nnz) die("short row indices", 1);
    for (int64_t k = 0; k < nnz; ++k) irn[k] = buf[k] + 1;
    if (fread(buf, 4, (size_t)nnz, f) != (size_t)nnz) die("short column indices", 1);
    for (int64_t k = 0; k < nnz; ++k) jcn[k] = buf[k] + 1;
    if (fread(a, 8, (size_t)nnz, f) != (size_t)nnz) die("short values", 1);
    fclose(f);
    free(buf);
    for (int64_t k = 0; k < nnz; ++k)
      if (irn[k] < 1 || irn[k] > n || jcn[k] < 1 || jcn[k] > n) die("index out of range", 1);
  }

  DMUMPS_STRUC_C id;
  memset(&id, 0, sizeof id);
  id.comm_fortran = (MUMPS_INT)MPI_Comm_c2f(MPI_COMM_WORLD);
  id.par = 1; /* the host takes part in the computation */
  id.sym = 0; /* unsymmetric LU */
  call_mumps(&id, -1, "initialization");
  /* Output: error messages only (ICNTL(1)=6, Fortran unit 6 = stdout; a failed run exits
   * with code 2 anyway), no diagnostics, no statistics, print level 1 (errors). */
  id.ICNTL(1) = 6;
  id.ICNTL(2) = -1;
  id.ICNTL(3) = -1;
  id.ICNTL(4) = 1;
  id.ICNTL(5) = 0;  /* assembled matrix */
  id.ICNTL(18) = 0; /* centralized on the host */
  id.ICNTL(7) = 7;  /* automatic choice of the sequential ordering (the default) */
  /* ICNTL(27), the blocking factor of the multiple-RHS / inverse-entries solve, is left at its
   * default (-32: automatic, blocks of about 32 columns): on a 20^3 Laplacian, fixed blocks of
   * 8 to 512 moved the inverse time by at most ~20% either way, within run-to-run noise. */

  /* The requested entries: the pattern of A in compressed-column form (column j of A^-1 is
   * right-hand side j). Two stable counting sorts (by row, then by column) give ascending rows
   * within each column; pos[k] is where input triple k lands in the CSC arrays. */
  MUMPS_INT *irhs_ptr = NULL, *irhs_sparse = NULL, *irhs_copy = NULL;
  double* rhs_sparse = NULL;
  int64_t* pos = NULL;
  if (rank == 0) {
    id.n = (MUMPS_INT)n;
    id.nnz = (MUMPS_INT8)nnz;
    id.irn = irn;
    id.jcn = jcn;
    id.a = a;
    int64_t* cnt = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t* byrow = malloc(sizeof(int64_t) * (size_t)nnz);
    for (int64_t k = 0; k < nnz; ++k) ++cnt[irn[k]];
    for (int64_t i = 0; i < n; ++i) cnt[i + 1] += cnt[i]; /* cnt[i - 1] = start of row i */
    for (int64_t k = 0; k < nnz; ++k) byrow[cnt[irn[k] - 1]++] = k;
    irhs_ptr = calloc((size_t)n + 1, sizeof(MUMPS_INT));
    for (int64_t k = 0; k < nnz; ++k) ++irhs_ptr[jcn[k]];
    irhs_ptr[0] = 1;
    for (int64_t j = 0; j < n; ++j) irhs_ptr[j + 1] += irhs_ptr[j];
    int64_t* next = malloc(sizeof(int64_t) * (size_t)n); /* next free slot, 0-based */
    for (int64_t j = 0; j < n; ++j) next[j] = irhs_ptr[j] - 1;
    irhs_sparse = malloc(sizeof(MUMPS_INT) * (size_t)nnz);
    pos = malloc(sizeof(int64_t) * (size_t)nnz);
    for (int64_t r = 0; r < nnz; ++r) {
      const int64_t k = byrow[r], p = next[jcn[k] - 1]++;
      irhs_sparse[p] = irn[k];
      pos[k] = p;
    }
    free(cnt);
    free(byrow);
    free(next);
    irhs_copy = malloc(sizeof(MUMPS_INT) * (size_t)nnz);
    memcpy(irhs_copy, irhs_sparse, sizeof(MUMPS_INT) * (size_t)nnz);
    rhs_sparse = calloc((size_t)nnz, sizeof(double));
  }

  const double t_analysis = timed(&id, 1, "analysis");
  double* t_factor = malloc(sizeof(double) * (size_t)repeat);
  double* t_inverse = malloc(sizeof(double) * (size_t)repeat);
  for (int rep = 0; rep < repeat; ++rep) {
    t_factor[rep] = timed(&id, 2, "factorization");
    /* The request (host only), restored before every solve in case MUMPS touched it. */
    id.ICNTL(30) = 1; /* compute user-specified entries of A^-1 */
    if (rank == 0) {
      memcpy(irhs_sparse, irhs_copy, sizeof(MUMPS_INT) * (size_t)nnz);
      id.nrhs = (MUMPS_INT)n;
      id.nz_rhs = (MUMPS_INT)nnz;
      id.irhs_ptr = irhs_ptr;
      id.irhs_sparse = irhs_sparse;
      id.rhs_sparse = rhs_sparse;
    }
    t_inverse[rep] = timed(&id, 3, "inverse entries");
  }

  if (rank == 0) {
    /* The values come back in the request's CSC layout; make sure it was not reordered. */
    if (memcmp(irhs_sparse, irhs_copy, sizeof(MUMPS_INT) * (size_t)nnz) != 0)
      die("MUMPS reordered IRHS_SPARSE; the output mapping would be wrong", 2);
    double* inv = malloc(sizeof(double) * (size_t)nnz);
    for (int64_t k = 0; k < nnz; ++k) inv[k] = rhs_sparse[pos[k]];
    FILE* f = fopen(argv[2], "wb");
    if (!f) die("cannot open the output file", 1);
    if (fwrite(&nnz, 8, 1, f) != 1 || fwrite(inv, 8, (size_t)nnz, f) != (size_t)nnz)
      die("cannot write the output file", 1);
    fclose(f);
    free(inv);
    /* INFOG(29): entries in the factors after factorization; negative means millions. */
    const long long nf = id.INFOG(29) >= 0 ? (long long)id.INFOG(29)
                                           : -1000000LL * (long long)id.INFOG(29);
    printf("{\"n\": %lld, \"nnz\": %lld, \"procs\": %d, \"analysis_s\": %.6e, "
           "\"factor_s\": %.6e, \"inverse_s\": %.6e, \"repeat\": %d, \"ordering\": %d, "
           "\"entries_in_factors\": %lld}\n",
           (long long)n, (long long)nnz, size, t_analysis, median(t_factor, repeat),
           median(t_inverse, repeat), repeat, (int)id.INFOG(7), nf);
    fflush(stdout);
  }

  call_mumps(&id, -2, "termination");
  free(t_factor);
  free(t_inverse);
  free(irn);
  free(jcn);
  free(a);
  free(irhs_ptr);
  free(irhs_sparse);
  free(irhs_copy);
  free(rhs_sparse);
  free(pos);
  MPI_Finalize();
  return 0;
}
