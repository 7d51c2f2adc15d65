// Error types and the MPI return-code check used throughout the core.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace commsolve {

// An MPI call returned an error code (communicators used by commsolve are set to
// MPI_ERRORS_RETURN so that failures surface as exceptions instead of silent aborts).
struct mpi_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws mpi_error naming the failed call and MPI's own error string.
void check_mpi(int code, const char* call);

// False once MPI_Finalize has run (destructors must not call MPI then).
bool mpi_alive();

// Throws std::invalid_argument with `what` when `ok` is false.
inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// The same with the message built only on failure, by calling `what()`: for checks inside
// loops over entries, rows, supernodes or participants, where a message assembled on every
// pass (std::to_string and concatenations) costs more than the work it checks.
template <class Message>
  requires std::is_invocable_r_v<std::string, Message>
inline void require(bool ok, Message&& what) {
  if (!ok) throw std::invalid_argument(what());
}

}  // namespace commsolve
