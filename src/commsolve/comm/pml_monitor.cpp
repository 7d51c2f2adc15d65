#include "comm/pml_monitor.hpp"

#include <stdexcept>

namespace commsolve {

namespace {

const char* const count_name = "pml_monitoring_messages_count";
const char* const size_name = "pml_monitoring_messages_size";

void init_tools() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
    throw std::runtime_error("pml monitoring: MPI_T_init_thread failed");
}

bool find(const char* name, int* index) {
  return MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_SIZE, index) == MPI_SUCCESS;
}

}  // namespace

bool PmlMonitor::available() {
  init_tools();
  int index = 0;
  const bool ok = find(count_name, &index) && find(size_name, &index);
  MPI_T_finalize();
  return ok;
}

PmlMonitor::PmlMonitor(MPI_Comm comm) {
  init_tools();
  int ci = 0, si = 0;
  if (!find(count_name, &ci) || !find(size_name, &si)) {
    MPI_T_finalize();
    throw std::runtime_error(
        "Open MPI's pml_monitoring counters are not available: run with --mca pml_monitoring_enable 2 "
        "(or OMPI_MCA_pml_monitoring_enable=2)");
  }
  MPI_Comm c = comm;
  int n1 = 0, n2 = 0;
  if (MPI_T_pvar_session_create(&session_) != MPI_SUCCESS ||
      MPI_T_pvar_handle_alloc(session_, ci, &c, &count_, &n1) != MPI_SUCCESS ||
      MPI_T_pvar_handle_alloc(session_, si, &c, &size_, &n2) != MPI_SUCCESS || n1 != n2 ||
      MPI_T_pvar_start(session_, count_) != MPI_SUCCESS || MPI_T_pvar_start(session_, size_) != MPI_SUCCESS)
    throw std::runtime_error("pml monitoring: could not start the MPI_T counters");
  peers_ = n1;
  count0_ = read(count_);  // counters may run from MPI_Init on: count from here
  size0_ = read(size_);
}

PmlMonitor::~PmlMonitor() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (count_ != MPI_T_PVAR_HANDLE_NULL) MPI_T_pvar_handle_free(session_, &count_);
  if (size_ != MPI_T_PVAR_HANDLE_NULL) MPI_T_pvar_handle_free(session_, &size_);
  if (session_ != MPI_T_PVAR_SESSION_NULL) MPI_T_pvar_session_free(&session_);
  MPI_T_finalize();
}

std::vector<std::uint64_t> PmlMonitor::read(MPI_T_pvar_handle h) const {
  std::vector<std::size_t> raw(static_cast<std::size_t>(peers_));
  if (MPI_T_pvar_read(session_, h, raw.data()) != MPI_SUCCESS)
    throw std::runtime_error("pml monitoring: MPI_T_pvar_read failed");
  std::vector<std::uint64_t> out(raw.begin(), raw.end());
  const std::vector<std::uint64_t>& base = h == count_ ? count0_ : size0_;
  if (!base.empty())
    for (std::size_t i = 0; i < out.size(); ++i) out[i] -= base[i];
  return out;
}

}  // namespace commsolve
