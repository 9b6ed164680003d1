"""torch.AggregationType (torch.SUM, torch.AVG): how torch.monitor's statistics combine the
values logged in one window."""
from __future__ import annotations

from enum import IntEnum

__all__ = ["AggregationType", "SUM", "AVG"]


class AggregationType(IntEnum):
    SUM = 0
    AVG = 1


SUM, AVG = AggregationType.SUM, AggregationType.AVG
