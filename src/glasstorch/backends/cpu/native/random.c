/* The random samplers' transforms (random.py) from a Generator's MT19937 words, each in
   one pass: PyTorch's normal_fill (rows of 16 uniforms -> 8 Box-Muller pairs), its
   normal_distribution<double> (a pair for two values, the sine kept for the next call) and
   its uniform_real.

   Words arrive as random.py draws them (`gen._random(n)`: one 32-bit word in each uint64);
   a double uniform takes two, high first (`_random64`). */

static inline float uniform_word_f32(uint64_t w)
{
    return (float)(int32_t)(w & 0xFFFFFF) * 0x1p-24f;            /* the low 24 bits */
}

static inline double uniform_word_f64(const uint64_t* w)
{
    uint64_t v = (w[0] << 32 | (w[1] & 0xFFFFFFFFu)) & ((UINT64_C(1) << 53) - 1);
    return (double)(int64_t)v * 0x1p-53;                          /* the low 53 bits */
}

static inline uint32_t float_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* PyTorch's float32 normal_fill on AVX2 CPUs evaluates log, sin and cos with Cephes'
   polynomials for eight floats at once (its avx_mathfun.h, after Pommier's sse_mathfun),
   built by GCC, which contracts each multiply feeding an add into one fused multiply-add.
   These are those steps, in its order, each contraction an explicit fmaf (this file is
   built with -ffp-contract=off), so that the values are PyTorch's bits. The arguments here
   are never zero, negative, subnormal or NaN: log's takes 1 - u in [2^-24, 1], sincos's
   2 pi u in [0, 2 pi). */
static inline float cephes_logf(float x)
{
    const uint32_t b = float_bits(x);
    float e = (float)((int32_t)(b >> 23) - 0x7f) + 1.0f;          /* exponent + 1 */
    x = bits_float((b & ~0x7f800000u) | float_bits(0.5f));        /* mantissa in [0.5, 1) */
    const int small = x < 0.707106781186547524f;
    const float twice = small ? x : 0.0f;                         /* x < sqrt(1/2): 2x - 1 */
    x = x - 1.0f;
    e = e - (small ? 1.0f : 0.0f);
    x = x + twice;
    const float z = x * x;
    float y = 7.0376836292E-2f;
    y = fmaf(y, x, -1.1514610310E-1f);
    y = fmaf(y, x, 1.1676998740E-1f);
    y = fmaf(y, x, -1.2420140846E-1f);
    y = fmaf(y, x, 1.4249322787E-1f);
    y = fmaf(y, x, -1.6668057665E-1f);
    y = fmaf(y, x, 2.0000714765E-1f);
    y = fmaf(y, x, -2.4999993993E-1f);
    y = fmaf(y, x, 3.3333331174E-1f);
    y = y * x;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    return fmaf(e, 0.693359375f, x + y);                          /* + e ln 2 */
}

/* sin and cos of x >= 0 together: x reduced by the multiple j of pi/4 (j even) in three
   parts, then one polynomial for cos and one for sin of the remainder, swapped and signed
   by j's octant. */
static inline void cephes_sincosf(float x, float* s, float* c)
{
    int32_t j = (int32_t)(x * 1.27323954473516f);                 /* x * 4 / pi */
    j = (j + 1) & ~1;
    const float y = (float)j;
    const uint32_t sin_sign = (uint32_t)(j & 4) << 29;
    const uint32_t cos_sign = (uint32_t)(~(j - 2) & 4) << 29;
    const int swapped = (j & 2) != 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    const float z = x * x;
    float yc = 2.443315711809948E-005f;
    yc = fmaf(yc, z, -1.388731625493765E-003f);
    yc = fmaf(yc, z, 4.166664568298827E-002f);
    yc = yc * z;
    yc = fmaf(yc, z, -(z * 0.5f));
    yc = yc + 1.0f;                                               /* cos of the remainder */
    float ys = -1.9515295891E-4f;
    ys = fmaf(ys, z, 8.3321608736E-3f);
    ys = fmaf(ys, z, -1.6666654611E-1f);
    ys = ys * z;
    ys = fmaf(ys, x, x);                                          /* sin of the remainder */
    /* PyTorch adds a masked zero to each: +0.0f keeps a -0.0 from turning the sign */
    const float sin_r = swapped ? yc + 0.0f : 0.0f + ys;
    const float cos_r = swapped ? 0.0f + ys : yc + 0.0f;
    *s = bits_float(float_bits(sin_r) ^ sin_sign);
    *c = bits_float(float_bits(cos_r) ^ cos_sign);
}

/* One row of 16 float32 uniforms (from 16 words) -> 16 normals: (1 - u[j], u[j + 8]) is
   pair j, its cosine value at j and its sine value at j + 8. */
static inline void normal_row_f32(const uint64_t* words, float* out, float mean, float std)
{
    const float two_pi = (float)(2.0f * 3.14159265358979323846);
    #pragma omp simd
    for (int j = 0; j < 8; j++) {
        const float u1 = 1.0f - uniform_word_f32(words[j]);
        const float u2 = uniform_word_f32(words[j + 8]);
        const float radius = sqrtf(-2.0f * cephes_logf(u1));
        float s, c;
        cephes_sincosf(two_pi * u2, &s, &c);
        out[j] = fmaf(radius * c, std, mean);
        out[j + 8] = fmaf(radius * s, std, mean);
    }
}

/* The float64 rows call libm's scalar log, cos and sin, as PyTorch's scalar
   normal_fill_16<double> does: `safelen(1)` keeps the compiler from switching to libmvec's
   vector variants (declared in the prelude), whose last bit can differ. */
static inline void normal_row_f64(const uint64_t* words, double* out, double mean, double std)
{
    const double two_pi = 2.0f * 3.14159265358979323846;
    #pragma omp simd safelen(1)
    for (int j = 0; j < 8; j++) {
        const double u1 = 1.0 - uniform_word_f64(words + 2 * j);
        const double u2 = uniform_word_f64(words + 2 * (j + 8));
        const double radius = sqrt(-2.0 * log(u1));
        const double theta = two_pi * u2;
        out[j] = fma(radius * cos(theta), std, mean);
        out[j + 8] = fma(radius * sin(theta), std, mean);
    }
}

/* PyTorch's normal_fill over n >= 16 values: the rows of the first n words, then, when n
   is not a multiple of 16, a row of the next 16 words over the last 16 values. Rows are
   independent, so any thread count gives the same values. */
#define NORMAL_FILL(T, SUF, WORDS_PER_VALUE)                                           \
void normal_fill_##SUF(int64_t n, const uint64_t* words, T* out, double mean,          \
                       double std, int nthreads)                                       \
{                                                                                      \
    const int64_t rows = n / 16;                                                       \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t r = 0; r < rows; r++)                                                 \
        normal_row_##SUF(words + 16 * WORDS_PER_VALUE * r, out + 16 * r, (T)mean,      \
                         (T)std);                                                      \
    if (n % 16)                                                                        \
        normal_row_##SUF(words + WORDS_PER_VALUE * n, out + n - 16, (T)mean, (T)std);  \
}

