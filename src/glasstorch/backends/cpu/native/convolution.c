/* im2col and col2im of 2-d convolution over C-contiguous (n, c, ih, iw) images: the copy
   `columns` of convolution.py makes through a strided view of the zero-padded input, and
   the adds of col2im_into / col2im_add, a plane at a time in the cache.

   The columns of image b, channel ch, kernel offset (ky, kx) are one row of oh * ow
   positions, contiguous, at cols + b * sb + ((ch * kh + ky) * kw + kx) * sr (sb, sr in
   elements: the caller's layout, batch-first or batch-major); position (oy, ox) reads the
   image at (oy * sh - ph + ky * dh, ox * sw - pw + kx * dw), 0 outside it. Where there is
   padding, a plane is read from (im2col) or summed into (col2im) a copy with a zero border,
   `pad` (one (ih + 2 ph) x (iw + 2 pw) plane per thread), so that every row is a plain
   loop: short rows (14 elements for 14x14 planes) cost little more than memcpy. col2im adds
   every column back where it was read, into a zeroed plane, kernel offset by kernel offset
   (NumPy's order, so the same sums bit for bit), then keeps the inside. (b, ch) planes run
   in parallel; each image plane is written by one thread. The `omp simd` loops are also
   kept from being turned into memcpy calls (14-element calls cost 5x the loop). */
#include <omp.h>

/* The (b, ch) plane's row of kernel offset (ky, kx) in cols. */
#define COL_ROW(cols) ((cols) + (plane / c) * sb + (((plane % c) * kh + ky) * kw + kx) * sr)

/* Rows of up to 32 elements are copied (added) as 8, 16 or 32, where the plane is read
   from (summed into) `pad`, SLACK elements longer than a bordered plane. */
#define SLACK 32
#define WIDTH(sw, ow) ((sw) != 1 || (ow) > 32 ? 0 : (ow) <= 8 ? 8 : (ow) <= 16 ? 16 : 32)

/* A row of n <= w elements copied as w (a constant: one or two vector moves, where a loop
   of a run-time count costs several times more for 7-28 elements); w - n elements more are
   read from s and written after d. */
#define WIDE_ROW(d, s, w)                                                              \
    _Pragma("omp simd")                                                                \
    for (int64_t j = 0; j < (w); j++)                                                  \
        (d)[j] = (s)[j];

/* A row of n <= w elements added as w: the w - n elements after it get +0.0, which leaves
   any sum unchanged (a sum from +0.0 is never -0.0). */
#define WIDE_ADD(T, d, s, n, w)                                                          \
    _Pragma("omp simd")                                                                \
    for (int64_t j = 0; j < (w); j++) {                                                \
        T v = (s)[j];                                                                  \
        (d)[j] += j < (n) ? v : (T)0;                                                  \
    }

#define IM2COL(NAME, T)                                                                \
void NAME(int64_t n, int64_t c, int64_t ih, int64_t iw, int64_t oh, int64_t ow,        \
          int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,      \
          int64_t dh, int64_t dw, int64_t sb, int64_t sr, const T* x, T* cols, T* pad, \
          int nthreads)                                                                \
{                                                                                      \
    int64_t hp = ih + 2 * ph, wp = iw + 2 * pw;                                        \
    int64_t wide = WIDTH(sw, ow);                                                      \
    bool copied = ph || pw || wide;                                                    \
    _Pragma("omp parallel num_threads(nthreads)")                                      \
    {                                                                                  \
        T* own = copied ? pad + (int64_t)omp_get_thread_num() * (hp * wp + SLACK) : NULL; \
        if (own)                                                                       \
            for (int64_t e = 0; e < hp * wp + SLACK; e++)                                 \
                own[e] = 0;                                                            \
        _Pragma("omp for")                                                             \
        for (int64_t plane = 0; plane < n * c; plane++) {                              \
            const T* xp = x + plane * ih * iw;                                         \
            const T* src = xp;                                                         \
            int64_t pitch = iw;                                                        \
            if (own) {          /* the border stays zero: only the inside is written */ \
                for (int64_t h = 0; h < ih; h++) {                                     \
                    T* r = own + (h + ph) * wp + pw;                                   \
                    _Pragma("omp simd")                                                \
                    for (int64_t e = 0; e < iw; e++)                                   \
                        r[e] = xp[h * iw + e];                                         \
                }                                                                      \
                src = own;                                                             \
                pitch = wp;                                                            \
            }                                                                          \
            for (int64_t ky = 0; ky < kh; ky++)                                        \
                for (int64_t kx = 0; kx < kw; kx++) {                                  \
                    T* row = COL_ROW(cols);                                            \
                    const T* s0 = src + ky * dh * pitch + kx * dw;                     \
                    int64_t oy = 0;                                                    \
                    /* rows whose spill later rows overwrite, read from own */         \
                    if (wide == 8)                                                     \
                        for (; oy * ow + 8 <= oh * ow; oy++) {                         \
                            WIDE_ROW(row + oy * ow, s0 + oy * sh * pitch, 8)           \
                        }                                                              \
                    else if (wide == 16)                                               \
                        for (; oy * ow + 16 <= oh * ow; oy++) {                        \
                            WIDE_ROW(row + oy * ow, s0 + oy * sh * pitch, 16)          \
                        }                                                              \
                    else if (wide == 32)                                               \
                        for (; oy * ow + 32 <= oh * ow; oy++) {                        \
                            WIDE_ROW(row + oy * ow, s0 + oy * sh * pitch, 32)          \
                        }                                                              \
                    for (; oy < oh; oy++) {                                            \
                        T* d = row + oy * ow;                                          \
                        const T* s = s0 + oy * sh * pitch;                             \
                        if (sw == 1) {                                                 \
                            _Pragma("omp simd")                                        \
                            for (int64_t ox = 0; ox < ow; ox++)                        \
                                d[ox] = s[ox];                                         \
                        } else {                                                       \
                            _Pragma("omp simd")                                        \
                            for (int64_t ox = 0; ox < ow; ox++)                        \
                                d[ox] = s[ox * sw];                                    \
                        }                                                              \
                    }                                                                  \
                }                                                                      \
        }                                                                              \
    }                                                                                  \
}

