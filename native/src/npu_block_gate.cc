// npu-block-gate's native comparison engine (Node-API, node-addon-api).
//
// scan(sync, rowDot, rowA2, rowB2, sums, nonFinite, npu, npuDtype, ref, refDtype, cols, start, count, real, threads[, narrow])
// fills exactly the Accumulator arrays of src/metrics/accumulator.ts for NPU rows
// [start, start + count), the first `real` of which are compared against `ref`. npu/ref are the
// raw little-endian payload bytes (dtype 0 = f32, 1 = f16, 2 = bf16) of those rows; narrow: both
// tensors are 16-bit (kernel.inc's narrow mode: float32 sums, flushed into double). With
// sync = false it returns a Promise and runs on the addon's own scanning threads (Pool: started
// at load and kept); with sync = true the calling thread scans too. Either way the rows are
// split over up to `threads` threads (0: min(cores, 4)). Every argument is checked before any
// memory is touched: bad arguments throw a JS TypeError/RangeError, never crash.
// poolThreads() says how many scanning threads this process has started (for tests: never one per scan).
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif
#include <limits>
#include <memory>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>
#ifndef _WIN32
#include <unistd.h>
#endif

namespace {

constexpr int kAbi = 2;  // 2: the narrow mode (issue 30), a flag after threads
constexpr size_t kSliceBytes = 256 * 1024;  // file mode: bytes of a tensor read per slice
constexpr double kRelFloor = static_cast<double>(1e-6f);  // mlir-air: max(|ref|, 1e-6) in float32

float kF16[65536];

float halfToFloat(uint16_t h) {
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 0x1f) return mant ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
  return sign * std::ldexp(static_cast<float>(1024 + mant), exp - 25);
}

/** Fills kF16 on the first f16 scan (65,536 conversions would cost every process a millisecond or more at load). */
void ensureF16() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (uint32_t i = 0; i < 65536; i++) kF16[i] = halfToFloat(static_cast<uint16_t>(i));
  });
}

struct RowSums {
  double dot, a2, b2, absErr, absRef, sqErr, relErr;
};

struct NonFinite {
  double count[3] = {0, 0, 0};
  double row[3] = {-1, -1, -1};
  double col[3] = {-1, -1, -1};
  void note(int kind, size_t r, size_t c) {
    if (count[kind] == 0) {
      row[kind] = static_cast<double>(r);
      col[kind] = static_cast<double>(c);
    }
    count[kind] += 1;
  }
};

struct Job {
  double* rowDot;
  double* rowA2;
  double* rowB2;
  double* sums;
  double* nonFinite;
  const uint8_t* npu;
  const uint8_t* ref;
  int npuDtype, refDtype;
  bool narrow;  // both tensors 16-bit: float32 sums in 16 lanes (kernel.inc, narrow mode)
  size_t cols, start, count, real;
  double* scratch;  // 4 doubles per real row: absErr, absRef, sqErr, relErr
};

struct Chunk {
  size_t r0, r1;
  double maxAbs, maxRel;
  NonFinite nf;
  std::string error;  // file mode: why a read failed
};

/** File mode: the payloads are read here, by the scanning threads, straight from the files. */
struct FileSrc {
  int fdA, fdB;
  uint64_t offA, offB;  // byte offset of row 0's first element
};

typedef void (*ChunkFn)(const Job&, Chunk&);

#if defined(__x86_64__) || defined(_M_X64)
#define NBG_X86 1
#endif

namespace base {
constexpr int W = 2;  // doubles per SSE2 register
#define NBG_W 2
#include "kernel.inc"
#undef NBG_W
}  // namespace base

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NBG_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
constexpr int W = 4;  // doubles per AVX2 register
#define NBG_W 4
#include "kernel.inc"
#undef NBG_W
}  // namespace avx2
#pragma GCC pop_options
#define NBG_HAVE_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12's avx512fintrin.h seeds _mm512_max_pd / _mm512_cvtps_pd with _mm512_undefined_pd(),
// which -Wmaybe-uninitialized flags (GCC bug 105593); the results never read it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace avx512 {
constexpr int W = 8;  // doubles per AVX-512 register: the 4 lanes of two rows
#define NBG_W 8
#include "kernel.inc"
#undef NBG_W
}  // namespace avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

