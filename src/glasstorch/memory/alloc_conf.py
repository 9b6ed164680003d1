"""GLASSTORCH_ALLOC_CONF: the caching allocator's options (PyTorch's PYTORCH_ALLOC_CONF).

Syntax `key:value,key:[a:b,c:d]`; whitespace is ignored. Malformed values raise ValueError
naming the key and the value, so a typo never silently falls back to a default.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

MB = 1 << 20
UNLIMITED = (1 << 64) - 1          # SIZE_MAX: "no max_split_size"
ENV_VAR = "GLASSTORCH_ALLOC_CONF"
KNOWN_KEYS = ("max_split_size_mb", "max_non_split_rounding_mb", "garbage_collection_threshold",
              "roundup_power2_divisions", "expandable_segments")


@dataclass
class AllocConf:
    """Parsed options; the defaults are PyTorch's."""
    max_split_size: int = UNLIMITED
    max_non_split_rounding_size: int = 20 * MB
    garbage_collection_threshold: float = 0.0
    # One entry per power-of-two interval from 1 MiB (index 0) up: divisions, 0 = off.
    roundup_power2_divisions: list = field(default_factory=lambda: [0] * 64)

    def divisions_for(self, size: int) -> int:
        """The roundup_power2_divisions that apply to `size` (its power-of-two interval)."""
        interval = max(size.bit_length() - 1 - 20, 0)   # log2(size) - log2(1 MiB)
        return self.roundup_power2_divisions[min(interval, 63)]


def _error(key, value, why):
    return ValueError(f"{ENV_VAR}: invalid value {value!r} for {key}: {why}")


def _int(key, text):
    if not re.fullmatch(r"\d+", text):
        raise _error(key, text, "expected a non-negative integer")
    return int(text)


def _power_of_two_divisions(key, text):
    n = _int(key, text)
    if n != 0 and n & (n - 1):
        raise _error(key, text, "divisions must be a power of 2 (or 0)")
    return n


def _parse_divisions(text):
    """`4` for every size, or `[256:1,512:2,>:8]` per interval (keys in MB, powers of two)."""
    key = "roundup_power2_divisions"
    table = [0] * 64
    if not text.startswith("["):
        return [_power_of_two_divisions(key, text)] * 64
    if not text.endswith("]"):
        raise _error(key, text, "missing ']'")
    last = 0
    for item in filter(None, text[1:-1].split(",")):
        bound, sep, value = item.partition(":")
        if not sep:
            raise _error(key, item, "expected 'size_mb:divisions' or '>:divisions'")
        div = _power_of_two_divisions(key, value)
        if bound == ">":
            table[last:] = [div] * (64 - last)
            continue
        mb = _int(key, bound)
        if mb == 0 or mb & (mb - 1):
            raise _error(key, bound, "interval sizes must be powers of 2 in MB")
        index = mb.bit_length() - 1
        table[last:index + 1] = [div] * (index + 1 - last)
        last = index + 1
    return table


def parse_alloc_conf(text: str | None = None) -> AllocConf:
    """Options from `text`, or from the environment variable when `text` is None."""
    if text is None:
        text = os.environ.get(ENV_VAR, "")
    conf = AllocConf()
    text = re.sub(r"\s+", "", text)
    # Split on commas outside brackets.
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\]?)?[^,]*", text):
        key, sep, value = item.partition(":")
        if not sep or not value:
            raise ValueError(f"{ENV_VAR}: expected 'key:value', got {item!r}")
        if key == "max_split_size_mb":
            mb = _int(key, value)
            if mb <= 20:
                raise _error(key, value, "CachingAllocator option max_split_size_mb too small, "
                             "must be > 20")
            conf.max_split_size = mb * MB
        elif key == "max_non_split_rounding_mb":
            conf.max_non_split_rounding_size = _int(key, value) * MB
        elif key == "garbage_collection_threshold":
            try:
                threshold = float(value)
            except ValueError:
                raise _error(key, value, "expected a number") from None
            if not 0.0 < threshold < 1.0:
                raise _error(key, value, "must be in (0.0, 1.0)")
            conf.garbage_collection_threshold = threshold
        elif key == "roundup_power2_divisions":
            conf.roundup_power2_divisions = _parse_divisions(value)
        elif key == "expandable_segments":
            if value not in ("True", "False"):
                raise _error(key, value, "expected True or False")
            if value == "True":
                raise ValueError(f"{ENV_VAR}: expandable_segments:True is not supported by "
                                 "glasstorch's caching allocator")
        else:
            raise ValueError(f"{ENV_VAR}: unknown option {key!r} (known: "
                             f"{', '.join(KNOWN_KEYS)})")
    return conf
