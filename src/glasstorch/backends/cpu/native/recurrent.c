/* The pointwise math of the LSTM and GRU recurrences (backends/cpu/recurrent.py): the fused
   cells (lstm_cell_forward, lstm_cell_backward, gru_cell_forward, gru_cell_backward) and
   one time step of the whole-sequence layers around NumPy's W_hh products (_lstm_steps,
   _lstm_backward_steps, _gru_steps, _gru_backward_steps), one row of the batch at a time,
   each NumPy step's arithmetic in the same order. Sigmoid gates are
   0.5 + 0.5 tanh(x / 2) as there (scale s = 1/2, offset 1 - s; s = 1, offset 0 for tanh
   gates). tanh runs on whole LANES blocks, a row's last partial block on a zero-padded
   copy, so every element goes through the vector tanh whatever its position or the
   thread count; the rest is + - *, NumPy's bits. The cells' arrays are C-contiguous (N, k H),
   their biases (k H,) vectors; the steps take row strides. Outputs are distinct from inputs. */

enum { BIAS_INPUT = 1, BIAS_HIDDEN = 2, GRAD_HY = 4, GRAD_CY = 8 };

#define TANH_ROW(NAME, T, TANH)                                                          \
static inline void NAME##_block(T* x)                                                    \
{                                                                                        \
    _Pragma("omp simd")                                                                  \
    for (int j = 0; j < LANES; j++)                                                      \
        x[j] = TANH(x[j]);                                                               \
}                                                                                        \
static void NAME(T* x, int64_t n)                                                        \
{                                                                                        \
    int64_t full = n - n % LANES;                                                        \
    for (int64_t i = 0; i < full; i += LANES)                                            \
        NAME##_block(x + i);                                                             \
    if (full < n) {                                                                      \
        T tail[LANES] = {0};                                                             \
        memcpy(tail, x + full, (size_t)(n - full) * sizeof(T));                          \
        NAME##_block(tail);                                                              \
        memcpy(x + full, tail, (size_t)(n - full) * sizeof(T));                          \
    }                                                                                    \
}

TANH_ROW(tanh_row_f32, float, tanhf)
TANH_ROW(tanh_row_f64, double, tanh)

/* The GRU's r and z gates from their halved pre-activations A (N elements), in place:
   sigmoid(2 A) = 0.5 + 0.5 tanh(A). */
#define SIGMOID_FROM_HALF(T, TANH_ROW, A, N)                                             \
    do {                                                                                 \
        TANH_ROW(A, N);                                                                  \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < (N); j++)                                                \
            A[j] = A[j] * (T)0.5 + (T)0.5;                                               \
    } while (0)

/* The LSTM update from gate pre-activations A (rows i, f, g, o of H; i, f, o pre-scaled by
   1/2): the gates tanh(A) * s + (1 - s); C = f CP + i g; TC = tanh(C); HO = o TC (TC and HO
   may be one row). Shared by the cell and the whole-sequence step. */
#define LSTM_GATES(T, TANH_ROW, A, H, CP, C, TC, HO)                                     \
    do {                                                                                 \
        TANH_ROW(A, 4 * (H));                                                            \
        for (int q = 0; q < 4; q++) {                                                    \
            const T s = q == 2 ? (T)1 : (T)0.5, off = (T)1 - s;                          \
            _Pragma("omp simd")                                                          \
            for (int64_t j = q * (H); j < (q + 1) * (H); j++)                            \
                A[j] = A[j] * s + off;                                                   \
        }                                                                                \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < (H); j++) {                                              \
            T v = A[(H) + j] * CP[j] + A[j] * A[2 * (H) + j];                            \
            C[j] = v;                                                                    \
            TC[j] = v;                                                                   \
        }                                                                                \
        TANH_ROW(TC, H);                                                                 \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < (H); j++)                                                \
            HO[j] = A[3 * (H) + j] * TC[j];                                              \
    } while (0)

