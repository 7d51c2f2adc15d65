// Supernodal LU without pivoting (static pivoting, as SuperLU_DIST) of a matrix with a
// symmetric pattern, by the multifrontal method over the supernodes of a symbolic Cholesky:
// each supernode's front gathers its entries of A and its children's update matrices, its
// diagonal block is factored, the panels follow by two triangular solves, and one GEMM
// leaves the update for its parent. Dense blocks per supernode, as the 2D and 3D triangular
// solves read them: the diagonal block (L11 unit lower and U11 packed), L21 and U12.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commsolve/core/huge_pages.hpp"
#include "commsolve/direct/symbolic.hpp"

namespace commsolve {

struct LUOptions {
  // A pivot with |p| <= zero_pivot * ||A||_1 is an error, unless replace_tiny is set, in
  // which case pivots with |p| < sqrt(eps) * ||A||_1 become sign(p) * sqrt(eps) * ||A||_1
  // (SuperLU_DIST's ReplaceTinyPivot). A non-finite entry or pivot is an error.
  double zero_pivot = 1e-14;
  bool replace_tiny = false;
};

// A's entries as the factorization reads them: the CSR of the permuted matrix (pattern
// symmetric: A and A^T share it) and of its transpose, so columns are at hand. Rows that no
// supernode being factored reads may be empty.
struct LUEntries {
  const std::int32_t *indptr, *indices;
  const double* data;
  const std::int32_t *t_indptr, *t_indices;
  const double* t_data;
};

// Static pivoting's rules for one pivot (SuperLU_DIST's): a non-finite pivot is an error; one
// with |p| <= zero_tol is an error unless tiny pivots are replaced, in which case every pivot
// with |p| < tiny becomes sign(p) * tiny.
struct PivotRule {
  double zero_tol, tiny;
  bool replace;
  std::int64_t replaced = 0;

  static PivotRule scaled(double anorm, const LUOptions& opts);  // thresholds relative to ||A||_1
  void apply(double& piv, std::int64_t column);                  // `column`: for the message
};

// Unpivoted LU of the n x n column-major block A (leading dimension lda) in place, L unit
// lower and U upper, each pivot checked by `rule` when it is final; `column` is A's first
// permuted column (for messages).
void dense_lu(int n, double* A, int lda, std::int64_t column, PivotRule& rule);

class SupernodalLU {
 public:
  // The whole factorization, on this process.
  SupernodalLU(const SupernodalStructure& sym, const LUEntries& a, const LUOptions& opts);

  // Solves L U x = b in place for `nrhs` right-hand sides stored column by column (n x nrhs).
  void solve(double* b, int nrhs) const;

  const SupernodalStructure& structure() const { return sym_; }
  std::int64_t nnz_LU() const;  // stored entries of L and U (diagonal blocks counted once)
  std::int64_t tiny_pivots_replaced() const { return replaced_; }
  double flops() const { return flops_; }
  // Seconds spent obtaining the factors' storage and the update stack from the kernel and
  // touching it once (SuperLU_DIST does this in its DISTRIBUTE phase), and in the numeric
  // factorization proper (its FACTOR).
  double allocate_seconds() const { return allocate_seconds_; }
  double numeric_seconds() const { return numeric_seconds_; }

  // Supernode s's blocks, column-major: the diagonal block (w x w, L11 below the diagonal,
  // U11 on and above), L21 (r x w) and U12 (w x r); w its width, r the rows below it. The
  // three lie one after the other: values(s) is all of them, values_size(s) entries.
  const double* diag(std::size_t s) const { return values_.data() + diag_off_[s]; }
  const double* l21(std::size_t s) const { return values_.data() + l_off_[s]; }
  const double* u12(std::size_t s) const { return values_.data() + u_off_[s]; }

 private:
  // Factors every supernode in `order` (a postorder) from A's entries and its children's
  // updates, kept on `stack` (at least update_stack_size(order) entries) until the parent
  // adds them in.
  void factor_supernodes(const std::vector<std::int64_t>& order, const LUEntries& a, PivotRule& rule,
                         ZeroedArray<double>& stack);
  std::int64_t update_stack_size(const std::vector<std::int64_t>& order) const;
  std::int64_t width(std::size_t s) const { return sym_.sn_start[s + 1] - sym_.sn_start[s]; }
  std::int64_t below(std::size_t s) const { return sym_.rows_ptr[s + 1] - sym_.rows_ptr[s]; }

  SupernodalStructure sym_;
  std::vector<std::int32_t> parent_;                     // supernodal etree
  std::vector<std::int64_t> diag_off_, l_off_, u_off_;  // per supernode, into values_
  ZeroedArray<double> values_;
  std::int64_t replaced_ = 0;
  double flops_ = 0.0;
  double allocate_seconds_ = 0.0, numeric_seconds_ = 0.0;
};

}  // namespace commsolve