enum Isa { ISA_SSE2, ISA_AVX2, ISA_AVX512 };

/** The widest loop this CPU runs; NPU_BLOCK_GATE_ISA=sse2|avx2 caps it (to test the others here). */
Isa pickIsa() {
#ifdef NBG_HAVE_AVX2
  static const Isa isa = [] {
    const char* want = std::getenv("NPU_BLOCK_GATE_ISA");
    const Isa cap = !want ? ISA_AVX512 : std::strcmp(want, "sse2") == 0 ? ISA_SSE2 : std::strcmp(want, "avx2") == 0 ? ISA_AVX2 : ISA_AVX512;
    __builtin_cpu_init();
    if (cap >= ISA_AVX512 && __builtin_cpu_supports("avx512f")) return ISA_AVX512;
    if (cap >= ISA_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
    return ISA_SSE2;
  }();
  return isa;
#else
  return ISA_SSE2;
#endif
}

const ChunkFn (*pickTable(bool narrow))[3] {
#ifdef NBG_HAVE_AVX2
  switch (pickIsa()) {
    case ISA_AVX512: return narrow ? avx512::kTableNarrow : avx512::kTable;
    case ISA_AVX2: return narrow ? avx2::kTableNarrow : avx2::kTable;
    case ISA_SSE2: break;
  }
#endif
  return narrow ? base::kTableNarrow : base::kTable;
}

const char* isaName() {
  static const char* const names[] = {"sse2", "avx2", "avx512"};
  return names[pickIsa()];
}

// Slots of Accumulator.sums and .nonFinite (src/metrics/accumulator.ts).
enum { S_AB = 0, S_A2, S_B2, S_ABSERR, S_MAXABS, S_RELERR, S_MAXREL, S_ABSREF, S_SQERR };

#ifndef _WIN32
/** pread exactly `length` bytes, retrying short reads and EINTR; false (with `error`) otherwise. */
bool readFully(int fd, uint8_t* dst, size_t length, uint64_t offset, std::string& error) {
  while (length > 0) {
    const ssize_t n = ::pread(fd, dst, std::min<size_t>(length, 1u << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      error = std::string("read failed: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      error = "read failed: the file ended early (truncated while being judged?)";
      return false;
    }
    dst += n;
    length -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

/**
 * One chunk's rows in file mode: read a slice of rows of both files into this thread's own
 * small buffers (a few hundred KiB, so they stay in cache; kept between chunks, so no page is
 * faulted in afresh per call) and scan it, slice after slice.
 */
void fileChunk(const Job& job, const FileSrc& f, Chunk& ch, ChunkFn fn) {
  thread_local std::vector<uint8_t> bufA, bufB;
  const size_t itemA = job.npuDtype == 0 ? 4 : 2, itemB = job.refDtype == 0 ? 4 : 2;
  const size_t rowA = job.cols * itemA, rowB = job.cols * itemB;
  const size_t slice = std::max<size_t>(1, kSliceBytes / std::max(rowA, rowB));
  bufA.resize(slice * rowA);
  bufB.resize(slice * rowB);
  const size_t r0 = ch.r0, r1 = ch.r1;
  for (size_t r = r0; r < r1; r += slice) {
    const size_t n = std::min(slice, r1 - r);
    const size_t real = r < job.real ? std::min(n, job.real - r) : 0;
    if (!readFully(f.fdA, bufA.data(), n * rowA, f.offA + r * rowA, ch.error)) {
      ch.error = "npu: " + ch.error;
      break;
    }
    if (real && !readFully(f.fdB, bufB.data(), real * rowB, f.offB + r * rowB, ch.error)) {
      ch.error = "ref: " + ch.error;
      break;
    }
    Job sub = job;
    sub.npu = bufA.data();
    sub.ref = bufB.data();
    sub.start = job.start + r;
    sub.count = n;
    sub.real = real;
    sub.scratch = job.scratch + 4 * r;
    ch.r0 = 0;
    ch.r1 = n;
    fn(sub, ch);
  }
  ch.r0 = r0;
  ch.r1 = r1;
  // A tensor with huge rows grew the buffers: give that memory back rather than keep it for good.
  for (auto* b : {&bufA, &bufB}) {
    if (b->capacity() > 4 * kSliceBytes) std::vector<uint8_t>().swap(*b);
  }
}
#endif

/**
 * One scan, split by rows into chunks that threads claim one at a time. The results are
 * combined by chunk index afterwards (finishBatch), so which thread ran which chunk, and in
 * what order, never changes a bit.
 */
struct Batch {
  Job job;
  FileSrc files{};
  bool hasFiles = false;
  ChunkFn fn = nullptr;
  std::vector<Chunk> chunks;
  unsigned maxWorkers = 1;  // the job's thread count: at most this many threads on it at once
  // Under Pool::m_:
  unsigned next = 0;     // the next chunk to claim
  unsigned workers = 0;  // threads on it now
  unsigned left = 0;     // chunks not finished
  bool queued = false;
  /** Asynchronous scans: called by the thread that finishes the last chunk, with `owner`. */
  void (*done)(Batch*) = nullptr;
  void* owner = nullptr;
};

unsigned defaultThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return std::min(hw ? hw : 1, 4u);
}

/** Split the job into chunks for up to `threads` threads (0: min(cores, 4)). */
void planBatch(Batch& b, unsigned threads) {
  Job& job = b.job;
  if (job.npuDtype == 1 || job.refDtype == 1) ensureF16();  // before any scanning thread reads the table
  b.fn = pickTable(job.narrow)[job.npuDtype][job.refDtype];
  const size_t count = job.count;
  unsigned n = threads ? threads : defaultThreads();
  // At least ~256 Ki elements per thread, or waking a thread costs more than it saves.
  const size_t elems = count * job.cols;
  n = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>({n, count, elems / (256 * 1024) + 1})));
  // A few chunks per thread, so a thread the OS holds back (other work on the cores) leaves
  // its share to the others instead of making everyone wait; each chunk >= 256 Ki elements.
  const size_t k = std::max<size_t>(n, std::min<size_t>({size_t(4) * n, count, elems / (256 * 1024)}));
  b.maxWorkers = n;
  b.chunks.resize(k);
  for (size_t i = 0; i < k; i++) {
    b.chunks[i].r0 = count * i / k;
    b.chunks[i].r1 = count * (i + 1) / k;
    b.chunks[i].maxAbs = job.sums[S_MAXABS];
    b.chunks[i].maxRel = job.sums[S_MAXREL];
  }
  b.left = static_cast<unsigned>(k);
}

/** Scan chunk i; never throws (a failure is the chunk's error, reported by finishBatch). */
void runChunk(Batch& b, unsigned i) noexcept {
  Chunk& ch = b.chunks[i];
  try {
#ifndef _WIN32
    if (b.hasFiles) return fileChunk(b.job, b.files, ch, b.fn);
#endif
    b.fn(b.job, ch);
  } catch (const std::exception& e) {
    ch.error = e.what();
  } catch (...) {
    ch.error = "scan failed";
  }
}

/**
 * The scanning threads: started once (at addon load, then more only if a job asks for more
 * threads than ever before) and kept, parked on a condition variable between scans. Starting
 * a thread per scan cost up to milliseconds on a VM (bench/threads.ts), a wake costs
 * microseconds. Process-wide (every Node environment in the process shares it) and never
 * destroyed: the threads are detached, touch no JS state and hold nothing the process must
 * release, so a process that is done comparing exits with them parked (no join, no hang).
 */
class Pool {
 public:
  static Pool& get() {
    static Pool* const pool = new Pool();  // never deleted: see above
    return *pool;
  }

  /** Start threads until there are n (up to 64); returns how many there are (fewer when the OS refuses one). */
  unsigned reserve(unsigned n) {
    std::lock_guard<std::mutex> lock(m_);
    n = std::min(n, 64u);
    try {
      while (threads_ < n) {
        std::thread(&Pool::loop, this).detach();
        threads_++;
      }
    } catch (...) {
      // Run with the threads there are: a synchronous scan's caller does the rest, and an
      // asynchronous one runs on the caller when there is none (submit).
    }
    return threads_;
  }

  unsigned threads() {
    std::lock_guard<std::mutex> lock(m_);
    return threads_;
  }

  /** Hand an asynchronous batch to the threads; b->done runs when its last chunk is done. */
  void submit(Batch* b) {
    const bool none = reserve(std::min(b->maxWorkers, static_cast<unsigned>(b->chunks.size()))) == 0;
    std::unique_lock<std::mutex> lock(m_);
    if (none) {
      // No thread could be started: scan here rather than leave the promise pending forever.
      b->workers = 1;
      work(lock, *b);
      return;
    }
    enqueue(b);
    lock.unlock();
    wake(b->maxWorkers);
  }

  /** Run a batch on the calling thread, with up to maxWorkers - 1 pool threads helping. */
  void runHere(Batch& b) {
    std::unique_lock<std::mutex> lock(m_);
    b.workers = 1;  // this thread
    if (b.maxWorkers > 1 && b.chunks.size() > 1) {
      lock.unlock();
      reserve(b.maxWorkers - 1);
      lock.lock();
      enqueue(&b);
      lock.unlock();
      wake(b.maxWorkers - 1);
      lock.lock();
    }
    work(lock, b);
    idle_.wait(lock, [&b] { return b.left == 0; });
  }

 private:
  std::mutex m_;
  std::condition_variable work_, idle_;
  std::deque<Batch*> queue_;
  unsigned threads_ = 0;

  void enqueue(Batch* b) {
    b->queued = true;
    queue_.push_back(b);
  }
  void dequeue(Batch* b) {
    if (!b->queued) return;
    b->queued = false;
    queue_.erase(std::find(queue_.begin(), queue_.end(), b));
  }
  void wake(unsigned n) {
    if (n >= 2) work_.notify_all();
    else work_.notify_one();
  }

  /** Claim and run b's chunks until none is left; called and returns with `lock` held. */
  void work(std::unique_lock<std::mutex>& lock, Batch& b) {
    while (b.next < b.chunks.size()) {
      const unsigned i = b.next++;
      if (b.next == b.chunks.size()) dequeue(&b);  // nothing left to hand out
      lock.unlock();
      runChunk(b, i);
      lock.lock();
      if (--b.left == 0) {
        b.workers--;
        if (b.done) {
          // Nobody else can reach b now: every chunk is claimed and finished.
          lock.unlock();
          b.done(&b);
          lock.lock();
        } else {
          idle_.notify_all();
        }
        return;
      }
    }
    b.workers--;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      work_.wait(lock, [this] { return !queue_.empty(); });
      Batch* b = queue_.front();
      if (++b->workers >= b->maxWorkers) dequeue(b);  // enough threads on it
      work(lock, *b);
    }
  }
};

/** After the last chunk: fold the chunks into the job's sums in row order; the first chunk error, or "". */
std::string finishBatch(Batch& b) {
  for (const Chunk& ch : b.chunks) {
    if (!ch.error.empty()) return ch.error;
  }
  Job& job = b.job;
  // Combine in row order, exactly as the TypeScript kernel adds its row totals.
  double* s = job.sums;
  double ab = s[S_AB], a2 = s[S_A2], b2 = s[S_B2], absErr = s[S_ABSERR], relErr = s[S_RELERR];
  double absRef = s[S_ABSREF], sqErr = s[S_SQERR];
  for (size_t r = 0; r < job.real; r++) {
    const size_t row = job.start + r;
    const double* x = job.scratch + 4 * r;
    ab += job.rowDot[row];
    a2 += job.rowA2[row];
    b2 += job.rowB2[row];
    absErr += x[0];
    absRef += x[1];
    sqErr += x[2];
    relErr += x[3];
  }
  s[S_AB] = ab;
  s[S_A2] = a2;
  s[S_B2] = b2;
  s[S_ABSERR] = absErr;
  s[S_RELERR] = relErr;
  s[S_ABSREF] = absRef;
  s[S_SQERR] = sqErr;
  double* nf = job.nonFinite;
  for (const Chunk& ch : b.chunks) {
    s[S_MAXABS] = base::maxNan(s[S_MAXABS], ch.maxAbs);
    s[S_MAXREL] = base::maxNan(s[S_MAXREL], ch.maxRel);
    for (int k = 0; k < 3; k++) {
      if (ch.nf.count[k] == 0) continue;
      if (nf[3 * k] == 0) {
        nf[3 * k + 1] = ch.nf.row[k];
        nf[3 * k + 2] = ch.nf.col[k];
      }
      nf[3 * k] += ch.nf.count[k];
    }
  }
  return "";
}

// ---- argument checking ----

struct Bytes {
  const uint8_t* data;
  size_t length;
};

Bytes bytesOf(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray()) throw Napi::TypeError::New(env, std::string(what) + " must be a typed array");
  Napi::TypedArray ta = v.As<Napi::TypedArray>();
  const size_t len = ta.ByteLength();
  if (len == 0) return {nullptr, 0};
  Napi::ArrayBuffer buf = ta.ArrayBuffer();
  const uint8_t* base = static_cast<const uint8_t*>(buf.Data());
  if (!base) throw Napi::TypeError::New(env, std::string(what) + " is detached");
  return {base + ta.ByteOffset(), len};
}

