#include "commsolve/comm/record_executor.hpp"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "commsolve/core/error.hpp"

namespace commsolve {

std::vector<char> sent_entries(const CommPlan& plan) {
  std::vector<char> sent(plan.n_owned, 0);
  for (const PlanStep& st : plan.steps)
    for (std::int32_t i : st.send_idx)
      if (i < plan.n_owned) sent[i] = 1;
  return sent;
}

namespace {

void require_int_count(std::int64_t bytes) {
  require(bytes < (std::int64_t(1) << 31), "record exchange: a message of " + std::to_string(bytes) +
                                               " bytes exceeds MPI's int count");
}

}  // namespace

RecordExecutor::RecordExecutor(CommPlan plan, const Topology& topo, MPI_Comm comm, int unit_bytes)
    : plan_(std::move(plan)), topo_(topo), comm_(comm, executor_tags), unit_bytes_(unit_bytes) {
  require(unit_bytes_ >= 1, "record exchange: unit_bytes must be at least 1, got " + std::to_string(unit_bytes_));
  check_plan_fits(plan_, comm_.rank(), comm_.size(), topo_.size(), "record exchange");
  forward_stats_.steps.resize(plan_.steps.size());
  reverse_stats_.steps.resize(plan_.steps.size());
}

template <class EntryChunks>
void RecordExecutor::isend(std::vector<std::byte>& buf, std::int64_t n, const EntryChunks& entry_chunks, int peer,
                           int tag, StepStats& stats, std::vector<MPI_Request>& reqs) {
  std::vector<std::int64_t> lengths(n, 0);
  std::int64_t units = 0;
  for (std::int64_t k = 0; k < n; ++k)
    entry_chunks(k, [&](const Chunk& c) {
      lengths[k] += c.units;
      units += c.units;
    });
  const std::int64_t bytes = record_header_bytes * n + units * unit_bytes_;
  require_int_count(bytes);
  buf.resize(bytes);
  std::memcpy(buf.data(), lengths.data(), record_header_bytes * n);
  std::byte* out = buf.data() + record_header_bytes * n;
  for (std::int64_t k = 0; k < n; ++k)
    entry_chunks(k, [&](const Chunk& c) {
      const std::size_t b = static_cast<std::size_t>(c.units) * unit_bytes_;
      if (b) std::memcpy(out, c.data, b);
      out += b;
    });
  reqs.emplace_back();
  check_mpi(MPI_Isend(buf.data(), static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_.get(), &reqs.back()),
            "MPI_Isend");
  stats.add_send(locality(topo_, plan_.rank, peer), bytes);
}

template <class EntryChunks>
RecordSet RecordExecutor::collect(std::int64_t n, const EntryChunks& entry_chunks) const {
  RecordSet r;
  r.ptr.assign(n + 1, 0);
  for (std::int64_t k = 0; k < n; ++k) {
    r.ptr[k + 1] = r.ptr[k];
    entry_chunks(k, [&](const Chunk& c) { r.ptr[k + 1] += c.units; });
  }
  r.data.resize(r.ptr.back() * unit_bytes_);
  std::byte* out = r.data.data();
  for (std::int64_t k = 0; k < n; ++k)
    entry_chunks(k, [&](const Chunk& c) {
      if (c.units) std::memcpy(out, c.data, c.units * unit_bytes_);
      out += c.units * unit_bytes_;
    });
  return r;
}

std::vector<RecordExecutor::Chunk> RecordExecutor::recv(int peer, int tag, std::int64_t count, StepStats& stats) {
  MPI_Message msg;
  MPI_Status status;
  check_mpi(MPI_Mprobe(peer, tag, comm_.get(), &msg, &status), "MPI_Mprobe");
  int bytes = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
  std::vector<std::byte>& buf = inbox_.emplace_back(static_cast<std::size_t>(bytes));
  check_mpi(MPI_Mrecv(buf.data(), bytes, MPI_BYTE, &msg, &status), "MPI_Mrecv");
  stats.add_recv(locality(topo_, plan_.rank, status.MPI_SOURCE), bytes);
  // The header says how the units divide among the entries; a mismatch means the peers'
  // plans disagree (or units of another size were sent), never something to guess around.
  const std::string from = "record exchange: rank " + std::to_string(plan_.rank) + " got from rank " +
                           std::to_string(peer) + " a message of " + std::to_string(bytes) + " bytes";
  require(bytes >= record_header_bytes * count, from + ", shorter than its header of " + std::to_string(count) +
                                                    " record lengths");
  std::vector<std::int64_t> lengths(count);
  std::memcpy(lengths.data(), buf.data(), record_header_bytes * count);
  std::vector<Chunk> chunks(count);
  const std::byte* p = buf.data() + record_header_bytes * count;
  std::int64_t units = 0;
  for (std::int64_t k = 0; k < count; ++k) {
    require(lengths[k] >= 0,
            [&] { return from + " with a negative record length"; });
    chunks[k] = {p + units * unit_bytes_, lengths[k]};
    units += lengths[k];
  }
  require(record_header_bytes * count + units * unit_bytes_ == bytes,
          from + " whose record lengths add up to " + std::to_string(units) + " units of " +
              std::to_string(unit_bytes_) + " bytes");
  return chunks;
}

void RecordExecutor::start_call(std::int64_t given, std::int64_t entries, const char* which) {
  require(given == entries, "record exchange: " + std::to_string(given) + " " + which + " records given, the plan has " +
                                std::to_string(entries) + " " + which + " entries");
  inbox_.clear();
}

RecordSet RecordExecutor::forward(RecordsView owned) {
  start_call(owned.n, plan_.n_owned, "owned");
  const std::int64_t n_owned = plan_.n_owned;
  std::vector<Chunk> tail(plan_.n_halo + plan_.n_work, Chunk{nullptr, 0});
  auto chunk = [&](std::int64_t i) -> Chunk {
    if (i >= n_owned) return tail[i - n_owned];
    return {owned.data + owned.ptr[i] * unit_bytes_, owned.ptr[i + 1] - owned.ptr[i]};
  };
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep& st = plan_.steps[s];
    const int tag = comm_.tag_base() + static_cast<int>(s);
    std::vector<std::vector<std::byte>> out(st.send_peers.size());
    std::vector<MPI_Request> reqs;
    for (std::size_t i = 0; i < st.send_peers.size(); ++i) {
      const std::int32_t* idx = st.send_idx.data() + st.send_ptr[i];
      isend(out[i], st.send_count(i), [&](std::int64_t k, auto visit) { visit(chunk(idx[k])); }, st.send_peers[i],
            tag, forward_stats_.steps[s], reqs);
    }
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i) {
      std::vector<Chunk> got = recv(st.recv_peers[i], tag, st.recv_count[i], forward_stats_.steps[s]);
      std::copy(got.begin(), got.end(), tail.begin() + (st.recv_offset[i] - n_owned));
    }
    check_mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  for (std::size_t i = 0; i < plan_.copy_src.size(); ++i) tail[plan_.copy_dst[i] - n_owned] = chunk(plan_.copy_src[i]);

