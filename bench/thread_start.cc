// bench/threads.ts compiles and runs this: what starting a thread costs on this machine, against
// waking one that is already started and parked on a condition variable (what the native
// engine's scanning threads cost per scan since they are kept; native/src/npu_block_gate.cc Pool).
// Prints one line per measure: median, min, p90 and max in microseconds over the samples.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;
static double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

static void print(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-44s median %8.1f us  min %7.1f  p90 %8.1f  max %8.1f  (%zu samples)\n", what, v[v.size() / 2], v.front(), v[v.size() * 9 / 10], v.back(), v.size());
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  const int idleMs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<double> running, joined;
  for (int i = 0; i < n; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(idleMs));  // as between two compares
    std::atomic<Clock::rep> first{0};
    const Clock::time_point t0 = Clock::now();
    std::thread t([&] { first = (Clock::now() - t0).count(); });
    t.join();
    joined.push_back(us(Clock::now() - t0));
    running.push_back(us(Clock::duration(first.load())));
  }
  std::mutex m;
  std::condition_variable cv;
  bool go = false, quit = false;
  Clock::time_point woken;
  std::atomic<bool> done{false};
  std::thread parked([&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return go || quit; });
      if (quit) return;
      go = false;
      woken = Clock::now();
      done = true;
    }
  });
  std::vector<double> wake;
  for (int i = 0; i < n; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(idleMs));
    done = false;
    Clock::time_point t0;
    {
      std::lock_guard<std::mutex> g(m);
      go = true;
      t0 = Clock::now();
    }
    cv.notify_one();
    while (!done) std::this_thread::yield();
    std::lock_guard<std::mutex> g(m);
    wake.push_back(us(woken - t0));
  }
  {
    std::lock_guard<std::mutex> g(m);
    quit = true;
  }
  cv.notify_one();
  parked.join();
  char label[96];
  std::snprintf(label, sizeof label, "new thread: create -> running (%d ms idle)", idleMs);
  print(label, running);
  std::snprintf(label, sizeof label, "new thread: create -> joined (%d ms idle)", idleMs);
  print(label, joined);
  std::snprintf(label, sizeof label, "parked thread: notify -> running (%d ms idle)", idleMs);
  print(label, wake);
}