double* f64Of(const Napi::Env& env, const Napi::Value& v, size_t minLength, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a Float64Array");
  }
  Napi::Float64Array a = v.As<Napi::Float64Array>();
  if (a.ElementLength() < minLength) {
    throw Napi::RangeError::New(env, std::string(what) + " is too short");
  }
  return a.ElementLength() ? a.Data() : nullptr;
}

size_t sizeOf(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 9007199254740991.0) || std::floor(d) != d) {
    throw Napi::RangeError::New(env, std::string(what) + " must be a non-negative integer");
  }
  return static_cast<size_t>(d);
}

int dtypeOf(const Napi::Env& env, const Napi::Value& v, const char* what) {
  const size_t d = sizeOf(env, v, what);
  if (d > 2) throw Napi::RangeError::New(env, std::string(what) + " must be 0 (f32), 1 (f16) or 2 (bf16)");
  return static_cast<int>(d);
}

size_t mulChecked(const Napi::Env& env, size_t a, size_t b) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Napi::RangeError::New(env, "block size overflows");
  return r;
}

constexpr size_t kItem[3] = {4, 2, 2};

/**
 * An asynchronous scan: its batch runs on the pool; the thread that finishes the last chunk
 * folds the results and hands this object back to the JS thread through a thread-safe
 * function, which settles the promise and deletes it. The references keep the typed arrays
 * the threads read and write alive until then; the thread-safe function keeps the event loop
 * alive while the scan runs, and nothing after.
 */
