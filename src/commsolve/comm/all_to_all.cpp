#include "commsolve/comm/all_to_all.hpp"

#include <limits>
#include <stdexcept>

#include "commsolve/core/error.hpp"

namespace commsolve {

void agree_on_error(MPI_Comm comm, const std::string& error, const std::string& what) {
  int mine = error.empty() ? 0 : 1, any = 0;
  check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (any != 0) throw std::invalid_argument(mine != 0 ? error : what + ": failed on another rank");
}

std::vector<int> int_counts(const std::vector<std::int64_t>& counts) {
  std::vector<int> out(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > std::numeric_limits<int>::max())
      throw std::runtime_error("all-to-all: more than 2^31 values for one rank in one call");
    out[r] = static_cast<int>(counts[r]);
  }
  return out;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size() + 1, 0);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const std::int64_t next = static_cast<std::int64_t>(d[r]) + counts[r];
    if (next > std::numeric_limits<int>::max())
      throw std::runtime_error("all-to-all: more than 2^31 values to exchange in one call");
    d[r + 1] = static_cast<int>(next);
  }
  return d;
}

namespace {
template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<std::int32_t>() { return MPI_INT32_T; }
template <>
MPI_Datatype mpi_type<std::int64_t>() { return MPI_INT64_T; }
}  // namespace

template <class T>
std::vector<T> all_to_all(MPI_Comm comm, const std::vector<T>& send, const std::vector<int>& send_count,
                          std::vector<int>* recv_count_out) {
  const int P = static_cast<int>(send_count.size());
  const std::vector<int> send_disp = displacements(send_count);
  std::vector<int> recv_count(P);
  check_mpi(MPI_Alltoall(send_count.data(), 1, MPI_INT, recv_count.data(), 1, MPI_INT, comm), "MPI_Alltoall");
  const std::vector<int> recv_disp = displacements(recv_count);
  std::vector<T> recv(static_cast<std::size_t>(recv_disp[P]));
  check_mpi(MPI_Alltoallv(send.data(), send_count.data(), send_disp.data(), mpi_type<T>(), recv.data(),
                          recv_count.data(), recv_disp.data(), mpi_type<T>(), comm),
            "MPI_Alltoallv");
  if (recv_count_out != nullptr) *recv_count_out = std::move(recv_count);
  return recv;
}

template std::vector<std::int32_t> all_to_all(MPI_Comm, const std::vector<std::int32_t>&, const std::vector<int>&,
                                              std::vector<int>*);
template std::vector<std::int64_t> all_to_all(MPI_Comm, const std::vector<std::int64_t>&, const std::vector<int>&,
                                              std::vector<int>*);

template <class T>
std::vector<T> all_gather(MPI_Comm comm, const std::vector<T>& mine, std::vector<int>* counts_out) {
  int P = 0;
  check_mpi(MPI_Comm_size(comm, &P), "MPI_Comm_size");
  if (mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::runtime_error("all-gather: more than 2^31 values from one rank");
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(P);
  check_mpi(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  const std::vector<int> disp = displacements(counts);
  std::vector<T> all(static_cast<std::size_t>(disp[P]));
  check_mpi(MPI_Allgatherv(mine.data(), count, mpi_type<T>(), all.data(), counts.data(), disp.data(), mpi_type<T>(),
                           comm),
            "MPI_Allgatherv");
  if (counts_out != nullptr) *counts_out = std::move(counts);
  return all;
}

template std::vector<std::int32_t> all_gather(MPI_Comm, const std::vector<std::int32_t>&, std::vector<int>*);
template std::vector<std::int64_t> all_gather(MPI_Comm, const std::vector<std::int64_t>&, std::vector<int>*);

}  // namespace commsolve
