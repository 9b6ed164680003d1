"""binomial has no derivative: its output requires grad when count does, and backward
raises, as PyTorch's."""
from __future__ import annotations

from ..derivative import derivative_not_implemented
from . import binomial

derivative_not_implemented(binomial.binomial)
