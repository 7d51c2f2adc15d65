// One irregular all-to-all of integers (counts first, then the values): how the direct
// solver's setup moves graph rows and symbolic pieces between ranks. For std::int32_t and
// std::int64_t values.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace commsolve {

// Collective: throws std::invalid_argument on every rank when any rank's `error` is not
// empty (its own message where it has one, else that `what` failed on another rank), so that
// no rank waits in a later collective for one that gave up.
void agree_on_error(MPI_Comm comm, const std::string& error, const std::string& what);

// `counts` (values per rank, counted in 64 bits) as MPI's int counts; a runtime_error past 2^31.
std::vector<int> int_counts(const std::vector<std::int64_t>& counts);

// Exclusive prefix sums of `counts` (one more entry than ranks); a runtime_error past 2^31
// values, what MPI's int displacements hold.
std::vector<int> displacements(const std::vector<int>& counts);

// `send` holds `send_count[r]` values for rank r, in rank order; returns what this rank
// receives, in rank order (with `recv_count`, if not null, the number from each rank).
template <class T>
std::vector<T> all_to_all(MPI_Comm comm, const std::vector<T>& send, const std::vector<int>& send_count,
                          std::vector<int>* recv_count = nullptr);

// Every rank's `mine`, concatenated in rank order, on every rank (with `counts`, if not
// null, the number from each rank).
template <class T>
std::vector<T> all_gather(MPI_Comm comm, const std::vector<T>& mine, std::vector<int>* counts = nullptr);

}  // namespace commsolve
