// npu-block-gate's native comparison engine (Node-API, node-addon-api).
//
// scan(sync, rowDot, rowA2, rowB2, sums, nonFinite, npu, npuDtype, ref, refDtype, cols, start, count, real, threads)
// fills exactly the Accumulator arrays of src/metrics/accumulator.ts for NPU rows
// [start, start + count), the first `real` of which are compared against `ref`. npu/ref are the
// raw little-endian payload bytes (dtype 0 = f32, 1 = f16, 2 = bf16) of those rows. With
// sync = false it returns a Promise and runs on the libuv thread pool; either way the rows are
// split over up to 4 threads. Every argument is checked before any memory is touched: bad
// arguments throw a JS TypeError/RangeError, never crash.
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
#include <mutex>
#include <thread>
#include <vector>
#ifndef _WIN32
#include <unistd.h>
#endif

namespace {

constexpr int kAbi = 1;
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
  size_t cols, start, count, real;
  unsigned threads;
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
#pragma GCC target("avx2")
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
    if (cap >= ISA_AVX2 && __builtin_cpu_supports("avx2")) return ISA_AVX2;
    return ISA_SSE2;
  }();
  return isa;
#else
  return ISA_SSE2;
#endif
}

const ChunkFn (*pickTable())[3] {
#ifdef NBG_HAVE_AVX2
  switch (pickIsa()) {
    case ISA_AVX512: return avx512::kTable;
    case ISA_AVX2: return avx2::kTable;
    case ISA_SSE2: break;
  }
#endif
  return base::kTable;
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
 * One thread's rows in file mode: read a slice of rows of both files into this thread's own
 * small buffers (a few hundred KiB, so they stay in cache) and scan it, slice after slice.
 */
void fileChunk(const Job& job, const FileSrc& f, Chunk& ch, ChunkFn fn) {
  const size_t itemA = job.npuDtype == 0 ? 4 : 2, itemB = job.refDtype == 0 ? 4 : 2;
  const size_t rowA = job.cols * itemA, rowB = job.cols * itemB;
  const size_t slice = std::max<size_t>(1, (256 * 1024) / std::max(rowA, rowB));
  std::vector<uint8_t> bufA(slice * rowA), bufB(slice * rowB);
  const size_t r0 = ch.r0, r1 = ch.r1;
  for (size_t r = r0; r < r1; r += slice) {
    const size_t n = std::min(slice, r1 - r);
    const size_t real = r < job.real ? std::min(n, job.real - r) : 0;
    if (!readFully(f.fdA, bufA.data(), n * rowA, f.offA + r * rowA, ch.error)) {
      ch.error = "npu: " + ch.error;
      return;
    }
    if (real && !readFully(f.fdB, bufB.data(), real * rowB, f.offB + r * rowB, ch.error)) {
      ch.error = "ref: " + ch.error;
      return;
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
}
#endif

/** Scan the block (or, with `files`, read and scan the whole tensors); throws on a read error. */
void runJob(Job& job, const FileSrc* files = nullptr) {
  const size_t count = job.count;
  const ChunkFn fn = pickTable()[job.npuDtype][job.refDtype];
  unsigned hw = std::thread::hardware_concurrency();
  if (hw == 0) hw = 1;
  unsigned n = job.threads ? job.threads : std::min(hw, 4u);
  // At least ~256 Ki elements per thread, or the thread start costs more than it saves.
  const size_t elems = count * job.cols;
  n = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>({n, count, elems / (256 * 1024) + 1})));
  std::vector<Chunk> chunks(n);
  for (unsigned i = 0; i < n; i++) {
    chunks[i].r0 = count * i / n;
    chunks[i].r1 = count * (i + 1) / n;
    chunks[i].maxAbs = job.sums[S_MAXABS];
    chunks[i].maxRel = job.sums[S_MAXREL];
  }
  auto work = [&job, files, fn](Chunk& ch) {
#ifndef _WIN32
    if (files) return fileChunk(job, *files, ch, fn);
#endif
    fn(job, ch);
  };
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  for (unsigned i = 1; i < n; i++) pool.emplace_back(work, std::ref(chunks[i]));
  work(chunks[0]);
  for (auto& t : pool) t.join();
  for (const Chunk& ch : chunks) {
    if (!ch.error.empty()) throw std::runtime_error(ch.error);
  }

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
  for (const Chunk& ch : chunks) {
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

class ScanWorker : public Napi::AsyncWorker {
 public:
  ScanWorker(Napi::Env env, const Job& job, std::vector<Napi::Value> keep, const FileSrc* files = nullptr)
      : Napi::AsyncWorker(env, "npu-block-gate:scan"), job_(job), deferred_(Napi::Promise::Deferred::New(env)) {
    if (files) {
      files_ = *files;
      hasFiles_ = true;
    }
    for (auto& v : keep) refs_.push_back(Napi::Persistent(v.As<Napi::Object>()));
    scratch_.resize(4 * std::max<size_t>(job_.real, 1));
    job_.scratch = scratch_.data();
  }
  Napi::Promise Promise() const { return deferred_.Promise(); }
  void Execute() override {
    try {
      runJob(job_, hasFiles_ ? &files_ : nullptr);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Job job_;
  Napi::Promise::Deferred deferred_;
  std::vector<Napi::ObjectReference> refs_;
  std::vector<double> scratch_;
  FileSrc files_{};
  bool hasFiles_ = false;
};

Napi::Value Scan(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 15) throw Napi::TypeError::New(env, "scan: expected 15 arguments");
  const bool sync = info[0].ToBoolean().Value();
  Job job{};
  job.cols = sizeOf(env, info[10], "cols");
  job.start = sizeOf(env, info[11], "start");
  job.count = sizeOf(env, info[12], "count");
  job.real = sizeOf(env, info[13], "real");
  job.threads = static_cast<unsigned>(std::min<size_t>(sizeOf(env, info[14], "threads"), 64));
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
    job.scratch = scratch.data();
    runJob(job);
    return env.Undefined();
  }
  auto* w = new ScanWorker(env, job, {info[1], info[2], info[3], info[4], info[5], info[6], info[8]});
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

#ifndef _WIN32
// scanFiles(rowDot, rowA2, rowB2, sums, nonFinite, npuFd, npuOffset, npuDtype, refFd, refOffset,
//           refDtype, cols, rows, real, threads) -> Promise
// Reads NPU rows [0, rows) and reference rows [0, real) itself (pread on the thread pool, by the
// scanning threads) from two open files whose row-major little-endian payloads start at the
// given offsets. The caller keeps both descriptors open until the promise settles. A failed
// read rejects with "npu: ..." or "ref: ..." saying which file.
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
  job.threads = static_cast<unsigned>(std::min<size_t>(sizeOf(env, info[14], "threads"), 64));
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
  auto* w = new ScanWorker(env, job, {info[0], info[1], info[2], info[3], info[4]}, &f);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}
#endif

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  static std::once_flag once;
  std::call_once(once, [] {
    for (uint32_t i = 0; i < 65536; i++) kF16[i] = halfToFloat(static_cast<uint16_t>(i));
  });
  exports.Set("abi", Napi::Number::New(env, kAbi));
  exports.Set("isa", Napi::String::New(env, isaName()));
  exports.Set("hardwareThreads", Napi::Number::New(env, std::thread::hardware_concurrency()));
  exports.Set("scan", Napi::Function::New(env, Scan, "scan"));
#ifndef _WIN32
  exports.Set("scanFiles", Napi::Function::New(env, ScanFiles, "scanFiles"));
#endif
  return exports;
}

}  // namespace

NODE_API_MODULE(npu_block_gate, Init)
