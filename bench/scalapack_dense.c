/* ScaLAPACK 2.2.1's dense multiply (pdgemm) and LU with partial pivoting (pdgetrf) on
 * block-cyclic N x N matrices, for the benchmarks that compare commsolve's 2.5D dense multiply
 * and LU (cs.dense.matmul / lu) with ScaLAPACK (bench/scalapack_peer.py builds and runs it).
 *
 *   mpiexec -n PR*PC scalapack_dense OP N NB PR PC REPEAT      (OP: gemm, getrf or getrf-random)
 *
 * The ranks form a PR x PC BLACS grid in row-major order (Cblacs_gridinit(..., "Row", PR, PC)),
 * so rank r is grid position (x, y) = (r / PC, r % PC), as on commsolve's layer 0. The matrices
 * are NB x NB block-cyclic from process (0, 0) (numroc_ / descinit_). Entry (i, j) of each
 * matrix is a hash of (matrix, i, j) mapped to [-1, 1), so the matrices are the same on every
 * grid; for getrf, N is added to the diagonal (strictly diagonally dominant by columns, so
 * partial pivoting swaps no rows and the factorization is well defined); getrf-random factors
 * the random matrix as it is (partial pivoting swaps rows at every step).
 *
 * gemm: C = A B ('N', 'N', alpha 1, beta 0), REPEAT times; the entry C(0, 0) is checked against
 * the sum computed from the generator. getrf: A = P L U, REPEAT times, A refilled before each
 * run outside the timed region; INFO must be 0 on every rank. Each run lies between
 * MPI_Barriers; its time is the slowest rank's MPI_Wtime difference (MPI_Allreduce MAX).
 *
 * Rank 0 prints one JSON line on stdout:
 *   {"op", "n", "nb", "grid": [PR, PC], "times": [seconds per run], "median", "gflops"}
 * with gflops = flops / median / 1e9, flops 2 N^3 (gemm) or 2 N^3 / 3 (getrf).
 * Bad arguments: a message on stderr, exit code 2. A failed check: a message, exit code 1. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS (C interface) and ScaLAPACK / PBLAS (Fortran calling convention). pdgemm_ is PBLAS's
 * C routine taking plain char pointers for TRANSA / TRANSB; pdgetrf_ has no character
 * arguments, so neither needs hidden string lengths. */
extern void Cblacs_pinfo(int* mypnum, int* nprocs);
extern void Cblacs_get(int icontxt, int what, int* val);
extern void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
extern void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
extern void Cblacs_gridexit(int icontxt);
extern void Cblacs_exit(int doneflag);
extern int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc,
                   const int* nprocs);
extern void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
                      const int* irsrc, const int* icsrc, const int* ictxt, const int* lld,
                      int* info);
extern void pdgemm_(const char* transa, const char* transb, const int* m, const int* n,
                    const int* k, const double* alpha, const double* a, const int* ia,
                    const int* ja, const int* desca, const double* b, const int* ib,
                    const int* jb, const int* descb, const double* beta, double* c,
                    const int* ic, const int* jc, const int* descc);
extern void pdgetrf_(const int* m, const int* n, double* a, const int* ia, const int* ja,
                     const int* desca, int* ipiv, int* info);

enum { MAT_A = 1, MAT_B = 2 };