struct AsyncScan {
  Batch batch;
  std::vector<double> scratch;
  std::string error;
  Napi::Promise::Deferred deferred;
  std::vector<Napi::ObjectReference> refs;
  napi_threadsafe_function tsfn = nullptr;

  AsyncScan(Napi::Env env, const Job& job, const std::vector<Napi::Value>& keep) : deferred(Napi::Promise::Deferred::New(env)) {
    batch.job = job;
    for (auto& v : keep) refs.push_back(Napi::Persistent(v.As<Napi::Object>()));
    scratch.resize(4 * std::max<size_t>(job.real, 1));
    batch.job.scratch = scratch.data();
    batch.owner = this;
    batch.done = [](Batch* b) {
      auto* self = static_cast<AsyncScan*>(b->owner);
      self->error = finishBatch(*b);
      const napi_threadsafe_function t = self->tsfn;  // self may be gone once the call is queued
      if (napi_call_threadsafe_function(t, self, napi_tsfn_blocking) != napi_ok) {
        // The environment is being torn down: nobody awaits the promise. Its references cannot
        // be released from this thread, so this small object is left behind.
        return;
      }
      napi_release_threadsafe_function(t, napi_tsfn_release);
    };
  }

  /** On the JS thread (env null: the environment is being torn down). */
  static void settle(napi_env env, napi_value, void*, void* data) {
    auto* self = static_cast<AsyncScan*>(data);
    if (!env) {
      for (auto& r : self->refs) r.SuppressDestruct();
      delete self;
      return;
    }
    try {
      Napi::Env e(env);
      if (self->error.empty()) self->deferred.Resolve(e.Undefined());
      else self->deferred.Reject(Napi::Error::New(e, self->error).Value());
    } catch (...) {
      // a pending exception on a dying environment: nothing more to tell anyone
    }
    delete self;
  }

