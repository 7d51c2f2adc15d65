// Open MPI's own count of what this process sent through its point-to-point layer, per
// destination: the pml_monitoring component's MPI_T performance variables
// (pml_monitoring_messages_count, pml_monitoring_messages_size). The referee of the
// statistics commsolve records itself: independent of our code, it sees every message the
// PML carries. Available when the job runs with `--mca pml_monitoring_enable 2` (1 also
// counts the messages MPI's own collectives send); with 2, collectives are left out.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace commsolve {

class PmlMonitor {
 public:
  // Whether this MPI offers the variables (monitoring enabled for this job). Local.
  static bool available();
  // Starts counting (handles bound to `comm`, whose size sets the number of peers). Local.
  // Throws std::runtime_error naming the missing variable when monitoring is off.
  explicit PmlMonitor(MPI_Comm comm);
  ~PmlMonitor();
  PmlMonitor(const PmlMonitor&) = delete;
  PmlMonitor& operator=(const PmlMonitor&) = delete;

  // Messages and bytes sent to each rank of the communicator since construction.
  std::vector<std::uint64_t> messages() const { return read(count_); }
  std::vector<std::uint64_t> bytes() const { return read(size_); }

 private:
  std::vector<std::uint64_t> read(MPI_T_pvar_handle h) const;
  MPI_T_pvar_session session_ = MPI_T_PVAR_SESSION_NULL;
  MPI_T_pvar_handle count_ = MPI_T_PVAR_HANDLE_NULL, size_ = MPI_T_PVAR_HANDLE_NULL;
  int peers_ = 0;
  std::vector<std::uint64_t> count0_, size0_;  // values at the start
};

}  // namespace commsolve