/* ws (N, 4H) = activations i, f, g, o of ig + hg (+ biases); cy = f cx + i g;
   hy = tanh(cy) o. Biases: (ib + hb) summed first when both are given. */
#define LSTM_CELL_FORWARD(NAME, T, TANH_ROW)                                             \
void NAME(int64_t n, int64_t H, const T* ig, const T* hg, const T* cx, const T* ib,      \
          const T* hb, T* hy, T* cy, T* ws, int flags, int nthreads)                     \
{                                                                                        \
    const int64_t G = 4 * H;                                                             \
    const int both = (flags & BIAS_INPUT) && (flags & BIAS_HIDDEN);                      \
    const T* one = (flags & BIAS_INPUT) ? ib : (flags & BIAS_HIDDEN) ? hb : NULL;        \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < n; r++) {                                                    \
        const T *x = ig + r * G, *h = hg + r * G, *c = cx + r * H;                       \
        T *a = ws + r * G, *hr = hy + r * H, *cr = cy + r * H;                           \
        for (int q = 0; q < 4; q++) {                                                    \
            const T s = q == 2 ? (T)1 : (T)0.5;                                          \
            const int64_t o = q * H;                                                     \
            if (both) {                                                                  \
                _Pragma("omp simd")                                                      \
                for (int64_t j = o; j < o + H; j++)                                      \
                    a[j] = ((x[j] + h[j]) + (ib[j] + hb[j])) * s;                        \
            } else if (one) {                                                            \
                _Pragma("omp simd")                                                      \
                for (int64_t j = o; j < o + H; j++)                                      \
                    a[j] = ((x[j] + h[j]) + one[j]) * s;                                 \
            } else {                                                                     \
                _Pragma("omp simd")                                                      \
                for (int64_t j = o; j < o + H; j++)                                      \
                    a[j] = (x[j] + h[j]) * s;                                            \
            }                                                                            \
        }                                                                                \
        LSTM_GATES(T, TANH_ROW, a, H, c, cr, hr, hr);                                    \
    }                                                                                    \
}

LSTM_CELL_FORWARD(lstm_cell_forward_f32, float, tanh_row_f32)
LSTM_CELL_FORWARD(lstm_cell_forward_f64, double, tanh_row_f64)

/* With t = tanh(cy): dc = ((1 - t t) o) ghy (+ gcy) (gcy alone, or 0, without ghy);
   d_gates = (dc g, dc cx, dc i, ghy t (0 without ghy)) times the slopes
   ((1 - a) a for i, f, o, 1 - g g for g); d_cx = dc f. `tanh_cy` is (N, H) scratch. */
#define LSTM_CELL_BACKWARD(NAME, T, TANH_ROW)                                            \
void NAME(int64_t n, int64_t H, const T* ghy, const T* gcy, const T* cx, const T* cy,    \
          const T* ws, T* d_gates, T* d_cx, T* tanh_cy, int flags, int nthreads)         \
{                                                                                        \
    const int64_t G = 4 * H;                                                             \
    const int has_hy = flags & GRAD_HY, has_cy = flags & GRAD_CY;                        \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < n; r++) {                                                    \
        const T *a = ws + r * G, *c = cx + r * H;                                        \
        const T *gh = has_hy ? ghy + r * H : NULL, *gc = has_cy ? gcy + r * H : NULL;    \
        T *d = d_gates + r * G, *dcx = d_cx + r * H, *t = tanh_cy + r * H;               \
        memcpy(t, cy + r * H, (size_t)H * sizeof(T));                                    \
        TANH_ROW(t, H);                                                                  \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            const T i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];          \
            T dc, d_o;                                                                   \
            if (has_hy) {                                                                \
                d_o = gh[j] * t[j];                                                      \
                dc = (((T)1 - t[j] * t[j]) * o) * gh[j];                                 \
                if (has_cy)                                                              \
                    dc = dc + gc[j];                                                     \
            } else {                                                                     \
                d_o = 0;                                                                 \
                dc = has_cy ? gc[j] : (T)0;                                              \
            }                                                                            \
            d[j] = (g * dc) * (((T)1 - i) * i);                                          \
            d[H + j] = (c[j] * dc) * (((T)1 - f) * f);                                   \
            d[2 * H + j] = (i * dc) * ((T)1 - g * g);                                    \
            d[3 * H + j] = d_o * (((T)1 - o) * o);                                       \
            dcx[j] = dc * f;                                                             \
        }                                                                                \
    }                                                                                    \
}