  /** Plan, start and return the promise; throws (on the JS thread) if the scan cannot start. */
  static Napi::Value Start(Napi::Env env, const Job& job, const std::vector<Napi::Value>& keep, unsigned threads, const FileSrc* files = nullptr) {
    std::unique_ptr<AsyncScan> self(new AsyncScan(env, job, keep));
    if (files) {
      self->batch.files = *files;
      self->batch.hasFiles = true;
    }
    planBatch(self->batch, threads);
    napi_value name;
    napi_create_string_utf8(env, "npu-block-gate:scan", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, nullptr, settle, &self->tsfn) != napi_ok) {
      throw Napi::Error::New(env, "could not start the scan (napi_create_threadsafe_function failed)");
    }
    Napi::Promise p = self->deferred.Promise();
    // From here the scan owns itself: settle() deletes it on this thread once it is done.
    Pool::get().submit(&self.release()->batch);
    return p;
  }
};

Napi::Value Scan(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 15) throw Napi::TypeError::New(env, "scan: expected 15 arguments");
  const bool sync = info[0].ToBoolean().Value();
  Job job{};
  job.narrow = info.Length() > 15 && info[15].ToBoolean().Value();
  job.cols = sizeOf(env, info[10], "cols");
  job.start = sizeOf(env, info[11], "start");
  job.count = sizeOf(env, info[12], "count");
  job.real = sizeOf(env, info[13], "real");
  const unsigned threads = static_cast<unsigned>(std::min<size_t>(sizeOf(env, info[14], "threads"), 64));
  if (job.cols == 0) throw Napi::RangeError::New(env, "cols must be at least 1");
  if (job.real > job.count) throw Napi::RangeError::New(env, "real rows exceed the block");
  const size_t rowEnd = job.real ? job.start + job.real : 0;  // padding-only blocks write no row
  job.rowDot = f64Of(env, info[1], rowEnd, "rowDot");
  job.rowA2 = f64Of(env, info[2], rowEnd, "rowA2");
  job.rowB2 = f64Of(env, info[3], rowEnd, "rowB2");
  job.sums = f64Of(env, info[4], 9, "sums");
  job.nonFinite = f64Of(env, info[5], 9, "nonFinite");
  job.npuDtype = dtypeOf(env, info[7], "npuDtype");
  job.refDtype = dtypeOf(env, info[9], "refDtype");
  const Bytes npu = bytesOf(env, info[6], "npu");
  const Bytes ref = bytesOf(env, info[8], "ref");
  if (npu.length < mulChecked(env, mulChecked(env, job.count, job.cols), kItem[job.npuDtype])) {
    throw Napi::RangeError::New(env, "npu block is shorter than count x cols elements");
  }
  if (ref.length < mulChecked(env, mulChecked(env, job.real, job.cols), kItem[job.refDtype])) {
    throw Napi::RangeError::New(env, "ref block is shorter than real x cols elements");
  }
  job.npu = npu.data;
  job.ref = ref.data;
  if (job.count == 0) {
    if (sync) return env.Undefined();
    auto done = Napi::Promise::Deferred::New(env);
    done.Resolve(env.Undefined());
    return done.Promise();
  }
  if (sync) {
    std::vector<double> scratch(4 * std::max<size_t>(job.real, 1));
    Batch b;
    b.job = job;
    b.job.scratch = scratch.data();
    planBatch(b, threads);
    Pool::get().runHere(b);
    const std::string error = finishBatch(b);
    if (!error.empty()) throw Napi::Error::New(env, error);
    return env.Undefined();
  }
  return AsyncScan::Start(env, job, {info[1], info[2], info[3], info[4], info[5], info[6], info[8]}, threads);
}

