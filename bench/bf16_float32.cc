// bench/bf16.ts compiles and runs this (AVX-512F + FMA only): a PROPOSAL, not what the engine
// does. On bf16 tensors (.npy <u2, 128-byte header), one thread, each file read in 64-row slices
// with pread into small buffers as the engine's scanning threads do, three passes per layer:
//   read   pread only: the bar
//   f64    the engine's numbers, as native/src/kernel.inc computes them: every element widened to
//          double, 7 sums and 2 maxima per row in double (two rows per vector, 4 lanes a row)
//   f32    the proposal: 16 float32 lanes per row, flushed into double every 8 steps (blocks of
//          128 columns), the maxima in float32
// and prints the time of each (minimum over the runs) and, against f64 over every layer, the
// largest difference of each figure the report shows (whole and per-position cosine, mean and
// max abs, mean and max rel, SQNR). usage: bf16_float32 RUNS NPU_0 REF_0 [NPU_1 REF_1 ...]
#include <immintrin.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kRows = 2048, kCols = 2048, kSlice = 64, kHeader = 128;
constexpr double kFloor = static_cast<double>(1e-6f);

struct Sums {  // per tensor pair
  std::vector<double> dot, a2, b2;
  double absErr = 0, absRef = 0, sqErr = 0, relErr = 0, maxAbs = 0, maxRel = 0;
  Sums() : dot(kRows), a2(kRows), b2(kRows) {}
};

inline double hsum4(__m256d v) {  // (l0 + l1) + (l2 + l3), as the engine combines its lanes
  alignas(32) double l[4];
  _mm256_store_pd(l, v);
  return (l[0] + l[1]) + (l[2] + l[3]);
}

inline __m512d loadTwoRows(const uint16_t* r0, const uint16_t* r1) {  // 4 bf16 of each row -> 8 doubles
  const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r0));
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r1));
  const __m128 fa = _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), a));
  const __m128 fb = _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), b));
  return _mm512_cvtps_pd(_mm256_insertf128_ps(_mm256_castps128_ps256(fa), fb, 1));
}

/** The engine's float64 scan of rows [r, r + n) of one slice (n even). */
void scanF64(const uint16_t* A, const uint16_t* B, size_t r, size_t n, Sums& s) {
  const __m512d floor = _mm512_set1_pd(kFloor);
  for (size_t q = 0; q < n; q += 2) {
    const uint16_t *a0 = A + q * kCols, *a1 = a0 + kCols, *b0 = B + q * kCols, *b1 = b0 + kCols;
    __m512d dot = _mm512_setzero_pd(), a2 = dot, b2 = dot, sAbs = dot, sRef = dot, sSq = dot, sRel = dot, mAbs = dot, mRel = dot;
    for (size_t c = 0; c < kCols; c += 4) {
      const __m512d a = loadTwoRows(a0 + c, a1 + c), b = loadTwoRows(b0 + c, b1 + c);
      dot = _mm512_fmadd_pd(a, b, dot);
      a2 = _mm512_fmadd_pd(a, a, a2);
      b2 = _mm512_fmadd_pd(b, b, b2);
      const __m512d d = _mm512_sub_pd(a, b), ad = _mm512_abs_pd(d), ab = _mm512_abs_pd(b);
      const __m512d rel = _mm512_div_pd(ad, _mm512_max_pd(ab, floor));
      sAbs = _mm512_add_pd(sAbs, ad);
      sRef = _mm512_add_pd(sRef, ab);
      sSq = _mm512_add_pd(sSq, _mm512_mul_pd(d, d));
      sRel = _mm512_add_pd(sRel, rel);
      mAbs = _mm512_max_pd(ad, mAbs);
      mRel = _mm512_max_pd(rel, mRel);
    }
    for (int h = 0; h < 2; h++) {
      auto lo = [h](__m512d v) { return h ? _mm512_extractf64x4_pd(v, 1) : _mm512_castpd512_pd256(v); };
      const size_t row = r + q + h;
      s.dot[row] = hsum4(lo(dot));
      s.a2[row] = hsum4(lo(a2));
      s.b2[row] = hsum4(lo(b2));
      s.absErr += hsum4(lo(sAbs));
      s.absRef += hsum4(lo(sRef));
      s.sqErr += hsum4(lo(sSq));
      s.relErr += hsum4(lo(sRel));
    }
    s.maxAbs = std::max(s.maxAbs, _mm512_reduce_max_pd(mAbs));
    s.maxRel = std::max(s.maxRel, _mm512_reduce_max_pd(mRel));
  }
}

