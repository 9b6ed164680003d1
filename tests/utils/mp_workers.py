"""Functions test_multiprocessing.py spawns (importable by a spawned interpreter)."""
import glasstorch as torch


def put_square(i, queue):
    queue.put((i, torch.full((3,), float(i)) ** 2))


def fail_on_one(i):
    if i == 1:
        raise ValueError("worker one is unhappy")