#ifndef _WIN32
// scanFiles(rowDot, rowA2, rowB2, sums, nonFinite, npuFd, npuOffset, npuDtype, refFd, refOffset,
//           refDtype, cols, rows, real, threads[, sync[, narrow]]) -> Promise (sync: undefined)
// Reads NPU rows [0, rows) and reference rows [0, real) itself (pread into small per-thread
// buffers) from two open files whose row-major little-endian payloads start at the given
// offsets. (Mapping the files instead cost more CPU here than the copy it saves: populating the
// page tables of a VM is not cheaper than copying the page cache.) On the scanning threads; with sync,
// on the calling thread (and up to threads - 1 pool threads), for a small pair that should not
// pay a hand-off. The caller keeps both descriptors open until the promise settles. A failed
// read rejects, or with sync throws, "npu: ..." or "ref: ...".
Napi::Value ScanFiles(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 15) throw Napi::TypeError::New(env, "scanFiles: expected 15 arguments");
  Job job{};
  FileSrc f{};
  const size_t fdA = sizeOf(env, info[5], "npuFd"), fdB = sizeOf(env, info[8], "refFd");
  if (fdA > INT32_MAX || fdB > INT32_MAX) throw Napi::RangeError::New(env, "bad file descriptor");
  f.fdA = static_cast<int>(fdA);
  f.fdB = static_cast<int>(fdB);
  f.offA = sizeOf(env, info[6], "npuOffset");
  f.offB = sizeOf(env, info[9], "refOffset");
  job.npuDtype = dtypeOf(env, info[7], "npuDtype");
  job.refDtype = dtypeOf(env, info[10], "refDtype");
  job.cols = sizeOf(env, info[11], "cols");
  job.count = sizeOf(env, info[12], "rows");
  job.real = sizeOf(env, info[13], "real");
  const unsigned threads = static_cast<unsigned>(std::min<size_t>(sizeOf(env, info[14], "threads"), 64));
  job.start = 0;
  if (job.cols == 0) throw Napi::RangeError::New(env, "cols must be at least 1");
  if (job.real > job.count) throw Napi::RangeError::New(env, "real rows exceed the NPU rows");
  // Byte ranges must fit in a file offset.
  const size_t bytesA = mulChecked(env, mulChecked(env, job.count, job.cols), kItem[job.npuDtype]);
  const size_t bytesB = mulChecked(env, mulChecked(env, job.real, job.cols), kItem[job.refDtype]);
  if (bytesA > (size_t(1) << 62) - f.offA || bytesB > (size_t(1) << 62) - f.offB) {
    throw Napi::RangeError::New(env, "tensor extends past any file offset");
  }
  job.rowDot = f64Of(env, info[0], job.real, "rowDot");
  job.rowA2 = f64Of(env, info[1], job.real, "rowA2");
  job.rowB2 = f64Of(env, info[2], job.real, "rowB2");
  job.sums = f64Of(env, info[3], 9, "sums");
  job.nonFinite = f64Of(env, info[4], 9, "nonFinite");
  const bool sync = info.Length() > 15 && info[15].ToBoolean().Value();
  job.narrow = info.Length() > 16 && info[16].ToBoolean().Value();
  if (job.count == 0) {
    if (sync) return env.Undefined();
    auto done = Napi::Promise::Deferred::New(env);
    done.Resolve(env.Undefined());
    return done.Promise();
  }
  if (sync) {
    // On the calling thread (with up to threads - 1 pool threads): a small pair pays no hand-off.
    std::vector<double> scratch(4 * std::max<size_t>(job.real, 1));
    Batch b;
    b.job = job;
    b.job.scratch = scratch.data();
    b.files = f;
    b.hasFiles = true;
    planBatch(b, threads);
    Pool::get().runHere(b);
    const std::string error = finishBatch(b);
    if (!error.empty()) throw Napi::Error::New(env, error);
    return env.Undefined();
  }
  return AsyncScan::Start(env, job, {info[0], info[1], info[2], info[3], info[4]}, threads, &f);
}
#endif