inline __m512 load16(const uint16_t* p) {  // 16 bf16 -> 16 float32 (exact)
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline double hsum16(__m512 v) {  // float32 lanes summed in double
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
}

/** The proposal: float32 lanes, flushed into double every kBlock steps of 16 columns. */
void scanF32(const uint16_t* A, const uint16_t* B, size_t r, size_t n, Sums& s) {
  constexpr size_t kBlock = 8;  // 8 x 16 = 128 columns per float32 partial sum
  const __m512 floor = _mm512_set1_ps(1e-6f);
  for (size_t q = 0; q < n; q++) {
    const uint16_t *a0 = A + q * kCols, *b0 = B + q * kCols;
    double D[7] = {0, 0, 0, 0, 0, 0, 0};
    __m512 mAbs = _mm512_setzero_ps(), mRel = mAbs;
    for (size_t c0 = 0; c0 < kCols; c0 += 16 * kBlock) {
      __m512 dot = _mm512_setzero_ps(), a2 = dot, b2 = dot, sAbs = dot, sRef = dot, sSq = dot, sRel = dot;
      for (size_t c = c0; c < c0 + 16 * kBlock; c += 16) {
        const __m512 a = load16(a0 + c), b = load16(b0 + c);
        dot = _mm512_fmadd_ps(a, b, dot);  // bf16 x bf16 is exact in float32
        a2 = _mm512_fmadd_ps(a, a, a2);
        b2 = _mm512_fmadd_ps(b, b, b2);
        const __m512 d = _mm512_sub_ps(a, b), ad = _mm512_abs_ps(d), ab = _mm512_abs_ps(b);
        const __m512 rel = _mm512_div_ps(ad, _mm512_max_ps(ab, floor));
        sAbs = _mm512_add_ps(sAbs, ad);
        sRef = _mm512_add_ps(sRef, ab);
        sSq = _mm512_fmadd_ps(d, d, sSq);
        sRel = _mm512_add_ps(sRel, rel);
        mAbs = _mm512_max_ps(ad, mAbs);
        mRel = _mm512_max_ps(rel, mRel);
      }
      D[0] += hsum16(dot); D[1] += hsum16(a2); D[2] += hsum16(b2);
      D[3] += hsum16(sAbs); D[4] += hsum16(sRef); D[5] += hsum16(sSq); D[6] += hsum16(sRel);
    }
    const size_t row = r + q;
    s.dot[row] = D[0];
    s.a2[row] = D[1];
    s.b2[row] = D[2];
    s.absErr += D[3];
    s.absRef += D[4];
    s.sqErr += D[5];
    s.relErr += D[6];
    s.maxAbs = std::max(s.maxAbs, static_cast<double>(_mm512_reduce_max_ps(mAbs)));
    s.maxRel = std::max(s.maxRel, static_cast<double>(_mm512_reduce_max_ps(mRel)));
  }
}

using Scan = void (*)(const uint16_t*, const uint16_t*, size_t, size_t, Sums&);

/** One layer pair through 64-row slices read with pread; scan null: read only. */
double pass(int fa, int fb, Scan scan, Sums& s, std::vector<uint16_t>& A, std::vector<uint16_t>& B) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t bytes = kSlice * kCols * 2;
  for (size_t r = 0; r < kRows; r += kSlice) {
    if (pread(fa, A.data(), bytes, kHeader + r * kCols * 2) != static_cast<ssize_t>(bytes) ||
        pread(fb, B.data(), bytes, kHeader + r * kCols * 2) != static_cast<ssize_t>(bytes)) {
      std::fprintf(stderr, "bf16_float32: short read\n");
      std::exit(2);
    }
    if (scan) scan(A.data(), B.data(), r, kSlice, s);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Figures { std::vector<double> cos; double whole, min, meanAbs, meanRel, sqnr, maxAbs, maxRel; };

Figures figures(const Sums& s) {
  Figures f;
  double dot = 0, a2 = 0, b2 = 0;
  for (size_t r = 0; r < kRows; r++) {
    f.cos.push_back(s.dot[r] / std::sqrt(s.a2[r] * s.b2[r]));
    dot += s.dot[r];
    a2 += s.a2[r];
    b2 += s.b2[r];
  }
  const double n = static_cast<double>(kRows * kCols);
  f.whole = dot / std::sqrt(a2 * b2);
  f.min = *std::min_element(f.cos.begin(), f.cos.end());
  f.meanAbs = s.absErr / n;
  f.meanRel = s.relErr / n;
  f.sqnr = 10 * std::log10(b2 / s.sqErr);
  f.maxAbs = s.maxAbs;
  f.maxRel = s.maxRel;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("fma")) {
    std::puts("bf16: NOT MEASURED (the CPU has no AVX-512F + FMA)");
    return 0;
  }
  const int runs = std::atoi(argv[1]);
  std::vector<uint16_t> A(kSlice * kCols), B(kSlice * kCols);
  double tRead = 0, t64 = 0, t32 = 0;
  double dCos = 0, dWhole = 0, dMin = 0, rMeanAbs = 0, rMeanRel = 0, dSqnr = 0, rMaxAbs = 0, rMaxRel = 0, worstCos = 1;
  const size_t layers = (argc - 2) / 2;
  for (int run = 0; run < runs; run++) {
    double read = 0, f64 = 0, f32 = 0;
    for (size_t l = 0; l < layers; l++) {
      const int fa = open(argv[2 + 2 * l], O_RDONLY), fb = open(argv[3 + 2 * l], O_RDONLY);
      Sums s64, s32, none;
      read += pass(fa, fb, nullptr, none, A, B);
      f64 += pass(fa, fb, scanF64, s64, A, B);
      f32 += pass(fa, fb, scanF32, s32, A, B);
      close(fa);
      close(fb);
      if (run) continue;
      const Figures x = figures(s64), y = figures(s32);
      for (size_t r = 0; r < kRows; r++) dCos = std::max(dCos, std::fabs(x.cos[r] - y.cos[r]));
      worstCos = std::min(worstCos, x.min);
      dWhole = std::max(dWhole, std::fabs(x.whole - y.whole));
      dMin = std::max(dMin, std::fabs(x.min - y.min));
      rMeanAbs = std::max(rMeanAbs, std::fabs(x.meanAbs - y.meanAbs) / x.meanAbs);
      rMeanRel = std::max(rMeanRel, std::fabs(x.meanRel - y.meanRel) / x.meanRel);
      dSqnr = std::max(dSqnr, std::fabs(x.sqnr - y.sqnr));
      rMaxAbs = std::max(rMaxAbs, std::fabs(x.maxAbs - y.maxAbs) / x.maxAbs);
      rMaxRel = std::max(rMaxRel, std::fabs(x.maxRel - y.maxRel) / x.maxRel);
    }
    tRead = run ? std::min(tRead, read) : read;
    t64 = run ? std::min(t64, f64) : f64;
    t32 = run ? std::min(t32, f32) : f32;
  }
  std::printf("bf16: %zu layers of %zu x %zu, one thread, 64-row slices read with pread, minimum of %d runs\n", layers, kRows, kCols, runs);
  std::printf("  read only          %7.1f ms\n", 1e3 * tRead);
  std::printf("  f64 (the engine)   %7.1f ms   compute %6.1f ms over the read\n", 1e3 * t64, 1e3 * (t64 - tRead));
  std::printf("  f32 (proposal)     %7.1f ms   compute %6.1f ms over the read (%.2fx less)\n", 1e3 * t32, 1e3 * (t32 - tRead), (t64 - tRead) / (t32 - tRead));
  std::printf("  f32 against f64, largest difference over every layer (per-position cosines down to %.6f):\n", worstCos);
  std::printf("    per-position cosine %.2e, whole cosine %.2e, per-position min %.2e, SQNR %.2e dB\n", dCos, dWhole, dMin, dSqnr);
  std::printf("    relative: mean_abs %.2e, mean_rel %.2e, max_abs %.2e, max_rel %.2e\n", rMeanAbs, rMeanRel, rMaxAbs, rMaxRel);
}