#define COL2IM(NAME, T)                                                                \
void NAME(int64_t n, int64_t c, int64_t ih, int64_t iw, int64_t oh, int64_t ow,        \
          int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,      \
          int64_t dh, int64_t dw, int64_t sb, int64_t sr, const T* cols, T* x, T* pad, \
          int nthreads)                                                                \
{                                                                                      \
    int64_t hp = ih + 2 * ph, wp = iw + 2 * pw;                                        \
    int64_t wide = WIDTH(sw, ow);                                                      \
    bool copied = ph || pw || wide;                                                    \
    _Pragma("omp parallel num_threads(nthreads)")                                      \
    {                                                                                  \
        T* own = copied ? pad + (int64_t)omp_get_thread_num() * (hp * wp + SLACK) : NULL; \
        _Pragma("omp for")                                                             \
        for (int64_t plane = 0; plane < n * c; plane++) {                              \
            T* xp = x + plane * ih * iw;                                               \
            T* dst = own ? own : xp;                                                   \
            int64_t pitch = own ? wp : iw, size = own ? hp * wp + SLACK : ih * iw;     \
            _Pragma("omp simd")                                                        \
            for (int64_t e = 0; e < size; e++)                                         \
                dst[e] = 0;                                                            \
            for (int64_t ky = 0; ky < kh; ky++)                                        \
                for (int64_t kx = 0; kx < kw; kx++) {                                  \
                    const T* row = COL_ROW(cols);                                      \
                    T* d0 = dst + ky * dh * pitch + kx * dw;                           \
                    int64_t oy = 0;                                                    \
                    /* rows read within the block, summed into own */                  \
                    if (wide == 8)                                                     \
                        for (; oy * ow + 8 <= oh * ow; oy++) {                         \
                            WIDE_ADD(T, d0 + oy * sh * pitch, row + oy * ow, ow, 8)       \
                        }                                                              \
                    else if (wide == 16)                                               \
                        for (; oy * ow + 16 <= oh * ow; oy++) {                        \
                            WIDE_ADD(T, d0 + oy * sh * pitch, row + oy * ow, ow, 16)      \
                        }                                                              \
                    else if (wide == 32)                                               \
                        for (; oy * ow + 32 <= oh * ow; oy++) {                        \
                            WIDE_ADD(T, d0 + oy * sh * pitch, row + oy * ow, ow, 32)      \
                        }                                                              \
                    for (; oy < oh; oy++) {                                            \
                        const T* s = row + oy * ow;                                    \
                        T* d = d0 + oy * sh * pitch;                                   \
                        if (sw == 1) {                                                 \
                            _Pragma("omp simd")                                        \
                            for (int64_t ox = 0; ox < ow; ox++)                        \
                                d[ox] += s[ox];                                        \
                        } else {                                                       \
                            for (int64_t ox = 0; ox < ow; ox++)                        \
                                d[ox * sw] += s[ox];                                   \
                        }                                                              \
                    }                                                                  \
                }                                                                      \
            if (own)                                                                   \
                for (int64_t h = 0; h < ih; h++) {                                     \
                    const T* r = own + (h + ph) * wp + pw;                             \
                    _Pragma("omp simd")                                                \
                    for (int64_t e = 0; e < iw; e++)                                   \
                        xp[h * iw + e] = r[e];                                         \
                }                                                                      \
        }                                                                              \
    }                                                                                  \
}

IM2COL(im2col_f32, float)
IM2COL(im2col_f64, double)
COL2IM(col2im_f32, float)
COL2IM(col2im_f64, double)
