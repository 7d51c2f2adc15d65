// Variable-length records moved by a CommPlan: the substrate of distributed SpGEMM (issue 13;
// thesis Chapter 6), where whole sparse rows travel instead of one value per entry.
//
// Every entry of a plan's index space [owned | halo | work] carries a record of any number of
// units of `unit_bytes` bytes (for a sparse row: (column, value) pairs). The plans are those
// of the halo exchange, so the standard, node-aware 3-step and 2-step strategies apply
// unchanged. Each message carries first the record lengths of its entries (one int64 each),
// then their units back to back; the receiver learns the message's size from MPI_Mprobe, so
// no separate size exchange is needed. Forward sends the owners' records to every rank whose
// halo holds the entry; reverse sends each rank's halo records back to the owners, which get,
// per owned entry, the concatenation of every contribution (a scatter-append: the caller
// reduces them, e.g. sums partial rows). Statistics are planned in the virtual world from the
// record lengths (record_stats_virtual) and recorded from what went through MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "commsolve/comm/comm_plan.hpp"
#include "commsolve/comm/comm_stats.hpp"
#include "commsolve/comm/inner_comm.hpp"
#include "commsolve/topology/topology.hpp"

namespace commsolve {

// Records of consecutive entries, owned storage.
struct RecordSet {
  std::vector<std::int64_t> ptr{0};  // units of entry i: [ptr[i], ptr[i+1])
  std::vector<std::byte> data;       // ptr.back() * unit_bytes bytes
  std::int64_t size() const { return static_cast<std::int64_t>(ptr.size()) - 1; }
};

// Records of n consecutive entries, borrowed.
struct RecordsView {
  std::int64_t n = 0;
  const std::int64_t* ptr = nullptr;  // n + 1 offsets in units, ptr[0] == 0
  const std::byte* data = nullptr;
};

inline RecordsView view(const RecordSet& r) { return {r.size(), r.ptr.data(), r.data.data()}; }

// Message bytes: the int64 length header of each entry, then the units.
constexpr std::int64_t record_header_bytes = 8;

// Per owned entry of `plan` (n_owned of them): 1 if some step sends it, the only owned
// records a forward run reads (the others may be left empty).
std::vector<char> sent_entries(const CommPlan& plan);

// Runs one rank's plan on records. Construction is collective on `comm` (see InnerComm); every
// forward and reverse call is collective, in the same order on every rank.
class RecordExecutor {
 public:
  RecordExecutor(CommPlan plan, const Topology& topo, MPI_Comm comm, int unit_bytes);

  // owned: this rank's n_owned records. Returns the records of its n_halo halo entries, in
  // halo order.
  RecordSet forward(RecordsView owned);
  // halo: this rank's n_halo records (contributions to entries owned elsewhere). Returns, per
  // owned entry, the concatenated contributions of every rank, in an order fixed by the plan.
  RecordSet reverse(RecordsView halo);

  const CommPlan& plan() const { return plan_; }
  int unit_bytes() const { return unit_bytes_; }
  // Bytes and messages that went through MPI (sizes from MPI_Get_count) since construction.
  const CommStats& recorded_forward() const { return forward_stats_; }
  const CommStats& recorded_reverse() const { return reverse_stats_; }

 private:
  struct Chunk {
    const std::byte* data;
    std::int64_t units;
  };
  // Packs the records of `n` entries (entry_chunks(k, visit) calls visit(chunk) for each
  // chunk of the k-th) into `buf` and starts sending it to `peer`.
  template <class EntryChunks>
  void isend(std::vector<std::byte>& buf, std::int64_t n, const EntryChunks& entry_chunks, int peer, int tag,
             StepStats& stats, std::vector<MPI_Request>& reqs);
  // Checks a call's record count against the plan's entries and empties the inbox.
  void start_call(std::int64_t given, std::int64_t entries, const char* which);
  // The records of n entries (chunks visited as for isend), concatenated into one set.
  template <class EntryChunks>
  RecordSet collect(std::int64_t n, const EntryChunks& entry_chunks) const;
  // Receives `count` records from `peer` into a new inbox buffer; returns their chunks.
  std::vector<Chunk> recv(int peer, int tag, std::int64_t count, StepStats& stats);

  CommPlan plan_;
  Topology topo_;
  InnerComm comm_;
  int unit_bytes_;
  CommStats forward_stats_, reverse_stats_;
  std::vector<std::vector<std::byte>> inbox_;  // received messages of the current call
};

// Planned statistics of every rank moving records along its plan (virtual world). Forward:
// lengths[r] holds rank r's n_owned record lengths; reverse: its n_halo lengths. Local.
std::vector<CommStats> record_stats_virtual(const std::vector<CommPlan>& plans, const Topology& topo,
                                            const std::vector<std::vector<std::int64_t>>& lengths, int unit_bytes,
                                            bool reverse);

}  // namespace commsolve
