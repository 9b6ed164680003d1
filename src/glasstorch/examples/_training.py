"""What both examples do around their models: a command line that explains itself, a
progress bar with loss and throughput, and a checkpoint that a later run resumes from."""
from __future__ import annotations

import argparse
import os
import time

import glasstorch as torch


class _HelpFormatter(argparse.RawDescriptionHelpFormatter,
                     argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and every option's default."""


def example_parser(name: str, doc: str) -> argparse.ArgumentParser:
    """A parser for `python -m glasstorch.examples.<name>` whose --help is the example's
    docstring followed by its options."""
    return argparse.ArgumentParser(prog=f"python -m glasstorch.examples.{name}",
                                   description=doc.strip(), formatter_class=_HelpFormatter)


def _tqdm():
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:
        raise SystemExit("the examples draw their progress bar with tqdm, which is not "
                         "installed: pip install 'glasstorch[examples]'") from None
    return tqdm


class Progress:
    """A tqdm bar over training steps showing the running loss and samples per second."""

    def __init__(self, total: int, desc: str, initial: int = 0):
        self.bar = _tqdm()(total=total, initial=initial, desc=desc, unit="step",
                        dynamic_ncols=True)
        self.start = time.perf_counter()
        self.samples = 0
        self.loss = None

    def step(self, loss: float, samples: int) -> None:
        self.samples += samples
        self.loss = loss if self.loss is None else 0.9 * self.loss + 0.1 * loss
        rate = self.samples / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix(loss=f"{self.loss:.4f}", samples_per_s=f"{rate:,.0f}")
        self.bar.update(1)

    def write(self, line: str) -> None:
        """Print a line above the bar without breaking it."""
        self.bar.write(line)

    def close(self) -> float:
        """Close the bar; the seconds it was open."""
        self.bar.close()
        return time.perf_counter() - self.start


def save_checkpoint(path: str, model, optimizer, scheduler=None, **extra) -> None:
    """Model, optimizer (and scheduler) state plus `extra` (epoch, step, ...), atomically."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), **extra}
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    torch.save(state, path)


def load_checkpoint(path: str, model, optimizer, scheduler=None, map_location=None) -> dict:
    """Restore what save_checkpoint wrote (tensors onto `map_location`); returns the extra
    entries."""
    if not os.path.exists(path):
        raise SystemExit(f"--resume: no checkpoint at {path!r}; run once without --resume")
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state.pop("model"))
    optimizer.load_state_dict(state.pop("optimizer"))
    if scheduler is not None:
        scheduler.load_state_dict(state.pop("scheduler"))
    return state
