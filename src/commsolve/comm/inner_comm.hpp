// InnerComm: the one duplicate of a user communicator that every commsolve plan executor on
// it shares (PETSc's inner communicator, PetscCommDuplicate). A multigrid hierarchy of 20
// levels, each with several matrices and plans, would otherwise hold dozens of duplicates
// and run into the MPI library's limit on context ids. The duplicate hangs off the user
// communicator as an attribute and is freed with its last holder (or, if the user frees
// their communicator first, then).
//
// Each holder takes its own block of tags from a counter kept with the duplicate, so that
// exchanges of different objects on the same duplicate never match each other's messages.
// Holders must therefore be created collectively, in the same order on every rank (as every
// commsolve object already is).
#pragma once

#include <mpi.h>

namespace commsolve {

class InnerComm {
 public:
  // Collective on `user` the first time (MPI_Comm_dup); local afterwards. Reserves `ntags`
  // consecutive tags for this holder. The duplicate reports errors (MPI_ERRORS_RETURN).
  InnerComm(MPI_Comm user, int ntags);
  ~InnerComm();
  InnerComm(InnerComm&& o) noexcept : shared_(o.shared_), tag_base_(o.tag_base_) { o.shared_ = nullptr; }
  InnerComm(const InnerComm&) = delete;
  InnerComm& operator=(const InnerComm&) = delete;
  InnerComm& operator=(InnerComm&&) = delete;

  MPI_Comm get() const;
  int rank() const;
  int size() const;
  // First of this holder's tags; tag_base() + k for k < ntags are its own.
  int tag_base() const { return tag_base_; }

  // Live duplicates held by commsolve objects in this process (for tests).
  static int live_duplicates();

  struct Shared;  // the attribute: duplicate, holder count, next free tag

 private:
  Shared* shared_ = nullptr;
  int tag_base_ = 0;
};

}  // namespace commsolve