NORMAL_FILL(float, f32, 1)
NORMAL_FILL(double, f64, 2)

/* n values of PyTorch's normal_distribution<double>(mean, std), each fma(z, std, mean),
   or its lognormal_distribution's exp of that (log_normal): z is `first` (the generator's
   cached sine) when has_first, then the cosine and sine of each Box-Muller pair, four
   words a pair (u1 of the angle, then u2 of the radius). out[n] gets the last pair's sine,
   which the caller caches when it went unused. */
static inline double normal_or_log(double z, double mean, double std, int log_normal)
{
    const double v = fma(z, std, mean);
    return log_normal ? exp(v) : v;
}

void normal_doubles(int64_t n, const uint64_t* words, int has_first, double first,
                    double mean, double std, double* out, int log_normal)
{
    const double two_pi = 2.0 * 3.14159265358979323846;
    double sine = 0.0;
    int64_t i = 0;
    if (has_first && n > 0)
        out[i++] = normal_or_log(first, mean, std, log_normal);
    for (; i < n; i += 2, words += 4) {
        const double u1 = uniform_word_f64(words), u2 = uniform_word_f64(words + 2);
        const double radius = sqrt(-2.0 * log1p(-u2));
        const double theta = two_pi * u1;
        sine = radius * sin(theta);
        out[i] = normal_or_log(radius * cos(theta), mean, std, log_normal);
        if (i + 1 < n)
            out[i + 1] = normal_or_log(sine, mean, std, log_normal);
    }
    out[n] = sine;
}

/* uniform_ over n values: x * (to - from) + from with x from the low digits of each draw,
   rounded once (float32: in double, where the product of two floats is exact, as
   random.py's fma); a value that rounds to `to` becomes `from`. */
void uniform_f32(int64_t n, const uint64_t* words, float* out, double from, double to,
                 int nthreads)
{
    const float lo = (float)from, hi = (float)to, span = hi - lo;
    #pragma omp parallel for simd num_threads(nthreads)
    for (int64_t i = 0; i < n; i++) {
        const float v = (float)((double)uniform_word_f32(words[i]) * (double)span
                                + (double)lo);
        out[i] = v == hi ? lo : v;
    }
}

void uniform_f64(int64_t n, const uint64_t* words, double* out, double from, double to,
                 int nthreads)
{
    const double span = to - from;
    #pragma omp parallel for simd num_threads(nthreads)
    for (int64_t i = 0; i < n; i++) {
        const double v = fma(uniform_word_f64(words + 2 * i), span, from);
        out[i] = v == to ? from : v;
    }
}
