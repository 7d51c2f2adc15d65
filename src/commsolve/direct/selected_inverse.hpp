// Selected inversion (Erisman and Tinney; Lin et al.'s SelInv, the numerical method PSelInv
// distributes): the entries of Z = (L U)^-1 inside the pattern of L + U, from a supernodal
// factorization, without forming the inverse. For supernode K (columns J, rows C below), in
// reverse order, with L^(C,K) = L21 L11^-1 and U^(K,C) = U11^-1 U12:
//   Z(C,K) = -Z(C,C) L^(C,K),  Z(K,C) = -U^(K,C) Z(C,C),  Z(K,K) = (L11 U11)^-1 - U^(K,C) Z(C,K),
// where Z(C,C) lies inside the pattern already computed (C's rows are a clique of the
// ancestors' structure). Serial; unsymmetric (the symmetric case is the same computation).
#pragma once

#include <cstdint>
#include <vector>

#include "commsolve/direct/supernodal_lu.hpp"

namespace commsolve {

struct SelectedEntries {
  std::vector<std::int32_t> row, col;  // factor numbering
  std::vector<double> value;
};

// Every entry of (L U)^-1 in the pattern of L + U (diagonal blocks dense), as triples.
SelectedEntries selected_inverse(const SupernodalLU& lu);

// Z's entries as A^-1 = D_c Q (L U)^-1 P D_r's, in place: Z's entry (a, b) becomes A^-1's
// (row_of[a], col_of[b]), times row_scale[row_of[a]] col_scale[col_of[b]].
void map_entries(SelectedEntries& z, const std::int64_t* row_of, const std::int64_t* col_of, const double* row_scale,
                 const double* col_scale);

// Triples (no two alike) as CSR of n rows, columns ascending in each row: two stable counting
// sorts, by column then by row (O(nnz + n), no comparisons).
struct SelectedCsr {
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> indices;
  std::vector<double> data;
};
SelectedCsr triples_csr(std::int64_t n, const std::int32_t* row, const std::int32_t* col, const double* value,
                        std::int64_t nnz);

// map_entries, then triples_csr.
SelectedCsr selected_csr(std::int64_t n, SelectedEntries z, const std::int64_t* row_of, const std::int64_t* col_of,
                         const double* row_scale, const double* col_scale);

}  // namespace commsolve