LSTM_CELL_BACKWARD(lstm_cell_backward_f32, float, tanh_row_f32)
LSTM_CELL_BACKWARD(lstm_cell_backward_f64, double, tanh_row_f64)

/* ws (N, 5H) = r, z, n, hx, hn with rz = sigmoid(ig + hg (+ ib) (+ hb)),
   hn = W_hn h (+ b_hn), n = tanh(ig_n (+ ib_n) + r hn); hy = (hx - n) z + n. */
#define GRU_CELL_FORWARD(NAME, T, TANH_ROW)                                              \
void NAME(int64_t n, int64_t H, const T* ig, const T* hg, const T* hx, const T* ib,      \
          const T* hb, T* hy, T* ws, int flags, int nthreads)                            \
{                                                                                        \
    const int has_ib = flags & BIAS_INPUT, has_hb = flags & BIAS_HIDDEN;                 \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < n; r++) {                                                    \
        const T *x = ig + r * 3 * H, *h = hg + r * 3 * H, *hp = hx + r * H;              \
        T *a = ws + r * 5 * H, *out = hy + r * H;                                        \
        T *nn = a + 2 * H, *saved = a + 3 * H, *hn = a + 4 * H;                          \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < 2 * H; j++) {                                            \
            T v = x[j] + h[j];                                                           \
            if (has_ib)                                                                  \
                v = v + ib[j];                                                           \
            if (has_hb)                                                                  \
                v = v + hb[j];                                                           \
            a[j] = v * (T)0.5;                                                           \
        }                                                                                \
        SIGMOID_FROM_HALF(T, TANH_ROW, a, 2 * H);                                        \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            T m = h[2 * H + j], v = x[2 * H + j];                                        \
            if (has_hb)                                                                  \
                m = m + hb[2 * H + j];                                                   \
            if (has_ib)                                                                  \
                v = v + ib[2 * H + j];                                                   \
            hn[j] = m;                                                                   \
            nn[j] = v + a[j] * m;                                                        \
        }                                                                                \
        TANH_ROW(nn, H);                                                                 \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            saved[j] = hp[j];                                                            \
            out[j] = (hp[j] - nn[j]) * a[H + j] + nn[j];                                 \
        }                                                                                \
    }                                                                                    \
}

GRU_CELL_FORWARD(gru_cell_forward_f32, float, tanh_row_f32)
GRU_CELL_FORWARD(gru_cell_forward_f64, double, tanh_row_f64)

/* d_n = (ghy (1 - z)) (1 - n n); d_ig = ((d_n hn) (r (1 - r)), (ghy (hx - n)) (z (1 - z)),
   d_n); d_hg = (d_ig r, d_ig z, d_n r); d_hx = ghy z. */
#define GRU_CELL_BACKWARD(NAME, T)                                                       \
void NAME(int64_t n, int64_t H, const T* ghy, const T* ws, T* d_ig, T* d_hg, T* d_hx,    \
          int nthreads)                                                                  \
{                                                                                        \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t row = 0; row < n; row++) {                                              \
        const T *a = ws + row * 5 * H, *g = ghy + row * H;                               \
        T *di = d_ig + row * 3 * H, *dh = d_hg + row * 3 * H, *dx = d_hx + row * H;      \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            const T r = a[j], z = a[H + j], nv = a[2 * H + j], hp = a[3 * H + j];        \
            const T hn = a[4 * H + j];                                                   \
            const T dn = (g[j] * ((T)1 - z)) * ((T)1 - nv * nv);                         \
            const T dr = (dn * hn) * (r * ((T)1 - r));                                   \
            const T dz = (g[j] * (hp - nv)) * (z * ((T)1 - z));                          \
            di[j] = dr;                                                                  \
            di[H + j] = dz;                                                              \
            di[2 * H + j] = dn;                                                          \
            dh[j] = dr;                                                                  \
            dh[H + j] = dz;                                                              \
            dh[2 * H + j] = dn * r;                                                      \
            dx[j] = g[j] * z;                                                            \
        }                                                                                \
    }                                                                                    \
}

