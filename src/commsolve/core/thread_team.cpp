#include "commsolve/core/thread_team.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace commsolve {

ThreadTeam::ThreadTeam(int size) {
  if (size < 1) throw std::invalid_argument("threads must be at least 1, got " + std::to_string(size));
  workers_.reserve(static_cast<std::size_t>(size - 1));
  for (int id = 1; id < size; ++id) workers_.emplace_back([this, id] { work(id); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadTeam::work(int id) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr err;
    try {
      (*job)(id);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (err && !error_) error_ = err;
    if (--running_ == 0) done_.notify_one();
  }
}

void ThreadTeam::run(const std::function<void(int)>& f) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &f;
    error_ = nullptr;
    running_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr err;
  try {
    f(0);
  } catch (...) {
    err = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
  if (!err) err = error_;
  if (err) std::rethrow_exception(err);
}

int default_threads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env == nullptr) return 1;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  return end != env && (*end == '\0' || *end == ',') && v >= 1 && v <= 4096 ? static_cast<int>(v) : 1;
}

}  // namespace commsolve
