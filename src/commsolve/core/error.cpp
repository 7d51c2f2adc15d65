#include "commsolve/core/error.hpp"

namespace commsolve {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  throw mpi_error(std::string(call) + " failed: " + std::string(msg, len));
}

bool mpi_alive() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return !finalized;
}

}  // namespace commsolve
