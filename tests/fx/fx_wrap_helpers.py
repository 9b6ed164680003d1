"""A module-level `wrap()` for tests/fx: wrap must be called at module scope."""
import glasstorch.fx as fx


def scaled_sum(x, scale):
    return x.sum() * scale


fx.wrap("scaled_sum")


def forward(x):
    return x + scaled_sum(x, 2)


def trace_scaled():
    return fx.symbolic_trace(forward)
