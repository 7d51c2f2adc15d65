#include "commsolve/sparse/distribution.hpp"

#include <algorithm>
#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

Distribution Distribution::contiguous(std::int64_t n, int nranks) {
  require(nranks >= 1, "distribution: need at least one rank");
  require(n >= nranks, "distribution: " + std::to_string(nranks) + " ranks for " +
                           std::to_string(n) + " rows (more ranks than rows)");
  std::vector<std::int64_t> off(nranks + 1);
  std::int64_t base = n / nranks, extra = n % nranks;
  off[0] = 0;
  for (int r = 0; r < nranks; ++r) off[r + 1] = off[r] + base + (r < extra ? 1 : 0);
  return from_offsets(std::move(off));
}

Distribution Distribution::from_offsets(std::vector<std::int64_t> offsets) {
  require(offsets.size() >= 2, "distribution: offsets need at least two entries");
  require(offsets[0] == 0, "distribution: offsets must start at 0");
  for (std::size_t i = 1; i < offsets.size(); ++i)
    require(offsets[i] >= offsets[i - 1], "distribution: offsets must be non-decreasing");
  Distribution d;
  d.nranks_ = static_cast<int>(offsets.size()) - 1;
  d.n_ = offsets.back();
  d.offsets_ = std::move(offsets);
  return d;
}

Distribution Distribution::from_owners(std::vector<std::int32_t> owner, int nranks) {
  require(nranks >= 1, "distribution: need at least one rank");
  Distribution d;
  d.n_ = static_cast<std::int64_t>(owner.size());
  d.nranks_ = nranks;
  d.offsets_.assign(nranks + 1, 0);
  for (std::int64_t g = 0; g < d.n_; ++g) {
    std::int32_t o = owner[g];
    require(o >= 0 && o < nranks, [&] {
      return "distribution: owner of row " + std::to_string(g) + " is " + std::to_string(o) + ", outside [0, " +
             std::to_string(nranks) + ")";
    });
    ++d.offsets_[o + 1];
  }
  for (int r = 0; r < nranks; ++r) d.offsets_[r + 1] += d.offsets_[r];
  d.local_.resize(d.n_);
  d.members_.resize(d.n_);
  std::vector<std::int64_t> fill(d.offsets_.begin(), d.offsets_.end() - 1);
  for (std::int64_t g = 0; g < d.n_; ++g) {  // ascending g, so each rank's list is sorted
    std::int32_t o = owner[g];
    d.local_[g] = fill[o] - d.offsets_[o];
    d.members_[fill[o]++] = g;
  }
  d.owner_ = std::move(owner);
  return d;
}

int Distribution::owner(std::int64_t g) const {
  if (!owner_.empty()) return owner_[g];
  // Last rank whose block starts at or before g (empty blocks share offsets).
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), g);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

std::int64_t Distribution::local_index(std::int64_t g) const {
  if (!owner_.empty()) return local_[g];
  return g - offsets_[owner(g)];
}

std::int64_t Distribution::local_size(int rank) const {
  return offsets_[rank + 1] - offsets_[rank];
}

std::int64_t Distribution::global_index(int rank, std::int64_t i) const {
  return owner_.empty() ? offsets_[rank] + i : members_[offsets_[rank] + i];
}

std::vector<std::int64_t> Distribution::owned(int rank) const {
  std::vector<std::int64_t> out(local_size(rank));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = global_index(rank, static_cast<std::int64_t>(i));
  return out;
}

bool Distribution::same_share(const Distribution& other, int rank) const {
  if (n_ != other.n_ || nranks_ != other.nranks_) return false;
  const std::int64_t m = local_size(rank);
  if (m != other.local_size(rank)) return false;
  if (is_contiguous() && other.is_contiguous()) return offsets_[rank] == other.offsets_[rank];
  for (std::int64_t i = 0; i < m; ++i)
    if (global_index(rank, i) != other.global_index(rank, i)) return false;
  return true;
}

}  // namespace commsolve