/**
 * refRows(bytes, dtype, cols, count, finiteOnly, out): the reference check of src/gates/reference.ts
 * (faultInBits) over one block of `count` rows of raw little-endian bits, in C (the TypeScript loop
 * is its twin: the same verdict, row by row; issue 30: it ran on every judge before the compare).
 * Stops at the first fault in row order. out (a Float64Array of 6): [kind, row, col, what,
 * zeroRows, firstZero]: kind 0 none, 1 a non-finite value at (row, col), what 0 NaN / 1 +Inf /
 * 2 -Inf; kind 2 the row is constant (not zero); zeroRows / firstZero count the all-zero rows
 * before the stop (firstZero -1: none). Rows are the block's own (0-based).
 */
template <class T>
void refRowsOf(const T* v, size_t cols, size_t count, bool finiteOnly, uint32_t exp, uint32_t mant, uint32_t sign, double* out) {
  const uint32_t mag = ~sign;
  out[0] = 0;
  out[4] = 0;
  out[5] = -1;
  for (size_t r = 0; r < count; r++) {
    const T* x = v + r * cols;
    const uint32_t first = x[0];
    const bool firstZero = (first & mag) == 0;
    // Blocks of 256 columns without a branch per element (the compiler vectorizes them); a block
    // holding a non-finite value is walked again to find the first one.
    uint32_t notConstant = 0, notZero = 0;
    for (size_t c0 = 0; c0 < cols; c0 += 256) {
      const size_t c1 = std::min(cols, c0 + 256);
      uint32_t bad = 0;
      for (size_t c = c0; c < c1; c++) {
        const uint32_t b = x[c];
        const uint32_t isZero = (b & mag) == 0;
        bad |= (b & exp) == exp;
        notConstant |= (b != first) & !(isZero & firstZero);
        notZero |= !isZero;
      }
      if (bad) {
        for (size_t c = c0; c < c1; c++) {
          const uint32_t b = x[c];
          if ((b & exp) != exp) continue;
          out[0] = 1;
          out[1] = static_cast<double>(r);
          out[2] = static_cast<double>(c);
          out[3] = (b & mant) ? 0 : (b & sign) ? 2 : 1;
          return;
        }
      }
    }
    const bool constant = !notConstant, zero = !notZero;
    if (finiteOnly) continue;
    if (zero) {
      if (out[4] == 0) out[5] = static_cast<double>(r);
      out[4] += 1;
    } else if (constant && cols > 1) {
      out[0] = 2;
      out[1] = static_cast<double>(r);
      return;
    }
  }
}

