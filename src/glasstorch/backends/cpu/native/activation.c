/* GELU and its gradient: the NumPy formulas of activation.py (_gelu, gelu_grad,
   _normal_cdf_float32), step for step, in one loop; and ReLU's gradient, threshold_backward.
   No pointer is `restrict`: an in-place call (gelu_) passes x as out; each element is read
   before it is written. */

static const float SQRT_2_OVER_PI_F = (float)0.79788456080286535588;
static const double SQRT_2_OVER_PI = 0.79788456080286535588;
static const double SQRT_HALF = 0.70710678118654752440;
static const float INV_SQRT_2PI_F = (float)0.39894228040143267794;
static const double INV_SQRT_2PI = 0.39894228040143267794;

/* Abramowitz & Stegun 7.1.26 (PyTorch's vectorised float erf): q = sqrt 2 / p, and the
   coefficients halved, a5 first, so that the polynomial gives the cdf directly. */
static const float AS_Q = (float)(1.0 / (0.3275911 * 0.70710678118654752440));
static const float AS_C0 = (float)(1.061405429 / 2), AS_C1 = (float)(-1.453152027 / 2),
                   AS_C2 = (float)(1.421413741 / 2), AS_C3 = (float)(-0.284496736 / 2),
                   AS_C4 = (float)(0.254829592 / 2);

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2 for float32, and exp(-x^2 / 2) in *e. */
static inline float normal_cdf_f(float x, float* e)
{
    float t = AS_Q / (fabsf(x) + AS_Q);
    float ex = expf((x * x) * -0.5f);
    float r = t * AS_C0;
    r = (r + AS_C1) * t;
    r = (r + AS_C2) * t;
    r = (r + AS_C3) * t;
    r = (r + AS_C4) * t;
    r = 0.5f - r * ex;
    *e = ex;
    return copysignf(r, x) + 0.5f;
}

static inline void gelu_block_f32(const float* x, float* out, int tanh_form)
{
    if (tanh_form) {
        #pragma omp simd
        for (int j = 0; j < LANES; j++) {
            float v = x[j];
            float r = tanhf(((v * v * v) * 0.044715f + v) * SQRT_2_OVER_PI_F);
            out[j] = ((r + 1.0f) * 0.5f) * v;
        }
    } else {
        #pragma omp simd
        for (int j = 0; j < LANES; j++) {
            float e;
            out[j] = normal_cdf_f(x[j], &e) * x[j];
        }
    }
}

static inline void gelu_block_f64(const double* x, double* out, int tanh_form)
{
    #pragma omp simd
    for (int j = 0; j < LANES; j++) {
        double v = x[j];
        double r = tanh_form ? tanh(((v * v * v) * 0.044715 + v) * SQRT_2_OVER_PI)
                             : erf(v * SQRT_HALF);
        out[j] = ((r + 1.0) * 0.5) * v;
    }
}

/* The tanh form's gelu'(v), 0.5 (1 + t) + 0.5 v (1 - t^2) k (1 + 3 c v^2), in gelu_grad's
   order, the constants rounded to T as NumPy rounds a Python float against a T array. */
#define GELU_TANH_GRAD(NAME, T, TANH, SQRT_2_OVER_PI_T)                                  \
static inline T NAME(T v)                                                              \
{                                                                                      \
    T x2 = v * v;                                                                      \
    T t = TANH(((x2 * (T)0.044715 + (T)1) * v) * SQRT_2_OVER_PI_T);                     \
    T k = (x2 * (T)(3 * 0.044715) + (T)1) * SQRT_2_OVER_PI_T;                           \
    return (((T)1 - t * t) * k) * v * (T)0.5 + (t + (T)1) * (T)0.5;                    \
}
GELU_TANH_GRAD(gelu_tanh_grad_f32, float, tanhf, SQRT_2_OVER_PI_F)
GELU_TANH_GRAD(gelu_tanh_grad_f64, double, tanh, SQRT_2_OVER_PI)

/* tanh form: gelu_tanh_grad;  erf form: Phi(x) + x phi(x). */
static inline void gelu_backward_block_f32(const float* g, const float* x, float* out,
                                           int tanh_form)
{
    if (tanh_form) {
        #pragma omp simd
        for (int j = 0; j < LANES; j++)
            out[j] = gelu_tanh_grad_f32(x[j]) * g[j];
    } else {
        #pragma omp simd
        for (int j = 0; j < LANES; j++) {
            float e, v = x[j];
            float r = normal_cdf_f(v, &e);
            out[j] = (r + (e * INV_SQRT_2PI_F) * v) * g[j];
        }
    }
}

