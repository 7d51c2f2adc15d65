// The 2.5D multiply and LU on MPI (dense/dense_plan.hpp says what moves, the machines in what
// order): one rank's part, with its local blocks and OpenBLAS for the local work, every
// collective carried by the chosen tree shape on the message engine (no sub-communicators,
// no barriers). Each run's messages go under a tag of their own.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <vector>

#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/dense/dense_plan.hpp"
#include "commsolve/trees/engine.hpp"
#include "commsolve/trees/tree_plan.hpp"

namespace commsolve {

struct DenseTimes {  // this rank's seconds
  double total = 0, compute = 0;
};

class Matmul25D {
 public:
  // Collective on comm (g.size() ranks).
  Matmul25D(MPI_Comm comm, const Topology& topo, const MatmulShape& s, const Grid25D& g, const TreeShape& shape);

  // Collective. Layer 0: this rank's blocks of A and B in (column-major, leading dimension
  // their local rows), its blocks of C out; other layers pass nulls.
  DenseTimes run(const double* a, const double* b, double* c);

  const MatmulLayout& layout() const { return layout_; }
  int x() const { return x_; }
  int y() const { return y_; }
  int z() const { return z_; }
  CommStats planned() const;  // steps: MatmulRole
  const CommStats& recorded() const { return engine_.recorded(); }
  double flops() const { return flops_; }  // this rank's, last run

 private:
  friend struct MatmulNumbers;  // the machine's backend (dense_executor.cpp)
  Grid25D grid_;
  MatmulLayout layout_;
  SummaPanels panels_;
  Topology topo_;
  int rank_, x_, y_, z_;
  DensePlan plan_;
  TreePlan tree_;
  MessageEngine engine_;
  std::vector<double> a_, b_, c_, out_, pack_, apan_, bpan_;  // a_, b_, c_: off layer 0 only
  const double *A_ = nullptr, *B_ = nullptr;                       // this rank's A and B (during run)
  double* C_ = nullptr;
  std::vector<std::vector<double>> held_, acc_;  // per slot: a panel's data (first slot), children's sums
  double flops_ = 0, compute_ = 0;
  int runs_ = 0;
};

class LU25D {
 public:
  // Collective on comm (g.size() ranks). n x n in blocks of nb; tournament: with tournament
  // pivoting (CALU's), else without pivoting.
  LU25D(MPI_Comm comm, const Topology& topo, std::int64_t n, std::int64_t nb, const Grid25D& g,
        const TreeShape& shape, std::int64_t piece = 1 << 16, bool tournament = false);

  // Collective. Layer 0: this rank's blocks of A in, of L and U out (L unit lower below the
  // diagonal, U on and above it, as LAPACK's getrf stores them, with the row interchanges of
  // ipiv()); other layers pass null. A zero or non-finite pivot throws std::runtime_error on
  // the rank that meets it (without pivoting: the matrix needs pivoting; with: it is singular).
  DenseTimes run(double* a);
  // With tournament pivoting, after run() (every rank): row i was interchanged with row
  // ipiv[i] (0-based, in order i = 0 .. n - 1), as LAPACK's getrf reports.
  const std::vector<std::int64_t>& ipiv() const { return ipiv_; }
  bool tournament() const { return tournament_; }

  const Cyclic1D& rows() const { return rows_; }
  const Cyclic1D& cols() const { return cols_; }
  int x() const { return x_; }
  int y() const { return y_; }
  int z() const { return z_; }
  CommStats planned() const;  // steps: LuRole
  const CommStats& recorded() const { return engine_.recorded(); }
  double flops() const { return flops_; }

 private:
  friend struct LuNumbers;
  friend struct TournamentNumbers;
  void swap_left_columns();  // layer 0, after a pivoted run: the interchanges of later steps in L
  std::int64_t n_, nb_;
  bool tournament_;
  Grid25D grid_;
  Cyclic1D rows_, cols_;
  Topology topo_;
  int rank_, x_, y_, z_;
  DensePlan plan_;
  TreePlan tree_;
  MessageEngine engine_;
  std::vector<double> a_, diag_, pack_, out_;  // a_: off layer 0 only
  std::int64_t diag_k_ = -1;                   // the step whose diagonal block diag_ holds
  double* A_ = nullptr;                        // this rank's share of the matrix (during run)
  std::vector<std::vector<double>> held_, acc_, packed_;  // per slot: data held, children's sums, own share
  // Tournament pivoting: the pivots, candidates per slot (own and children's), the pending
  // steps' copies of L, and each step's swap while it is under way.
  struct Swap {
    std::int64_t c0 = 0, ncols = 0;  // the local columns that move
    std::vector<std::pair<int, std::vector<std::int64_t>>> out, in;  // per process row: the positions sent to it
                                                                     // (received from it), ascending
    std::vector<std::pair<int, std::vector<double>>> got;            // rows received, per source rank
    std::map<std::int64_t, std::int64_t> moved;  // the step's interchanges (pivots.hpp's interchange_moves)
  };
  std::vector<std::int64_t> ipiv_;
  std::vector<std::vector<double>> cand_, lcopy_;
  std::vector<Swap> swaps_;
  std::vector<double> whole_;  // the factored panel of step whole_k_ (the tournament's only player's)
  std::vector<std::int64_t> whole_winners_;  // its pivot rows, in its order, and its first column without a pivot
  std::int64_t whole_k_ = -1, whole_zero_ = -1;
  double flops_ = 0, compute_ = 0;
  int runs_ = 0;
};

}  // namespace commsolve
