/* hypre 2.26 BoomerAMG-PCG on a matrix file, for bench/sparsify.py: the peer of commsolve's
 * classical AMG (PMIS coarsening, extended+i interpolation at most 4 entries per row, strength
 * 0.25, hybrid Gauss-Seidel forward down and backward up, a coarsest level of at most 10
 * rows), optionally with hypre's non-Galerkin coarse operators
 * (HYPRE_BoomerAMGSetLevelNonGalerkinTol: the tolerance of level l sparsifies the operator
 * of level l + 1, as commsolve's gamma[l]).
 *
 *   mpiexec -n P hypre_amg MATRIX.csr REPEAT [TOL0 TOL1 ... (the last repeated)]
 *
 * MATRIX.csr: int64 n, int64 nnz, int64 indptr[n + 1], int64 indices[nnz], double data[nnz]
 * (native endianness). Every rank reads its contiguous block of rows. b = 1, x0 = 0, PCG to
 * ||r|| <= 1e-8 ||b||. Each repetition builds a fresh solver; setup and solve are each timed
 * between barriers. Rank 0 prints hypre's setup statistics (the first repetition) and one
 * JSON line per repetition. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "HYPRE.h"
#include "HYPRE_IJ_mv.h"
#include "HYPRE_parcsr_ls.h"

static void die(const char* what) {
  fprintf(stderr, "hypre_amg: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) die("usage: hypre_amg MATRIX.csr REPEAT [TOL0 TOL1 ...]");
  HYPRE_Init();
  const int repeat = atoi(argv[2]);
  const int ntol = argc - 3;

  FILE* f = fopen(argv[1], "rb");
  if (!f) die("cannot open the matrix file");
  int64_t n, nnz;
  if (fread(&n, 8, 1, f) != 1 || fread(&nnz, 8, 1, f) != 1) die("short header");
  const int64_t lo = n * rank / size, hi = n * (rank + 1) / size;
  int64_t* ptr = malloc(sizeof(int64_t) * (hi - lo + 1));
  fseek(f, 16 + 8 * lo, SEEK_SET);
  if (fread(ptr, 8, hi - lo + 1, f) != (size_t)(hi - lo + 1)) die("short indptr");
  const int64_t first = ptr[0], count = ptr[hi - lo] - first;
  int64_t* col = malloc(sizeof(int64_t) * (count ? count : 1));
  double* val = malloc(sizeof(double) * (count ? count : 1));
  fseek(f, 16 + 8 * (n + 1) + 8 * first, SEEK_SET);
  if (fread(col, 8, count, f) != (size_t)count) die("short indices");
  fseek(f, 16 + 8 * (n + 1) + 8 * nnz + 8 * first, SEEK_SET);
  if (fread(val, 8, count, f) != (size_t)count) die("short data");
  fclose(f);

  HYPRE_IJMatrix A;
  HYPRE_IJMatrixCreate(MPI_COMM_WORLD, lo, hi - 1, lo, hi - 1, &A);
  HYPRE_IJMatrixSetObjectType(A, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(A);
  for (int64_t i = lo; i < hi; ++i) {
    HYPRE_Int ncols = (HYPRE_Int)(ptr[i - lo + 1] - ptr[i - lo]);
    HYPRE_BigInt row = (HYPRE_BigInt)i;
    HYPRE_BigInt* cols = malloc(sizeof(HYPRE_BigInt) * (ncols ? ncols : 1));
    for (HYPRE_Int k = 0; k < ncols; ++k) cols[k] = (HYPRE_BigInt)col[ptr[i - lo] - first + k];
    HYPRE_IJMatrixSetValues(A, 1, &ncols, &row, cols, val + (ptr[i - lo] - first));
    free(cols);
  }
  HYPRE_IJMatrixAssemble(A);
  HYPRE_ParCSRMatrix parA;
  HYPRE_IJMatrixGetObject(A, (void**)&parA);

  HYPRE_IJVector b, x;
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi - 1, &b);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi - 1, &x);
  HYPRE_IJVectorSetObjectType(b, HYPRE_PARCSR);
  HYPRE_IJVectorSetObjectType(x, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(b);
  HYPRE_IJVectorInitialize(x);
  double* ones = malloc(sizeof(double) * (hi - lo ? hi - lo : 1));
  double* zeros = calloc(hi - lo ? hi - lo : 1, sizeof(double));
  HYPRE_BigInt* rows = malloc(sizeof(HYPRE_BigInt) * (hi - lo ? hi - lo : 1));
  for (int64_t i = lo; i < hi; ++i) {
    ones[i - lo] = 1.0;
    rows[i - lo] = (HYPRE_BigInt)i;
  }
  HYPRE_IJVectorSetValues(b, (HYPRE_Int)(hi - lo), rows, ones);
  HYPRE_IJVectorAssemble(b);
  HYPRE_ParVector parb, parx;
  HYPRE_IJVectorGetObject(b, (void**)&parb);

  for (int rep = 0; rep < repeat; ++rep) {
    HYPRE_IJVectorSetValues(x, (HYPRE_Int)(hi - lo), rows, zeros);
    HYPRE_IJVectorAssemble(x);
    HYPRE_IJVectorGetObject(x, (void**)&parx);
    HYPRE_Solver amg, pcg;
    HYPRE_BoomerAMGCreate(&amg);
    HYPRE_BoomerAMGSetCoarsenType(amg, 8);  /* PMIS */
    HYPRE_BoomerAMGSetInterpType(amg, 6);   /* extended+i */
    HYPRE_BoomerAMGSetPMaxElmts(amg, 4);
    HYPRE_BoomerAMGSetStrongThreshold(amg, 0.25);
    HYPRE_BoomerAMGSetRelaxType(amg, 3);          /* hybrid Gauss-Seidel forward */
    HYPRE_BoomerAMGSetCycleRelaxType(amg, 4, 2);  /* backward, up */
    /* Gaussian elimination asked for on the coarsest level; hypre 2.26's statistics print
     * hybrid Gauss-Seidel (3) there all the same: at most 10 rows, either way. */
    HYPRE_BoomerAMGSetCycleRelaxType(amg, 9, 3);
    HYPRE_BoomerAMGSetMaxCoarseSize(amg, 10);
    HYPRE_BoomerAMGSetMaxIter(amg, 1);
    HYPRE_BoomerAMGSetTol(amg, 0.0);
    HYPRE_BoomerAMGSetPrintLevel(amg, rep == 0 ? 1 : 0);
    if (ntol > 0) {
      HYPRE_BoomerAMGSetNonGalerkinTol(amg, atof(argv[argc - 1]));
      for (int l = 0; l < ntol; ++l) HYPRE_BoomerAMGSetLevelNonGalerkinTol(amg, atof(argv[3 + l]), l);
    }
    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetTol(pcg, 1e-8);
    HYPRE_PCGSetTwoNorm(pcg, 1);
    HYPRE_PCGSetMaxIter(pcg, 500);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup,
                        amg);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    HYPRE_ParCSRPCGSetup(pcg, parA, parb, parx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    HYPRE_ParCSRPCGSolve(pcg, parA, parb, parx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    HYPRE_Int its;
    double rel;
    HYPRE_PCGGetNumIterations(pcg, &its);
    HYPRE_PCGGetFinalRelativeResidualNorm(pcg, &rel);
    if (rank == 0)
      printf("{\"setup_s\": %.9f, \"solve_s\": %.9f, \"iterations\": %d, \"rel_residual\": %.6e}\n", t1 - t0, t2 - t1,
             (int)its, rel);
    fflush(stdout);
    HYPRE_ParCSRPCGDestroy(pcg);
    HYPRE_BoomerAMGDestroy(amg);
  }
  HYPRE_IJMatrixDestroy(A);
  HYPRE_IJVectorDestroy(b);
  HYPRE_IJVectorDestroy(x);
  free(ptr), free(col), free(val), free(ones), free(zeros), free(rows);
  HYPRE_Finalize();
  MPI_Finalize();
  return 0;
}
