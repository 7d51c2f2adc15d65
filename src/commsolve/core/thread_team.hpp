// A fixed team of threads kept from call to call: run(f) calls f(0 .. size - 1) once each,
// f(0) on the calling thread, and returns when all have returned (rethrowing the first
// exception thrown in any). Not reentrant: one run at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace commsolve {

class ThreadTeam {
 public:
  explicit ThreadTeam(int size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  void run(const std::function<void(int)>& f);

 private:
  void work(int id);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// A waiting thread's pause: a few spins, then the core given away (threads may outnumber
// cores). `spins` counts the calls of one wait.
inline void back_off(int& spins) {
  if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  std::this_thread::yield();
}

// A lock held for a few additions: the threads add their block's values under it.
class SpinLock {
 public:
  void lock() {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire);)
      while (flag_.load(std::memory_order_relaxed)) back_off(spins);
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// The threads a solve uses when none are asked for: OMP_NUM_THREADS if it starts with a
// positive whole number ("4" or "4,2"), else 1.
int default_threads();

}  // namespace commsolve
