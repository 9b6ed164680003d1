/* The thread pool's interface (pool.c): a kernel cuts its work into numbered pieces and
   hands fn(ctx, piece) to the pool's gt_run_pieces, whose address Python passes in as a
   `runner` argument (native.runner()). */
typedef void (*piece_fn)(const void* ctx, int64_t piece);
typedef void (*run_pieces_fn)(piece_fn fn, const void* ctx, int64_t pieces, int nthreads);