Napi::Value RefRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6) throw Napi::TypeError::New(env, "refRows: expected 6 arguments");
  const int dtype = dtypeOf(env, info[1], "dtype");
  const size_t cols = sizeOf(env, info[2], "cols");
  const size_t count = sizeOf(env, info[3], "count");
  const bool finiteOnly = info[4].ToBoolean().Value();
  double* out = f64Of(env, info[5], 6, "out");
  if (cols == 0) throw Napi::RangeError::New(env, "cols must be at least 1");
  const Bytes bytes = bytesOf(env, info[0], "bytes");
  const size_t need = mulChecked(env, mulChecked(env, count, cols), kItem[dtype]);
  if (bytes.length < need) throw Napi::RangeError::New(env, "bytes is shorter than count x cols elements");
  if (count == 0) {
    out[0] = 0;
    out[4] = 0;
    out[5] = -1;
    return env.Undefined();
  }
  if (reinterpret_cast<uintptr_t>(bytes.data) % kItem[dtype]) throw Napi::RangeError::New(env, "bytes is not aligned to its element size");
  if (dtype == 0) refRowsOf(reinterpret_cast<const uint32_t*>(bytes.data), cols, count, finiteOnly, 0x7f800000u, 0x007fffffu, 0x80000000u, out);
  else if (dtype == 1) refRowsOf(reinterpret_cast<const uint16_t*>(bytes.data), cols, count, finiteOnly, 0x7c00u, 0x03ffu, 0x8000u, out);
  else refRowsOf(reinterpret_cast<const uint16_t*>(bytes.data), cols, count, finiteOnly, 0x7f80u, 0x007fu, 0x8000u, out);
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Start the scanning threads now, while the caller still opens files and parses headers: the
  // first scan then finds them running (a new thread can take milliseconds to be scheduled).
  Pool::get().reserve(defaultThreads());
  exports.Set("abi", Napi::Number::New(env, kAbi));
  exports.Set("isa", Napi::String::New(env, isaName()));
  exports.Set("hardwareThreads", Napi::Number::New(env, std::thread::hardware_concurrency()));
  exports.Set("scan", Napi::Function::New(env, Scan, "scan"));
  exports.Set("refRows", Napi::Function::New(env, RefRows, "refRows"));
  exports.Set("poolThreads", Napi::Function::New(env, [](const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), Pool::get().threads()); }, "poolThreads"));
#ifndef _WIN32
  exports.Set("scanFiles", Napi::Function::New(env, ScanFiles, "scanFiles"));
#endif
  return exports;
}

}  // namespace

NODE_API_MODULE(npu_block_gate, Init)