/* splitmix64's finalizer: a well-mixed 64-bit hash of x. */
static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Entry (i, j) of matrix `which` (global, 0-based): uniform in [-1, 1), the same on every grid. */
static double entry(int which, int64_t n, int64_t i, int64_t j) {
  const uint64_t h = mix64(mix64((uint64_t)which) ^ (uint64_t)(i * n + j));
  return (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0; /* 53 bits / 2^53 */
}

/* Global index (0-based) of local index `l` along a dimension block-cyclic with block nb over
 * np processes, on process coordinate p (source process 0). */
static int64_t global_index(int l, int nb, int p, int np) {
  return ((int64_t)(l / nb) * np + p) * nb + l % nb;
}

/* The local part (mloc x nloc, column-major, leading dimension lld) of matrix `which`; `shift`
 * is added to the diagonal. */
static void fill(double* a, int which, int n, int nb, int myrow, int mycol, int pr, int pc,
                 int mloc, int nloc, int lld, double shift) {
  for (int lj = 0; lj < nloc; ++lj) {
    const int64_t j = global_index(lj, nb, mycol, pc);
    for (int li = 0; li < mloc; ++li) {
      const int64_t i = global_index(li, nb, myrow, pr);
      a[(size_t)lj * lld + li] = entry(which, n, i, j) + (i == j ? shift : 0.0);
    }
  }
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(const double* t, int m) {
  double* s = malloc((size_t)m * sizeof(double));
  memcpy(s, t, (size_t)m * sizeof(double));
  qsort(s, (size_t)m, sizeof(double), cmp_double);
  const double med = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
  free(s);
  return med;
}

/* A positive int from argv, or -1 when `s` is not one. */
static int positive(const char* s) {
  char* end;
  const long v = strtol(s, &end, 10);
  return (*s == '\0' || *end != '\0' || v < 1 || v > 1000000000L) ? -1 : (int)v;
}

/* Every rank sees the same arguments and the same world size, so every rank takes this exit
 * together; only rank 0 explains. */
static int bad_arguments(int rank, const char* why) {
  if (rank == 0) {
    fprintf(stderr, "scalapack_dense: %s\n", why);
    fprintf(stderr, "usage: mpiexec -n PR*PC scalapack_dense OP N NB PR PC REPEAT  "
                    "(OP: gemm, getrf or getrf-random; N, NB, PR, PC, REPEAT positive integers)\n");
  }
  MPI_Finalize();
  return 2;
}

static void* checked_malloc(size_t bytes) {
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "scalapack_dense: out of memory (%zu bytes)\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  if (argc != 7) {
    char why[96];
    snprintf(why, sizeof why, "expected 6 arguments, got %d", argc - 1);
    return bad_arguments(rank, why);
  }
  const char* op = argv[1];
  const int is_gemm = strcmp(op, "gemm") == 0, is_random = strcmp(op, "getrf-random") == 0;
  if (!is_gemm && !is_random && strcmp(op, "getrf") != 0)
    return bad_arguments(rank, "OP must be gemm, getrf or getrf-random");
  static const char* names[] = {"N", "NB", "PR", "PC", "REPEAT"};
  int vals[5];
  for (int k = 0; k < 5; ++k) {
    vals[k] = positive(argv[k + 2]);
    if (vals[k] < 0) {
      char why[160];
      snprintf(why, sizeof why, "%s must be a positive integer, got '%.60s'", names[k], argv[k + 2]);
      return bad_arguments(rank, why);
    }
  }
  const int n = vals[0], nb = vals[1], pr = vals[2], pc = vals[3], repeat = vals[4];
  if ((long long)pr * pc != size) {
    char why[160];
    snprintf(why, sizeof why, "PR*PC = %d*%d = %lld, but mpiexec started %d rank(s)", pr, pc,
             (long long)pr * pc, size);
    return bad_arguments(rank, why);
  }

  /* The grid, row-major: rank r at (r / PC, r % PC). */
  int iam, nprocs, ctxt, nprow, npcol, myrow, mycol;
  Cblacs_pinfo(&iam, &nprocs);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  if (nprow != pr || npcol != pc || myrow != rank / pc || mycol != rank % pc) {
    fprintf(stderr, "scalapack_dense: rank %d got BLACS grid position (%d, %d) of %dx%d, "
                    "expected (%d, %d) of %dx%d\n", rank, myrow, mycol, nprow, npcol, rank / pc,
            rank % pc, pr, pc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  const int izero = 0, ione = 1;
  const int mloc = numroc_(&n, &nb, &myrow, &izero, &pr);
  const int nloc = numroc_(&n, &nb, &mycol, &izero, &pc);
  const int lld = mloc > 1 ? mloc : 1;
  int desc[9], info;
  descinit_(desc, &n, &n, &nb, &nb, &izero, &izero, &ctxt, &lld, &info);
  if (info != 0) {
    fprintf(stderr, "scalapack_dense: descinit_ failed on rank %d: info = %d\n", rank, info);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const size_t local = (size_t)lld * (size_t)nloc;
  double* a = checked_malloc(local * sizeof(double));
  double *b = NULL, *c = NULL;
  int* ipiv = NULL;
  const double shift = is_gemm || is_random ? 0.0 : (double)n;
  fill(a, MAT_A, n, nb, myrow, mycol, pr, pc, mloc, nloc, lld, shift);
  if (is_gemm) {
    b = checked_malloc(local * sizeof(double));
    c = checked_malloc(local * sizeof(double));
    fill(b, MAT_B, n, nb, myrow, mycol, pr, pc, mloc, nloc, lld, 0.0);
    memset(c, 0, local * sizeof(double));
  } else {
    ipiv = checked_malloc((size_t)(mloc + nb) * sizeof(int));
  }

  double* times = checked_malloc((size_t)repeat * sizeof(double));
  const double one = 1.0, zero = 0.0;
  int failed = 0;
  for (int r = 0; r < repeat; ++r) {
    if (!is_gemm && r > 0) fill(a, MAT_A, n, nb, myrow, mycol, pr, pc, mloc, nloc, lld, shift);
    info = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (is_gemm)
      pdgemm_("N", "N", &n, &n, &n, &one, a, &ione, &ione, desc, b, &ione, &ione, desc, &zero, c,
              &ione, &ione, desc);
    else
      pdgetrf_(&n, &n, a, &ione, &ione, desc, ipiv, &info);
    const double dt = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&dt, &times[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int bad = info != 0, any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad) fprintf(stderr, "scalapack_dense: pdgetrf_ returned info = %d on rank %d (run %d)\n",
                     info, rank, r);
    if (any_bad) {
      failed = 1;
      break;
    }
  }

  /* gemm: C(0, 0), held by rank 0, against the generator's row 0 of A times column 0 of B. */
  if (is_gemm && !failed && rank == 0) {
    double want = 0.0, scale = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const double t = entry(MAT_A, n, 0, k) * entry(MAT_B, n, k, 0);
      want += t;
      scale += fabs(t);
    }
    if (!(fabs(c[0] - want) <= 1e-12 * n * (scale > 1.0 ? scale : 1.0))) {
      fprintf(stderr, "scalapack_dense: pdgemm_ gave C(0,0) = %.17g, expected %.17g\n", c[0], want);
      failed = 1;
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (!failed && rank == 0) {
    const double med = median(times, repeat);
    const double flops = is_gemm ? 2.0 * n * (double)n * n : 2.0 * n * (double)n * n / 3.0;
    printf("{\"op\": \"%s\", \"n\": %d, \"nb\": %d, \"grid\": [%d, %d], \"times\": [", op, n, nb, pr, pc);
    for (int r = 0; r < repeat; ++r) printf("%s%.9g", r ? ", " : "", times[r]);
    printf("], \"median\": %.9g, \"gflops\": %.6g}\n", med, flops / med / 1e9);
    fflush(stdout);
  }

  free(times);
  free(ipiv);
  free(c);
  free(b);
  free(a);
  Cblacs_gridexit(ctxt);
  Cblacs_exit(1); /* 1: leave MPI running; it is finalized below */
  MPI_Finalize();
  return failed ? 1 : 0;
}
