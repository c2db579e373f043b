// The pipelined round trip of square 2^26 (pageable host memory to the GPU and back) written directly in CUDA C++
// with OpenMP, as a floor for gpuworthy's own pipeline (`cuda/src/pipeline.rs`) on the same host: the same design
// (chunks of 8 MiB through three streams, page-locked staging per stream, host copies on every core, the output's
// pages mapped in first), timed the same way (from a fresh output vector to the last byte copied out), with
// nothing of Rust or of the library around it. Then the other way to avoid staging: page-locking the caller's own
// buffers in place (cudaHostRegister), whole or chunk by chunk from 1, 4 or 16 threads, and copying from them.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -fopenmp,-mavx2 -o host_staging bench-suite/peers/host_staging.cu -lgomp
//   ./host_staging
//
// Lines: one pinned 256 MiB copy (the goal's unit); "staging memcpy" (the design as gpuworthy runs it), "staging NT
// out" and "staging NT" (non-temporal stores for the copies out, and both ways); "register whole" and "register
// chunks" (no staging: the input page-locked in place, the output page-locked once).
#include <cuda_runtime.h>
#include <omp.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_)); exit(1);} } while (0)
using clk = std::chrono::steady_clock;
static double ms(clk::time_point a) { return std::chrono::duration<double, std::milli>(clk::now() - a).count(); }
__global__ void sq(const float* x, float* y, size_t n) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) { float v = x[i]; y[i] = v * v; } }
const size_t N = 1ull << 26, CH = 2ull << 20, NCH = N / CH; const int LANES = 3;
static float* huge_alloc(size_t n, bool populate) {
  float* p = (float*)aligned_alloc(2 << 20, n * 4); madvise(p, n * 4, MADV_HUGEPAGE);
  if (populate) {
#pragma omp parallel for schedule(static)
    for (size_t pg = 0; pg < n * 4 / 4096; ++pg) ((volatile float*)p)[pg * 1024] = 0.f;
  }
  return p;
}
static void copy_par(float* d, const float* s, size_t n, bool nt) {
  const size_t G = 65536; // 256 KiB grains
#pragma omp parallel for schedule(static)
  for (size_t g = 0; g < n; g += G) {
    size_t m = std::min(G, n - g);
    if (!nt) { memcpy(d + g, s + g, m * 4); continue; }
    for (size_t i = 0; i < m; i += 8) _mm256_stream_ps(d + g + i, _mm256_loadu_ps(s + g + i));
    _mm_sfence();
  }
}
struct Lane { cudaStream_t s; cudaEvent_t done; float *pin_in, *pin_out; };
static float *dx, *dy; static Lane lanes[LANES];
static void launch_range(Lane& L, const float* hin, float* hout, size_t off, size_t n) {
  CK(cudaMemcpyAsync(dx + off, hin, n * 4, cudaMemcpyHostToDevice, L.s));
  sq<<<(n + 255) / 256, 256, 0, L.s>>>(dx + off, dy + off, n);
  CK(cudaMemcpyAsync(hout, dy + off, n * 4, cudaMemcpyDeviceToHost, L.s));
  CK(cudaEventRecord(L.done, L.s));
}
static void launch_chunk(Lane& L, const float* hin, float* hout, size_t c) {
  CK(cudaMemcpyAsync(dx + c * CH, hin, CH * 4, cudaMemcpyHostToDevice, L.s));
  sq<<<CH / 256, 256, 0, L.s>>>(dx + c * CH, dy + c * CH, CH);
  CK(cudaMemcpyAsync(hout, dy + c * CH, CH * 4, cudaMemcpyDeviceToHost, L.s));
  CK(cudaEventRecord(L.done, L.s));
}
static double staging(const float* in, int nt, double* parts) {
  auto t0 = clk::now();
  float* out = huge_alloc(N, true); parts[0] = ms(t0);
  double tin = 0, tout = 0;
  for (size_t c = 0; c < NCH; ++c) {
    Lane& L = lanes[c % LANES];
    if (c >= LANES) { CK(cudaEventSynchronize(L.done)); auto a = clk::now(); copy_par(out + (c - LANES) * CH, L.pin_out, CH, nt & 2); tout += ms(a); }
    auto a = clk::now(); copy_par(L.pin_in, in + c * CH, CH, nt & 1); tin += ms(a);
    launch_chunk(L, L.pin_in, L.pin_out, c);
  }
  for (size_t c = NCH - LANES; c < NCH; ++c) { Lane& L = lanes[c % LANES]; CK(cudaEventSynchronize(L.done)); auto a = clk::now(); copy_par(out + c * CH, L.pin_out, CH, nt & 2); tout += ms(a); }
  double t = ms(t0); parts[1] = tin; parts[2] = tout;
  if (out[12345] != in[12345] * in[12345]) printf("WRONG\n");
  free(out); return t;
}
static double reg_whole(const float* in, double* parts) {
  auto t0 = clk::now();
  float* out = huge_alloc(N, true); parts[0] = ms(t0);
  auto a = clk::now(); CK(cudaHostRegister((void*)in, N * 4, 0)); CK(cudaHostRegister(out, N * 4, 0)); parts[1] = ms(a);
  for (size_t c = 0; c < NCH; ++c) launch_chunk(lanes[c % LANES], in + c * CH, out + c * CH, c);
  CK(cudaDeviceSynchronize());
  a = clk::now(); CK(cudaHostUnregister((void*)in)); CK(cudaHostUnregister(out)); parts[2] = ms(a);
  double t = ms(t0);
  if (out[12345] != in[12345] * in[12345]) printf("WRONG\n");
  free(out); return t;
}
// Registration by `workers` threads, chunk by chunk, ahead of the main thread's enqueueing; unregistration in parallel.
static double reg_pipelined(const float* in, int workers, bool reg_out, double* parts) {
  auto t0 = clk::now();
  float* out = huge_alloc(N, true); parts[0] = ms(t0);
  if (reg_out) { auto a = clk::now(); CK(cudaHostRegister(out, N * 4, 0)); parts[1] = ms(a); } else parts[1] = 0;
  // Registration regions end on page boundaries so that no page is registered twice; chunk c's bytes lie in
  // regions c - 1 and c.
  std::vector<char*> b(NCH + 1);
  for (size_t c = 0; c <= NCH; ++c) b[c] = c == 0 ? (char*)in : c == NCH ? (char*)(in + N) : (char*)(((size_t)(in + c * CH) + 4095) & ~(size_t)4095);
  std::vector<std::atomic<int>> ready(NCH); for (auto& r : ready) r = 0;
  std::vector<std::thread> ts;
  for (int w = 0; w < workers; ++w) ts.emplace_back([&, w] { for (size_t c = w; c < NCH; c += workers) { CK(cudaHostRegister(b[c], b[c + 1] - b[c], 0)); ready[c].store(1, std::memory_order_release); } });
  for (size_t c = 0; c < NCH; ++c) {
    while (!ready[c].load(std::memory_order_acquire)) {}
    size_t off = (float*)b[c] - in, n = (float*)b[c + 1] - (float*)b[c];
    launch_range(lanes[c % LANES], in + off, out + off, off, n);
  }
  for (auto& t : ts) t.join();
  CK(cudaDeviceSynchronize());
  auto a = clk::now();
#pragma omp parallel for num_threads(workers)
  for (size_t c = 0; c < NCH; ++c) CK(cudaHostUnregister(b[c]));
  if (reg_out) CK(cudaHostUnregister(out));
  parts[2] = ms(a);
  double t = ms(t0);
  if (out[12345] != in[12345] * in[12345]) printf("WRONG\n");
  free(out); return t;
}
int main() {
  printf("omp threads %d\n", omp_get_max_threads());
  CK(cudaMalloc(&dx, N * 4)); CK(cudaMalloc(&dy, N * 4));
  for (auto& L : lanes) { CK(cudaStreamCreateWithFlags(&L.s, cudaStreamNonBlocking)); CK(cudaEventCreateWithFlags(&L.done, cudaEventDisableTiming)); CK(cudaMallocHost(&L.pin_in, CH * 4)); CK(cudaMallocHost(&L.pin_out, CH * 4)); }
  float* in = (float*)malloc(N * 4);  // plain pages, like a user's vector
  for (size_t i = 0; i < N; ++i) in[i] = (float)(i % 1000) * 0.001f;
  { float* p; CK(cudaMallocHost(&p, N * 4)); memset(p, 1, N * 4); cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    for (int r = 0; r < 4; ++r) { cudaEventRecord(a); CK(cudaMemcpy(dx, p, N * 4, cudaMemcpyHostToDevice)); cudaEventRecord(b); cudaEventSynchronize(b); float t; cudaEventElapsedTime(&t, a, b); printf("pinned h2d 256 MiB %.2f ms\n", t); }
    cudaFreeHost(p); }
  double parts[3];
  for (int r = 0; r < 4; ++r) { double t = staging(in, 0, parts); printf("staging memcpy   total %6.2f ms (alloc+populate out %.2f, in %.2f, out %.2f)\n", t, parts[0], parts[1], parts[2]); }
  for (int r = 0; r < 4; ++r) { double t = staging(in, 2, parts); printf("staging NT out   total %6.2f ms (alloc+populate out %.2f, in %.2f, out %.2f)\n", t, parts[0], parts[1], parts[2]); }
  for (int r = 0; r < 4; ++r) { double t = staging(in, 3, parts); printf("staging NT       total %6.2f ms (alloc+populate out %.2f, in %.2f, out %.2f)\n", t, parts[0], parts[1], parts[2]); }
  for (int r = 0; r < 4; ++r) { double t = reg_whole(in, parts); printf("register whole   total %6.2f ms (alloc+populate out %.2f, register %.2f, unregister %.2f)\n", t, parts[0], parts[1], parts[2]); }
  for (int w : {1, 4, 16}) for (int r = 0; r < 3; ++r) { double t = reg_pipelined(in, w, true, parts); printf("register chunks, %2d threads total %6.2f ms (alloc+populate out %.2f, register out %.2f, unregister %.2f)\n", w, t, parts[0], parts[1], parts[2]); }
  return 0;
}
