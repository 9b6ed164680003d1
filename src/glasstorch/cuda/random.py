"""The GPUs' default random generators (torch.cuda.manual_seed and friends).

Each GPU has its own default generator, separate from the CPU's, so seeding one does not
move the other. Generators exist (and can be seeded) before CUDA is initialized, and
without a GPU seeding is a no-op, as in PyTorch.
"""
from __future__ import annotations

from ..backends.cuda import runtime
from ..random import Generator


class _DefaultGenerators:
    """One generator per GPU, made when first asked for, seeded like the others."""

    def __init__(self):
        self._generators: dict = {}
        self._seed = None

    def __getitem__(self, index: int) -> Generator:
        g = self._generators.get(index)
        if g is None:
            g = self._generators[index] = Generator(f"cuda:{index}")
            if self._seed is not None:
                g.manual_seed(self._seed)
        return g

    def __len__(self):
        return runtime.device_count()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def seed_all(self, seed: int) -> None:
        self._seed = seed
        for g in self._generators.values():
            g.manual_seed(seed)


default_generators = _DefaultGenerators()


def _index(device) -> int:
    if not runtime.is_available():
        return 0
    return runtime.index_of(device)


def manual_seed(seed) -> None:
    """Seed the current GPU's generator."""
    default_generators[_index(None)].manual_seed(int(seed))


def manual_seed_all(seed) -> None:
    """Seed every GPU's generator (those made later too)."""
    default_generators.seed_all(int(seed))


def seed() -> None:
    default_generators[_index(None)].seed()


def seed_all() -> None:
    default_generators.seed_all(default_generators[0].seed())


def initial_seed() -> int:
    return default_generators[_index(None)].initial_seed()


def get_rng_state(device="cuda"):
    return default_generators[_index(device)].get_state()


def set_rng_state(new_state, device="cuda") -> None:
    default_generators[_index(device)].set_state(new_state)


def get_rng_state_all() -> list:
    return [g.get_state() for g in default_generators]


def set_rng_state_all(new_states) -> None:
    for g, state in zip(default_generators, new_states):
        g.set_state(state)