  RecordSet halo = collect(plan_.n_halo, [&](std::int64_t h, auto visit) { visit(tail[h]); });
  inbox_.clear();
  return halo;
}

RecordSet RecordExecutor::reverse(RecordsView halo) {
  start_call(halo.n, plan_.n_halo, "halo");
  const std::int64_t n_owned = plan_.n_owned;
  std::vector<std::vector<Chunk>> acc(plan_.space_size());  // contributions gathered per entry
  for (std::int64_t h = 0; h < halo.n; ++h)
    if (halo.ptr[h + 1] > halo.ptr[h])
      acc[n_owned + h].push_back({halo.data + halo.ptr[h] * unit_bytes_, halo.ptr[h + 1] - halo.ptr[h]});
  // Reverse of the final copies: what a copied halo entry holds goes back where it came from.
  for (std::size_t i = 0; i < plan_.copy_src.size(); ++i) {
    std::vector<Chunk>& from = acc[plan_.copy_dst[i]];
    std::vector<Chunk>& to = acc[plan_.copy_src[i]];
    to.insert(to.end(), from.begin(), from.end());
    from.clear();
  }
  for (std::size_t s = plan_.steps.size(); s-- > 0;) {
    const PlanStep& st = plan_.steps[s];
    const int tag = comm_.tag_base() + static_cast<int>(max_plan_steps + s);
    std::vector<std::vector<std::byte>> out(st.recv_peers.size());
    std::vector<MPI_Request> reqs;
    for (std::size_t i = 0; i < st.recv_peers.size(); ++i) {
      const std::int64_t first = st.recv_offset[i];
      isend(out[i], st.recv_count[i], [&](std::int64_t k, auto visit) {
              for (const Chunk& c : acc[first + k]) visit(c);
            }, st.recv_peers[i], tag, reverse_stats_.steps[s], reqs);
    }
    for (std::size_t i = 0; i < st.send_peers.size(); ++i) {
      std::vector<Chunk> got = recv(st.send_peers[i], tag, st.send_count(i), reverse_stats_.steps[s]);
      const std::int32_t* idx = st.send_idx.data() + st.send_ptr[i];
      for (std::size_t k = 0; k < got.size(); ++k)
        if (got[k].units) acc[idx[k]].push_back(got[k]);
    }
    check_mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  RecordSet owned = collect(n_owned, [&](std::int64_t i, auto visit) {
    for (const Chunk& c : acc[i]) visit(c);
  });
  inbox_.clear();
  return owned;
}

std::vector<CommStats> record_stats_virtual(const std::vector<CommPlan>& plans, const Topology& topo,
                                            const std::vector<std::vector<std::int64_t>>& lengths, int unit_bytes,
                                            bool reverse) {
  const int P = static_cast<int>(plans.size());
  require(topo.size() == P && static_cast<int>(lengths.size()) == P,
          "record statistics: " + std::to_string(P) + " plans, " + std::to_string(lengths.size()) +
              " length lists and a topology of " + std::to_string(topo.size()) + " ranks");
  std::size_t nsteps = 0;
  std::vector<std::vector<std::int64_t>> len(P);  // record length of every space entry
  std::vector<CommStats> stats(P);
  for (int r = 0; r < P; ++r) {
    const CommPlan& p = plans[r];
    require(p.rank == r && p.nranks == P, "record statistics: plans must be every rank's, in rank order");
    const std::int64_t first = reverse ? p.n_owned : 0, n = reverse ? p.n_halo : p.n_owned;
    require(static_cast<std::int64_t>(lengths[r].size()) == n,
            [&] {
              return "record statistics: rank " + std::to_string(r) + " has " + std::to_string(n) +
                     (reverse ? " halo" : " owned") + " entries, " + std::to_string(lengths[r].size()) +
                     " lengths given";
            });
    len[r].assign(p.space_size(), 0);
    std::copy(lengths[r].begin(), lengths[r].end(), len[r].begin() + first);
    if (reverse)
      for (std::size_t i = 0; i < p.copy_src.size(); ++i) {
        len[r][p.copy_src[i]] += len[r][p.copy_dst[i]];
        len[r][p.copy_dst[i]] = 0;
      }
    nsteps = std::max(nsteps, p.steps.size());
    stats[r].steps.resize(p.steps.size());
  }
  auto message_bytes = [&](const std::vector<std::int64_t>& v) {
    std::int64_t units = 0;
    for (std::int64_t x : v) units += x;
    return record_header_bytes * static_cast<std::int64_t>(v.size()) + units * unit_bytes;
  };
  for (std::size_t k = 0; k < nsteps; ++k) {
    const std::size_t s = reverse ? nsteps - 1 - k : k;
    std::map<std::pair<int, int>, std::vector<std::int64_t>> sent;  // (from, to) -> record lengths
    for (int r = 0; r < P; ++r) {
      if (s >= plans[r].steps.size()) continue;
      const PlanStep& st = plans[r].steps[s];
      const std::size_t nmsg = reverse ? st.recv_peers.size() : st.send_peers.size();
      for (std::size_t i = 0; i < nmsg; ++i) {
        std::vector<std::int64_t> v;
        int to;
        if (reverse) {
          to = st.recv_peers[i];
          v.assign(len[r].begin() + st.recv_offset[i], len[r].begin() + st.recv_offset[i] + st.recv_count[i]);
        } else {
          to = st.send_peers[i];
          for (std::int64_t j = st.send_ptr[i]; j < st.send_ptr[i + 1]; ++j) v.push_back(len[r][st.send_idx[j]]);
        }
        stats[r].steps[s].add_send(locality(topo, r, to), message_bytes(v));
        sent[{r, to}] = std::move(v);
      }
    }
    for (int r = 0; r < P; ++r) {
      if (s >= plans[r].steps.size()) continue;
      const PlanStep& st = plans[r].steps[s];
      const std::size_t nmsg = reverse ? st.send_peers.size() : st.recv_peers.size();
      for (std::size_t i = 0; i < nmsg; ++i) {
        const int from = reverse ? st.send_peers[i] : st.recv_peers[i];
        auto it = sent.find({from, r});
        require(it != sent.end(),
                [&] {
                  return "record statistics: rank " + std::to_string(r) + " expects a message from rank " +
                         std::to_string(from) + " in step " + std::to_string(s) + " that its plan lacks";
                });
        const std::vector<std::int64_t>& v = it->second;
        stats[r].steps[s].add_recv(locality(topo, r, from), message_bytes(v));
        if (reverse) {
          for (std::size_t j = 0; j < v.size(); ++j) len[r][st.send_idx[st.send_ptr[i] + j]] += v[j];
        } else {
          std::copy(v.begin(), v.end(), len[r].begin() + st.recv_offset[i]);
        }
      }
    }
  }
  return stats;
}

}  // namespace commsolve