GRU_CELL_BACKWARD(gru_cell_backward_f32, float)
GRU_CELL_BACKWARD(gru_cell_backward_f64, double)

/* One time step of the whole-sequence LSTM (recurrent.py _lstm_steps, no projection), after
   the product h W_hh^T (gates pre-scaled by 1/2 for i, f, o) is in the workspace rows:
   per row of `bs`, workspace i f g o c tanh(c) (row stride ws_stride):
   gates = tanh(gates + gi) * s + (1 - s); c = f c_prev + i g; out = o tanh(c).
   Strides are in elements; each row's H (4H) elements contiguous. */
#define LSTM_STEP(NAME, T, TANH_ROW)                                                     \
void NAME(int64_t bs, int64_t H, const T* gi, int64_t gi_stride, T* ws,                  \
          int64_t ws_stride, const T* c_prev, int64_t c_stride, T* out,                  \
          int64_t out_stride, int nthreads)                                              \
{                                                                                        \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < bs; r++) {                                                   \
        const T *x = gi + r * gi_stride, *cp = c_prev + r * c_stride;                    \
        T *a = ws + r * ws_stride, *c = a + 4 * H, *t = a + 5 * H;                       \
        T *h = out + r * out_stride;                                                     \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < 4 * H; j++)                                              \
            a[j] = a[j] + x[j];                                                          \
        LSTM_GATES(T, TANH_ROW, a, H, cp, c, t, h);                                      \
    }                                                                                    \
}

LSTM_STEP(lstm_step_f32, float, tanh_row_f32)
LSTM_STEP(lstm_step_f64, double, tanh_row_f64)

/* One reverse time step of the whole-sequence LSTM's backward (recurrent.py
   _lstm_backward_steps, no projection), before the product with W_hh: per row of `bs`,
   d_h = dh (+ g_out; GRAD_HY says it is given); dct = d_h through_c + dc;
   d_pre = (k_i dct, k_f dct, k_g dct, d_h k_o); dc = dct f, f from the workspace rows
   (stride ws_stride). The row arrays start at the step's first row; dh and dc at row 0. */
#define LSTM_BACKWARD_STEP(NAME, T)                                                      \
void NAME(int64_t bs, int64_t H, const T* dh, const T* g_out, T* d_h,                    \
          const T* through_c, T* dc, const T* k, const T* k_o, T* d_pre, const T* f,     \
          int64_t ws_stride, int flags, int nthreads)                                    \
{                                                                                        \
    const int has_out = flags & GRAD_HY;                                                 \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < bs; r++) {                                                   \
        const T *d = dh + r * H, *tc = through_c + r * H, *kr = k + r * 3 * H;           \
        const T *ko = k_o + r * H, *fr = f + r * ws_stride;                              \
        const T *go = has_out ? g_out + r * H : NULL;                                    \
        T *dhr = d_h + r * H, *dcr = dc + r * H, *p = d_pre + r * 4 * H;                 \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            const T g = has_out ? d[j] + go[j] : d[j];                                   \
            const T dct = g * tc[j] + dcr[j];                                            \
            dhr[j] = g;                                                                  \
            p[j] = kr[j] * dct;                                                          \
            p[H + j] = kr[H + j] * dct;                                                  \
            p[2 * H + j] = kr[2 * H + j] * dct;                                          \
            p[3 * H + j] = g * ko[j];                                                    \
            dcr[j] = dct * fr[j];                                                        \
        }                                                                                \
    }                                                                                    \
}