static inline void gelu_backward_block_f64(const double* g, const double* x, double* out,
                                           int tanh_form)
{
    if (tanh_form) {
        #pragma omp simd
        for (int j = 0; j < LANES; j++)
            out[j] = gelu_tanh_grad_f64(x[j]) * g[j];
    } else {
        #pragma omp simd
        for (int j = 0; j < LANES; j++) {
            double v = x[j];
            double r = (erf(v * SQRT_HALF) + 1.0) * 0.5;
            double e = exp((v * v) * -0.5);
            out[j] = (r + (e * INV_SQRT_2PI) * v) * g[j];
        }
    }
}

UNARY_KERNEL(gelu_f32, float, gelu_block_f32)
UNARY_KERNEL(gelu_f64, double, gelu_block_f64)
BINARY_KERNEL(gelu_backward_f32, float, gelu_backward_block_f32)
BINARY_KERNEL(gelu_backward_f64, double, gelu_backward_block_f64)

/* threshold_backward (activation.py's threshold_grad): g where x > threshold, else +0; a
   NaN x passes g on (PyTorch's x <= threshold ? 0 : g). */
#define THRESHOLD_BACKWARD(T, SUF)                                                     \
void threshold_backward_##SUF(int64_t n, const T* g, const T* x, T* out,               \
                              double threshold, int nthreads)                          \
{                                                                                      \
    const T t = (T)threshold;                                                          \
    _Pragma("omp parallel for simd num_threads(nthreads)")                             \
    for (int64_t i = 0; i < n; i++) out[i] = x[i] <= t ? (T)0 : g[i];                  \
}

THRESHOLD_BACKWARD(float, f32)
THRESHOLD_BACKWARD(double, f64)

/* clamp between numbers (pointwise.py's clamp): PyTorch's x < lo ? lo : x, then
   r > hi ? hi : r, with a missing bound as an infinity; a NaN x stays NaN, an x equal
   to a bound is kept (-0.0 at a bound of 0), and lo > hi gives hi. The bounds are not
   NaN (the caller's check). */
#define CLAMP(T, SUF)                                                                  \
void clamp_##SUF(int64_t n, const T* x, T* out, double lo, double hi, int nthreads)  \
{                                                                                      \
    const T l = (T)lo, h = (T)hi;                                                      \
    _Pragma("omp parallel for simd num_threads(nthreads)")                             \
    for (int64_t i = 0; i < n; i++) {                                                  \
        T v = x[i];                                                                    \
        v = v < l ? l : v;                                                             \
        out[i] = v > h ? h : v;                                                        \
    }                                                                                  \
}

CLAMP(float, f32)
CLAMP(double, f64)

/* tanh's and sigmoid's gradients from their outputs y (activation.py's tanh_grad,
   sigmoid_grad): g * (1 - y * y) and g * (1 - y) * y, each product and difference rounded
   in that order, as the NumPy passes and PyTorch's kernels round them. */
#define FROM_OUTPUT_BACKWARD(T, SUF)                                                   \
void tanh_backward_##SUF(int64_t n, const T* g, const T* y, T* out, int nthreads)      \
{                                                                                      \
    _Pragma("omp parallel for simd num_threads(nthreads)")                             \
    for (int64_t i = 0; i < n; i++) {                                                  \
        const T r = (T)1 - y[i] * y[i];                                                \
        out[i] = g[i] * r;                                                             \
    }                                                                                  \
}                                                                                      \
void sigmoid_backward_##SUF(int64_t n, const T* g, const T* y, T* out, int nthreads)   \
{                                                                                      \
    _Pragma("omp parallel for simd num_threads(nthreads)")                             \
    for (int64_t i = 0; i < n; i++) {                                                  \
        const T r = g[i] * ((T)1 - y[i]);                                              \
        out[i] = r * y[i];                                                             \
    }                                                                                  \
}

FROM_OUTPUT_BACKWARD(float, f32)
FROM_OUTPUT_BACKWARD(double, f64)
