/* The element-wise optimizer updates in one pass: Adam/AdamW (optim/adam.py _adam_arrays)
   and SGD with momentum (optim/sgd.py _sgd_arrays), each element through the NumPy
   formula's steps in the same order, with the same constants rounded to T the way NumPy
   rounds a Python float against an array of T. Every step is an IEEE operation (+ - * /
   sqrt, max), so the results are NumPy's bit for bit, whatever the vector width or thread
   count. No pointer is `restrict`: the caller passes distinct arrays, but nothing here
   needs them to be. */

/* Adam flags: which of _adam_arrays' branches run. */
enum { ADAM_MAXIMIZE = 1, ADAM_DECAY = 2, ADAM_DECOUPLED = 4, ADAM_AMSGRAD = 8,
       ADAM_LERP_BY_WEIGHT = 16 };

/* lerp: exp_avg += (g - exp_avg) * w when |w| < 1/2 (LERP_BY_WEIGHT), else
   exp_avg = g - (g - exp_avg) * w, w being 1 - beta1 or beta1; then
   exp_avg_sq = exp_avg_sq * beta2 + (g * (1 - beta2)) * g; denom = sqrt(v) / bc2 + eps;
   param += (exp_avg * -step_size) / denom. `decay` is 1 - lr wd (decoupled) or wd. */
#define ADAM_KERNEL(NAME, T, SQRT)                                                       \
void NAME(int64_t n, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* vmax,        \
          double decay, double lerp_weight, double beta2, double one_minus_beta2,        \
          double bias_correction2_sqrt, double eps, double neg_step_size, int flags,     \
          int nthreads)                                                                  \
{                                                                                        \
    const T d = (T)decay, w = (T)lerp_weight, b2 = (T)beta2, c2 = (T)one_minus_beta2;    \
    const T bc2 = (T)bias_correction2_sqrt, e = (T)eps, s = (T)neg_step_size;            \
    const int maximize = flags & ADAM_MAXIMIZE, amsgrad = flags & ADAM_AMSGRAD;          \
    const int decoupled = (flags & ADAM_DECAY) && (flags & ADAM_DECOUPLED);              \
    const int l2 = (flags & ADAM_DECAY) && !(flags & ADAM_DECOUPLED);                    \
    const int by_weight = flags & ADAM_LERP_BY_WEIGHT;                                   \
    _Pragma("omp parallel for simd num_threads(nthreads)")                               \
    for (int64_t i = 0; i < n; i++) {                                                    \
        T g = maximize ? -grad[i] : grad[i];                                             \
        T p = param[i];                                                                  \
        if (decoupled)                                                                   \
            p = p * d;                                                                   \
        else if (l2)                                                                     \
            g = g + d * p;                                                               \
        T m = exp_avg[i];                                                                \
        T diff = (g - m) * w;                                                            \
        m = by_weight ? m + diff : g - diff;                                             \
        exp_avg[i] = m;                                                                  \
        T v = exp_avg_sq[i] * b2 + (g * c2) * g;                                         \
        exp_avg_sq[i] = v;                                                               \
        if (amsgrad) {                                                                   \
            T old = vmax[i];                                                             \
            v = (old >= v || old != old) ? old : v;                                      \
            vmax[i] = v;                                                                 \
        }                                                                                \
        T denom = SQRT(v) / bc2 + e;                                                     \
        param[i] = p + (m * s) / denom;                                                  \
    }                                                                                    \
}

ADAM_KERNEL(adam_f32, float, sqrtf)
ADAM_KERNEL(adam_f64, double, sqrt)

/* SGD flags: which of _sgd_arrays' branches run. */
enum { SGD_MAXIMIZE = 1, SGD_DECAY = 2, SGD_MOMENTUM = 4, SGD_DAMPENED = 8,
       SGD_NESTEROV = 16 };

/* g = -grad (maximize); g = g + wd p; buf = buf * momentum + g (* (1 - dampening));
   g = g + momentum buf (nesterov) or buf; param += g * -lr. */
#define SGD_KERNEL(NAME, T)                                                              \
void NAME(int64_t n, T* param, const T* grad, T* buf, double weight_decay,               \
          double momentum, double one_minus_dampening, double neg_lr, int flags,         \
          int nthreads)                                                                  \
{                                                                                        \
    const T wd = (T)weight_decay, mu = (T)momentum, a = (T)one_minus_dampening;          \
    const T lr = (T)neg_lr;                                                              \
    const int maximize = flags & SGD_MAXIMIZE, decay = flags & SGD_DECAY;                \
    const int has_buf = flags & SGD_MOMENTUM, dampened = flags & SGD_DAMPENED;           \
    const int nesterov = flags & SGD_NESTEROV;                                           \
    _Pragma("omp parallel for simd num_threads(nthreads)")                               \
    for (int64_t i = 0; i < n; i++) {                                                    \
        T g = maximize ? -grad[i] : grad[i];                                             \
        T p = param[i];                                                                  \
        if (decay)                                                                       \
            g = g + wd * p;                                                              \
        if (has_buf) {                                                                   \
            T b = buf[i] * mu + (dampened ? g * a : g);                                  \
            buf[i] = b;                                                                  \
            g = nesterov ? g + mu * b : b;                                               \
        }                                                                                \
        param[i] = p + g * lr;                                                           \
    }                                                                                    \
}

SGD_KERNEL(sgd_f32, float)
SGD_KERNEL(sgd_f64, double)
