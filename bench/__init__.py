"""glasstorch against PyTorch, side by side: `python -m bench`.

Every workload runs in both libraries on identical inputs (seeded NumPy arrays; model
weights copied from a seeded torch build), is checked to give the same result, and is
timed interleaved (warm-up, then rounds A B A B ..., median per call), each library in a
worker process of its own (worker.py) unless `--one-process`. `--list` names the
workloads, `--only` picks some, `--quick` is a smoke run, `--write` updates the generated
section of BENCHMARKS.md; `--device cuda` runs the GPU suite instead. Modules: harness
(check and timing, the worker pool), worker (one library's timing process), workloads
(operators, DataLoader), training (training steps), gpu (the GPU suite), peak_memory (RSS of a training step, one fresh process per library), machine
(what was measured on), report (tables), cli.
bench/allocator.py and bench/checkpoint_memory.py are separate scripts about glasstorch's
own allocators.
"""
