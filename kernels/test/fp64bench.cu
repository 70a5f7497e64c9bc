// Spike (session 7; committed once for the record and removed in the next commit): an Fp Montgomery product on the FP64 pipe (16 limbs of 24 bits held in doubles,
// product scanning with the reduction interleaved; every column sum stays below 2^53, so each
// DFMA is exact), checked against sppark's product and timed alone and mixed with it.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I$SPPARK/sppark -I$BLST/src -Ikernels --expt-relaxed-constexpr fp64bench.cu
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
struct f64v { double v[16]; };

__constant__ double P24[16] = {16755371., 16777215., 16759294., 11621375., 11272190., 16131102., 10548912., 6762706.,
                               8721087., 4949235., 14115959., 4410284., 1812406., 15112779., 15350143., 1704209.};
static const uint32_t P[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                               0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
#define NP0 0xfcfffdu

#ifdef __CUDA_ARCH__
__device__ fp_t ld(const limbs &l)
{
    fp_t r;
    for (int k = 0; k < 12; k++) r[k] = l.w[k];
    return r;
}
__device__ f64v to_f64(const limbs &a)
{
    f64v r;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        int bit = 24 * i, w = bit / 32, sh = bit % 32;
        uint32_t v = a.w[w] >> sh;
        if (sh > 8) v |= a.w[w + 1] << (32 - sh);
        r.v[i] = (double)(v & 0xffffff);
    }
    return r;
}
__device__ void from_f64(const f64v &r, uint32_t out[12])
{
    uint64_t acc = 0;
    int bits = 0, w = 0;
    for (int i = 0; i < 16; i++) {
        acc |= (uint64_t)(uint32_t)r.v[i] << bits;
        bits += 24;
        while (bits >= 32 && w < 12) { out[w++] = (uint32_t)acc; acc >>= 32; bits -= 32; }
    }
    // conditional subtraction of p (the product is below 2p)
    uint32_t t[12];
    uint64_t borrow = 0;
    const uint32_t PP[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                             0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
    for (int k = 0; k < 12; k++) {
        uint64_t d = (uint64_t)out[k] - PP[k] - borrow;
        t[k] = (uint32_t)d;
        borrow = (d >> 63) & 1;
    }
    if (!borrow)
        for (int k = 0; k < 12; k++) out[k] = t[k];
}

__device__ __forceinline__ double lo24(double x, double &hi)
{
    double h = floor(x * 0x1p-24);
    hi = h;
    return fma(-h, 0x1p24, x);
}

// r = a * b / 2^384 mod p (below 2p for inputs below 2p), limbs below 2^24.
__device__ __forceinline__ f64v mul_f64(const f64v &a, const f64v &b)
{
    double q[16];
    f64v r;
    double carry = 0.0;
#pragma unroll
    for (int k = 0; k < 31; k++) {
        double acc = carry;
#pragma unroll
        for (int i = 0; i < 16; i++)
            if (k - i >= 0 && k - i < 16) acc = fma(a.v[i], b.v[k - i], acc);
#pragma unroll
        for (int i = 0; i < 16; i++)
            if (i < k && k - i < 16) acc = fma(q[i], P24[k - i], acc);
        if (k < 16) {
            double h;
            double lo = lo24(acc, h);
            uint32_t li = (uint32_t)__double2loint(lo + 0x1p52);
            uint32_t qi = (li * NP0) & 0xffffffu;
            q[k] = __hiloint2double(0x43300000, (int)qi) - 0x1p52;
            acc = fma(q[k], P24[0], acc);
            carry = acc * 0x1p-24;
        } else {
            double h;
            r.v[k - 16] = lo24(acc, h);
            carry = h;
        }
    }
    r.v[15] = carry;
    return r;
}
#endif

__global__ void k_check(const limbs *x, const limbs *y, size_t n, unsigned long long *bad, unsigned long long *first)
{
#ifdef __CUDA_ARCH__
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_t r1 = ld(x[i]) * ld(y[i]);
    f64v r = mul_f64(to_f64(x[i]), to_f64(y[i]));
    uint32_t o[12];
    from_f64(r, o);
    bool eq = true;
    for (int k = 0; k < 12; k++) eq &= r1[k] == o[k];
    if (!eq) {
        atomicAdd(bad, 1ull);
        atomicMin(first, (unsigned long long)i);
    }
#endif
}

// mode 0: sppark only; 1: FP64 only; 2: even warps sppark, odd warps FP64; 3: each thread one
// chain of each. Two chains a thread in every mode (two products an iteration).
template <int MODE>
__global__ void k_bench(const limbs *x, const limbs *y, limbs *out, size_t n, int iters)
{
#ifdef __CUDA_ARCH__
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const bool fp = MODE == 1 || (MODE == 2 && ((threadIdx.x >> 5) & 1));
    if (MODE == 3) {
        fp_t a = ld(x[i]), b = ld(y[i]);
        f64v c = to_f64(y[(i + 1) % n]), d = to_f64(x[i]);
        for (int k = 0; k < iters; k++) { a = a * b; c = mul_f64(c, d); }
        uint32_t o[12];
        from_f64(c, o);
        for (int k = 0; k < 12; k++) out[i].w[k] = a[k] ^ o[k];
    } else if (fp) {
        f64v a = to_f64(x[i]), b = to_f64(y[i]), c = to_f64(y[(i + 1) % n]);
        for (int k = 0; k < iters; k++) { a = mul_f64(a, b); c = mul_f64(c, b); }
        uint32_t o1[12], o2[12];
        from_f64(a, o1);
        from_f64(c, o2);
        for (int k = 0; k < 12; k++) out[i].w[k] = o1[k] ^ o2[k];
    } else {
        fp_t a = ld(x[i]), b = ld(y[i]), c = ld(y[(i + 1) % n]);
        for (int k = 0; k < iters; k++) { a = a * b; c = c * b; }
        for (int k = 0; k < 12; k++) out[i].w[k] = a[k] ^ c[k];
    }
#endif
}

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
    int iters = argc > 2 ? atoi(argv[2]) : 128;
    std::mt19937_64 g(42);
    std::vector<limbs> edge;
    limbs z{};
    edge.push_back(z);
    limbs o = z; o.w[0] = 1; edge.push_back(o);
    limbs pm1; for (int k = 0; k < 12; k++) pm1.w[k] = P[k]; pm1.w[0] -= 1; edge.push_back(pm1);
    limbs pm2 = pm1; pm2.w[0] -= 1; edge.push_back(pm2);
    limbs big = pm1; for (int k = 0; k < 11; k++) big.w[k] = 0xffffffff; big.w[11] = P[11] - 1; edge.push_back(big);
    for (int r = 0; r < 3; r++) edge.push_back(rnd(g));
    std::vector<limbs> X(n), Y(n);
    size_t ne = edge.size(), i = 0;
    for (size_t p = 0; p < ne; p++)
        for (size_t q = 0; q < ne; q++, i++) { X[i] = edge[p]; Y[i] = edge[q]; }
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
    k_check<<<(n + 127) / 128, 128>>>(dx, dy, n, dbad, dbad + 1);
    CK(cudaGetLastError());
    CK(cudaMemcpy(res, dbad, 16, cudaMemcpyDeviceToHost));
    printf("check: %zu products (%zu edge pairs), mismatches %llu", n, ne * ne, res[0]);
    if (res[0]) printf(" (first at %llu)", res[1]);
    printf("\n");
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const char *names[4] = {"sppark (IMAD)", "FP64", "half warps each", "one chain of each a thread"};
    for (int v = 0; v < 4; v++) {
        float best = 1e30f;
        for (int rep = 0; rep < 3; rep++) {
            CK(cudaEventRecord(e0));
            unsigned blocks = (unsigned)((n + 127) / 128);
            if (v == 0) k_bench<0><<<blocks, 128>>>(dx, dy, dout, n, iters);
            if (v == 1) k_bench<1><<<blocks, 128>>>(dx, dy, dout, n, iters);
            if (v == 2) k_bench<2><<<blocks, 128>>>(dx, dy, dout, n, iters);
            if (v == 3) k_bench<3><<<blocks, 128>>>(dx, dy, dout, n, iters);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (ms < best) best = ms;
        }
        double prods = 2.0 * iters * n;
        printf("%-28s %8.2f ms  %7.2f Gprod/s\n", names[v], best, prods / best / 1e6);
    }
    return res[0] ? 1 : 0;
}
