// Local (one-rank) sparse storage and the kernels that run per nonzero.
#pragma once

#include <cstdint>
#include <vector>

namespace commsolve {

// Compressed sparse rows with 32-bit local indices: 12 bytes per nonzero moved by SpMV,
// the same layout scipy uses, so arrays can be shared without conversion.
struct LocalCsr {
  std::int64_t nrows = 0;
  std::int64_t ncols = 0;
  std::vector<std::int32_t> indptr{0};
  std::vector<std::int32_t> indices;
  std::vector<double> data;

  std::int64_t nnz() const { return static_cast<std::int64_t>(indices.size()); }
  // Bytes SpMV reads and writes: values, column indices, row pointers, x once, y once.
  double spmv_bytes() const;
};

// Borrowed view of CSR arrays (for matrices that live in numpy).
struct CsrView {
  std::int64_t nrows;
  const std::int32_t* indptr;
  const std::int32_t* indices;
  const double* data;
};

inline CsrView view(const LocalCsr& A) {
  return {A.nrows, A.indptr.data(), A.indices.data(), A.data.data()};
}

// y = A x
void spmv(CsrView A, const double* x, double* y);
// y += A x
void spmv_add(CsrView A, const double* x, double* y);
// y += A^T x   (y has A.ncols entries)
void spmv_transpose_add(CsrView A, const double* x, double* y);

// One Gauss-Seidel sweep over the rows of A (forward or backward), in place on x, whose
// first nrows entries are the unknowns and the rest fixed values (a process's halo: the
// hybrid Gauss-Seidel of hypre, Jacobi across processes): x_i += (b_i - sum_j a_ij x_j) inv_i,
// inv[i] 1 / the divisor of row i (a_ii, or a_ii plus an l1 term: hypre's l1 Gauss-Seidel,
// whose fixed point is still A x = b). `zero` (forward only):
// x is 0 on entry, halo included, and each row's columns are sorted: only the entries left
// of the diagonal are read (half the matrix).
void gauss_seidel_sweep(CsrView A, const double* inv, const double* b, double* x, bool forward, bool zero);

// r_i = sum_{j < i} a_ij (r_j - x_j) for every row (work: nrows doubles of scratch, the
// differences), each row's columns sorted. After a symmetric Gauss-Seidel step from x = 0
// (r holding x as the forward sweep left it, x as the backward sweep did, divisors a_ii)
// this is b - A x on the block: the backward sweep's own equation says
// b_i - a_ii x_i - sum_{j > i} a_ij x_j = sum_{j < i} a_ij r_j.
void lower_difference_product(CsrView A, const double* x, double* r, double* work);

// ILU(0) of a square CSR matrix with sorted column indices, in place on its values: on return
// the strictly lower entries hold L (unit diagonal implied) and the rest U, on A's own
// pattern (Saad, Iterative Methods, Algorithm 10.4). For a symmetric matrix this is IC(0):
// U = D L^T. Returns -1, or the first row whose pivot is zero, missing or not finite.
std::int64_t ilu0_factor(std::int64_t n, const std::int32_t* indptr, const std::int32_t* indices, double* lu);

// x = (L U)^-1 b with the factor ilu0_factor left (b and x may be the same array).
void ilu0_solve(CsrView LU, const double* b, double* x);

// Interpolation truncation (hypre's trunc_factor and P_max_elmts), row by row in place on a
// CSR with int64 columns: drops entries below factor * the row's largest magnitude, then all
// but its max_elements largest (0: no limit) and those equal to the last of them (up to a
// relative 1e-12: ties are kept together, so the choice never depends on column order) and
// explicit zeros, rescaling what is kept so the row sum stays.
// Rows keep their column order. Returns the new number of entries (indptr updated).
std::int64_t truncate_rows(std::int64_t nrows, std::int64_t* indptr, std::int64_t* indices, double* data,
                           double factor, int max_elements);

// STREAM triad a = b + s*c over n doubles, repeated `reps` times; returns the bandwidth of
// every repetition in bytes/s, counting 24 bytes per element as STREAM does (the physical
// limit SpMV is held to; write-allocate traffic on `a` is not counted).
std::vector<double> stream_triad_bandwidth(std::int64_t n, int reps);

// Read-only streaming: the sum of n doubles, repeated `reps` times; bandwidth of every
// repetition in bytes/s (8 per element). SpMV reads ~12 bytes per nonzero and writes
// little, so this is the tighter limit for it on cores whose write streams run faster.
std::vector<double> stream_read_bandwidth(std::int64_t n, int reps);

}  // namespace commsolve
