// Distribution: which rank owns each global row (or vector entry), and where it sits locally.
//
// Two forms: contiguous blocks described by P+1 offsets (the usual case, O(P) memory), or an
// explicit owner per index (strided, METIS), where each rank's entries are kept in ascending
// global order. Both answer owner() and local_index() for any global index.
#pragma once

#include <cstdint>
#include <vector>

namespace commsolve {

class Distribution {
 public:
  // Balanced contiguous blocks: the first n mod P ranks get one extra row.
  static Distribution contiguous(std::int64_t n, int nranks);
  // Contiguous blocks given by offsets (size P+1, offsets[0] = 0, non-decreasing).
  static Distribution from_offsets(std::vector<std::int64_t> offsets);
  // Explicit owner of every index; owners must lie in [0, nranks).
  static Distribution from_owners(std::vector<std::int32_t> owner, int nranks);

  std::int64_t global_size() const { return n_; }
  int nranks() const { return nranks_; }
  bool is_contiguous() const { return owner_.empty(); }

  int owner(std::int64_t g) const;
  std::int64_t local_index(std::int64_t g) const;
  // Whether `rank` owns g (contiguous blocks: a range check, no search), and if so g's local
  // index there.
  bool owns(int rank, std::int64_t g) const {
    return owner_.empty() ? g >= offsets_[rank] && g < offsets_[rank + 1] : owner_[g] == rank;
  }
  std::int64_t owned_index(int rank, std::int64_t g) const {
    return owner_.empty() ? g - offsets_[rank] : local_[g];
  }
  std::int64_t local_size(int rank) const;
  // Global indices owned by `rank`, in local order.
  std::vector<std::int64_t> owned(int rank) const;
  // Global index of local entry `i` of `rank`.
  std::int64_t global_index(int rank, std::int64_t i) const;
  // Whether `other` gives `rank` the same global indices in the same order (and has the
  // same global size and rank count).
  bool same_share(const Distribution& other, int rank) const;

  const std::vector<std::int64_t>& offsets() const { return offsets_; }
  const std::vector<std::int32_t>& owners() const { return owner_; }

 private:
  std::int64_t n_ = 0;
  int nranks_ = 0;
  std::vector<std::int64_t> offsets_;  // contiguous: P+1 offsets; explicit: per-rank counts prefix
  std::vector<std::int32_t> owner_;    // explicit only
  std::vector<std::int64_t> local_;    // explicit only: index within the owner
  std::vector<std::int64_t> members_;  // explicit only: globals grouped by owner (offsets_ as ptr)
};

}  // namespace commsolve