LSTM_BACKWARD_STEP(lstm_backward_step_f32, float)
LSTM_BACKWARD_STEP(lstm_backward_step_f64, double)

/* One time step of the whole-sequence GRU (recurrent.py _gru_steps) after the product
   g = h W_hh^T (r, z columns pre-scaled by 1/2): per row of `bs`, workspace r z n hn
   (row stride 4H): rz = tanh(gi + g) 0.5 + 0.5; hn = g_n (+ b_hn, BIAS_HIDDEN);
   n = tanh(r hn + gi_n); out = (h - n) z + n. gi, g rows 3H apart; h, out rows H. */
#define GRU_STEP(NAME, T, TANH_ROW)                                                      \
void NAME(int64_t bs, int64_t H, const T* gi, const T* gh, const T* b_hn, const T* h,    \
          T* ws, T* out, int flags, int nthreads)                                        \
{                                                                                        \
    const int has_b = flags & BIAS_HIDDEN;                                               \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t r = 0; r < bs; r++) {                                                   \
        const T *x = gi + r * 3 * H, *g = gh + r * 3 * H, *hp = h + r * H;               \
        T *a = ws + r * 4 * H, *nn = a + 2 * H, *hn = a + 3 * H, *o = out + r * H;       \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < 2 * H; j++)                                              \
            a[j] = x[j] + g[j];                                                          \
        SIGMOID_FROM_HALF(T, TANH_ROW, a, 2 * H);                                        \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            const T m = has_b ? g[2 * H + j] + b_hn[j] : g[2 * H + j];                   \
            hn[j] = m;                                                                   \
            nn[j] = a[j] * m + x[2 * H + j];                                             \
        }                                                                                \
        TANH_ROW(nn, H);                                                                 \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++)                                                  \
            o[j] = (hp[j] - nn[j]) * a[H + j] + nn[j];                                   \
    }                                                                                    \
}

GRU_STEP(gru_step_f32, float, tanh_row_f32)
GRU_STEP(gru_step_f64, double, tanh_row_f64)

/* One reverse step of the whole-sequence GRU's backward (recurrent.py _gru_backward_steps)
   before the W_hh product: per row, d = dh (+ g_out, GRAD_HY); d_gi = p d (p: (3, H) per
   row); d_gh = d_gi (1, 1, r); direct = d z (r, z from workspace rows 4H apart). */
#define GRU_BACKWARD_STEP(NAME, T)                                                       \
void NAME(int64_t bs, int64_t H, const T* dh, const T* g_out, const T* p, const T* ws,   \
          T* d_gi, T* d_gh, T* direct, int flags, int nthreads)                          \
{                                                                                        \
    const int has_out = flags & GRAD_HY;                                                 \
    _Pragma("omp parallel for num_threads(nthreads)")                                    \
    for (int64_t row = 0; row < bs; row++) {                                             \
        const T *d0 = dh + row * H, *pr = p + row * 3 * H, *a = ws + row * 4 * H;        \
        const T *go = has_out ? g_out + row * H : NULL;                                  \
        T *di = d_gi + row * 3 * H, *dg = d_gh + row * 3 * H, *dr = direct + row * H;    \
        _Pragma("omp simd")                                                              \
        for (int64_t j = 0; j < H; j++) {                                                \
            const T d = has_out ? d0[j] + go[j] : d0[j];                                 \
            const T dn = pr[2 * H + j] * d;                                              \
            di[j] = pr[j] * d;                                                           \
            di[H + j] = pr[H + j] * d;                                                   \
            di[2 * H + j] = dn;                                                          \
            dg[j] = di[j];                                                               \
            dg[H + j] = di[H + j];                                                       \
            dg[2 * H + j] = dn * a[j];                                                   \
            dr[j] = d * a[H + j];                                                        \
        }                                                                                \
    }                                                                                    \
}

GRU_BACKWARD_STEP(gru_backward_step_f32, float)
GRU_BACKWARD_STEP(gru_backward_step_f64, double)
