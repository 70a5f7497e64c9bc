// Fp product check and micro-benchmark: the Karatsuba product (field.cuh, fp_mul_kara) against
// sppark's, on random and edge operands, then both products' throughput.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I$SPPARK/sppark -I$BLST/src -I.. --expt-relaxed-constexpr fieldbench.cu
// Prints the mismatches (must be 0) and Gproducts/s of each variant.
#include "field.cuh"
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

struct limbs { uint32_t w[12]; };

#ifdef __CUDA_ARCH__
__device__ fp_t ld(const limbs &l)
{
    fp_t r;
    for (int k = 0; k < 12; k++) r[k] = l.w[k];
    return r;
}
#endif

__global__ void k_check(const limbs *x, const limbs *y, size_t n, unsigned long long *bad,
                        unsigned long long *first)
{
#ifdef __CUDA_ARCH__
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_t a = ld(x[i]), b = ld(y[i]);
    fp_t r1 = a * b, r2 = fp_mul_kara(a, b);
    bool eq = true;
    for (int k = 0; k < 12; k++) eq &= r1[k] == r2[k];
    if (!eq) {
        atomicAdd(bad, 1ull);
        atomicMin(first, (unsigned long long)i);
    }
#endif
}

template <bool KARA>
__global__ void k_bench(const limbs *x, const limbs *y, limbs *out, size_t n, int iters)
{
#ifdef __CUDA_ARCH__
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_t a = ld(x[i]), b = ld(y[i]), c = ld(y[(i + 1) % n]);
    for (int k = 0; k < iters; k++) {
        if (KARA) { a = fp_mul_kara(a, b); c = fp_mul_kara(c, b); }
        else { a = a * b; c = c * b; }
    }
    a = a + c;
    for (int k = 0; k < 12; k++) out[i].w[k] = a[k];
#endif
}

static const uint32_t P[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                               0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};

static limbs rnd(std::mt19937_64 &g)
{
    limbs l;
    for (int k = 0; k < 12; k++) l.w[k] = (uint32_t)g();
    l.w[11] %= P[11];
    return l;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], 0, 0) : (1u << 22);
    int iters = argc > 2 ? atoi(argv[2]) : 256;
    std::mt19937_64 g(42);
    // edge operands: 0, 1, 2, p-1, p-2, 2^192, 2^192-1, equal halves, a0 = max with a1 = top
    std::vector<limbs> edge;
    limbs z{};
    edge.push_back(z);
    limbs o = z; o.w[0] = 1; edge.push_back(o);
    limbs t = z; t.w[0] = 2; edge.push_back(t);
    limbs pm1; for (int k = 0; k < 12; k++) pm1.w[k] = P[k]; pm1.w[0] -= 1; edge.push_back(pm1);
    limbs pm2 = pm1; pm2.w[0] -= 1; edge.push_back(pm2);
    limbs h = z; h.w[6] = 1; edge.push_back(h);
    limbs hm = z; for (int k = 0; k < 6; k++) hm.w[k] = 0xffffffff; edge.push_back(hm);
    for (int r = 0; r < 4; r++) {
        limbs e = rnd(g);
        for (int k = 0; k < 6; k++) e.w[k] = e.w[k + 6];
        edge.push_back(e);
    }
    limbs mx = pm1; for (int k = 0; k < 6; k++) mx.w[k] = 0xffffffff; mx.w[6] -= 1; edge.push_back(mx);
    limbs lo_small = rnd(g); for (int k = 0; k < 6; k++) lo_small.w[k] = 0; edge.push_back(lo_small);
    limbs hi_zero = rnd(g); for (int k = 6; k < 12; k++) hi_zero.w[k] = 0; edge.push_back(hi_zero);

    std::vector<limbs> X(n), Y(n);
    size_t ne = edge.size(), i = 0;
    for (size_t p = 0; p < ne; p++)
        for (size_t q = 0; q < ne; q++, i++) { X[i] = edge[p]; Y[i] = edge[q]; }
    for (size_t e = 0; e < ne; e++)
        for (int r = 0; r < 64; r++, i++) { X[i] = edge[e]; Y[i] = rnd(g); Y[i + 0] = Y[i]; }
    for (; i < n; i++) { X[i] = rnd(g); Y[i] = rnd(g); }

    limbs *dx, *dy, *dout;
    unsigned long long *dbad;
    CK(cudaMalloc(&dx, n * sizeof(limbs)));
    CK(cudaMalloc(&dy, n * sizeof(limbs)));
    CK(cudaMalloc(&dout, n * sizeof(limbs)));
    CK(cudaMalloc(&dbad, 16));
    CK(cudaMemcpy(dx, X.data(), n * sizeof(limbs), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, Y.data(), n * sizeof(limbs), cudaMemcpyHostToDevice));
    unsigned long long init[2] = {0, ~0ull}, res[2];
    CK(cudaMemcpy(dbad, init, 16, cudaMemcpyHostToDevice));
    k_check<<<(n + 255) / 256, 256>>>(dx, dy, n, dbad, dbad + 1);
    CK(cudaGetLastError());
    CK(cudaMemcpy(res, dbad, 16, cudaMemcpyDeviceToHost));
    printf("check: %zu products (%zu edge pairs), mismatches %llu", n, ne * ne, res[0]);
    if (res[0]) printf(" (first at %llu)", res[1]);
    printf("\n");

    std::vector<limbs> o1(n), o2(n);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int v = 0; v < 2; v++) {
        float best = 1e30f;
        for (int rep = 0; rep < 3; rep++) {
            CK(cudaEventRecord(e0));
            if (v == 0) k_bench<false><<<(n + 127) / 128, 128>>>(dx, dy, dout, n, iters);
            else k_bench<true><<<(n + 127) / 128, 128>>>(dx, dy, dout, n, iters);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (ms < best) best = ms;
        }
        CK(cudaMemcpy(v ? o2.data() : o1.data(), dout, n * sizeof(limbs), cudaMemcpyDeviceToHost));
        double prods = 2.0 * iters * n;
        printf("%-8s %8.2f ms  %7.2f Gprod/s\n", v ? "karatsuba" : "sppark", best, prods / best / 1e6);
    }
    size_t diff = 0;
    for (size_t k = 0; k < n; k++)
        for (int w = 0; w < 12; w++) diff += o1[k].w[w] != o2[k].w[w];
    printf("chained results differ in %zu words\n", diff);
    return res[0] || diff ? 1 : 0;
}
