#include "commsolve/comm/inner_comm.hpp"

#include <string>

#include "commsolve/core/error.hpp"

namespace commsolve {

struct InnerComm::Shared {
  MPI_Comm inner = MPI_COMM_NULL;
  int holders = 0;
  int next_tag = 0;
  int tag_ub = 32767;
  bool user_alive = true;
};

namespace {

int keyval = MPI_KEYVAL_INVALID;
int live = 0;

void free_shared(InnerComm::Shared* s) {
  if (s->inner != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&s->inner);
  --live;
  delete s;
}

// Called when the user frees their communicator: holders still alive keep the duplicate
// until the last of them goes.
int on_user_free(MPI_Comm, int, void* attr, void*) {
  auto* s = static_cast<InnerComm::Shared*>(attr);
  s->user_alive = false;
  if (s->holders == 0) free_shared(s);
  return MPI_SUCCESS;
}

}  // namespace

InnerComm::InnerComm(MPI_Comm user, int ntags) {
  require(ntags >= 1, "InnerComm: at least one tag, got " + std::to_string(ntags));
  if (keyval == MPI_KEYVAL_INVALID)
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_user_free, &keyval, nullptr),
              "MPI_Comm_create_keyval");
  void* attr = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(user, keyval, &attr, &found), "MPI_Comm_get_attr");
  if (found) {
    shared_ = static_cast<Shared*>(attr);
  } else {
    auto* s = new Shared;
    int rc = MPI_Comm_dup(user, &s->inner);
    if (rc != MPI_SUCCESS) {
      delete s;
      check_mpi(rc, "MPI_Comm_dup");
    }
    ++live;
    check_mpi(MPI_Comm_set_errhandler(s->inner, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    void* ub = nullptr;
    int has_ub = 0;
    // MPI_TAG_UB is an attribute of MPI_COMM_WORLD (other communicators need not carry it).
    check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &has_ub), "MPI_Comm_get_attr(MPI_TAG_UB)");
    if (has_ub) s->tag_ub = *static_cast<int*>(ub);
    check_mpi(MPI_Comm_set_attr(user, keyval, s), "MPI_Comm_set_attr");
    shared_ = s;
  }
  require(static_cast<long long>(ntags) <= static_cast<long long>(shared_->tag_ub) + 1, "InnerComm: " + std::to_string(ntags) + " tags asked, MPI_TAG_UB is " +
                                            std::to_string(shared_->tag_ub));
  if (shared_->next_tag > shared_->tag_ub - ntags + 1) shared_->next_tag = 0;  // recycle (see the header)
  tag_base_ = shared_->next_tag;
  shared_->next_tag += ntags;
  ++shared_->holders;
}

InnerComm::~InnerComm() {
  if (shared_ == nullptr) return;
  // The duplicate stays with the user communicator (see the header) unless the user freed
  // that already and this was its last holder.
  if (--shared_->holders == 0 && !shared_->user_alive) free_shared(shared_);
}

MPI_Comm InnerComm::get() const { return shared_->inner; }

int InnerComm::rank() const {
  int r = 0;
  check_mpi(MPI_Comm_rank(get(), &r), "MPI_Comm_rank");
  return r;
}

int InnerComm::size() const {
  int s = 0;
  check_mpi(MPI_Comm_size(get(), &s), "MPI_Comm_size");
  return s;
}

int InnerComm::live_duplicates() { return live; }

}  // namespace commsolve
