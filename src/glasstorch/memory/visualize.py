"""Pictures of a recorded allocation history: memory over time, stacked by allocation site.

`render_html` writes one self-contained page (inline SVG, a few lines of inline JS, no
network) and `render_png` a matplotlib figure (matplotlib is optional). Both read a
snapshot from `glasstorch.memory._snapshot()`, a file from `_dump_snapshot`, or one from
torch.cuda.memory._dump_snapshot. An allocation's site is the innermost frame outside
glasstorch (the user's line); the `top` sites with the highest peaks get their own band and
the rest share "other". From the shell:

    python -m glasstorch.memory.visualize snapshot.pickle -o out.html   (or out.png)
"""
from __future__ import annotations

import argparse
import html
import pickle

from .history import _user_frame
from .errors import format_size

__all__ = ["load_snapshot", "timeline", "render_html", "render_png"]

OTHER = "other"
NO_STACK = "(no stack recorded)"
MAX_POINTS = 1500
_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#d62728")


class _NoGlobals(pickle.Unpickler):
    """Snapshots are plain dicts, lists and numbers: refuse anything that would run code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"a memory snapshot holds no {module}.{name}; "
                                     "refusing to load it")


def load_snapshot(source) -> dict:
    """A snapshot dict from a dict, a path or a binary file (pickles are read safely)."""
    if isinstance(source, dict):
        return source
    if hasattr(source, "read"):
        return _NoGlobals(source).load()
    with open(source, "rb") as f:
        return _NoGlobals(f).load()


def _site(frames) -> str:
    f = _user_frame(frames)
    return NO_STACK if f is None else f"{f['filename']}:{f['line']} ({f['name']})"


class Timeline:
    """Live bytes per site after each trace event, and per-site totals for the table."""

    def __init__(self, times, series, sites):
        self.times = times          # event index of each sample
        self.series = series        # {band name: [live bytes at each sample]}, top first
        self.sites = sites          # [(site, allocs, bytes allocated, peak, live at end)]

    @property
    def totals(self) -> list:
        return [sum(col) for col in zip(*self.series.values())] if self.series else []

    def steps(self) -> tuple[list, dict]:
        """The samples as a staircase (memory changes at events, not between them), one
        event wide past the last so that the last change shows."""
        xs = [self.times[0]]
        for t in self.times[1:]:
            xs += (t, t)
        xs.append(self.times[-1] + 1)
        ys = {}
        for name, values in self.series.items():
            col = [values[0]]
            for before, after in zip(values, values[1:]):
                col += (before, after)
            col.append(values[-1])
            ys[name] = col
        return xs, ys


def timeline(snapshot, top: int = 8, device: int = 0) -> Timeline:
    """Replay the trace of `device`: which site held how many bytes after each event."""
    snap = load_snapshot(snapshot)
    traces = snap.get("device_traces") or [[]]
    trace = traces[device] if device < len(traces) else []
    owner: dict = {}                 # addr -> (site, size)
    live: dict = {}                  # site -> bytes now
    stats: dict = {}                 # site -> [allocs, allocated bytes, peak]
    history = []                     # (site, live bytes of that site) after each event
    for e in trace:
        action = e["action"]
        if action == "alloc":
            site = _site(e.get("frames") or [])
            owner[e["addr"]] = (site, e["size"])
            now = live[site] = live.get(site, 0) + e["size"]
            s = stats.setdefault(site, [0, 0, 0])
            s[0] += 1
            s[1] += e["size"]
            s[2] = max(s[2], now)
        elif action == "free_completed" and e["addr"] in owner:
            site, size = owner.pop(e["addr"])
            now = live[site] = live[site] - size
        else:
            history.append(None)
            continue
        history.append((site, now))
    ranked = sorted(stats, key=lambda k: -stats[k][2])
    bands = {site: site for site in ranked[:top]}
    names = ranked[:top] + ([OTHER] if len(ranked) > top else [])
    step = max(1, -(-len(history) // MAX_POINTS))
    current = dict.fromkeys(names, 0)
    per_site = dict.fromkeys(ranked, 0)
    times, series = [0], {n: [0] for n in names}
    for i, change in enumerate(history, 1):
        if change is not None:
            site, now = change
            band = bands.get(site, OTHER)
            current[band] += now - per_site[site]
            per_site[site] = now
        if i % step == 0 or i == len(history):
            times.append(i)
            for n in names:
                series[n].append(current[n])
    sites = [(k, *stats[k], live.get(k, 0)) for k in ranked]
    return Timeline(times, series, sites)


def _short(site: str, width: int = 70) -> str:
    return site if len(site) <= width else "..." + site[-(width - 3):]


def _svg(tl: Timeline, width=960, height=380, left=80, bottom=40, top_pad=16) -> str:
    plot_w, plot_h = width - left - 20, height - bottom - top_pad
    peak = max(tl.totals or [0]) or 1
    times, series = tl.steps()
    t_max = times[-1]
    x = [left + plot_w * t / t_max for t in times]

    def y(v):
        return top_pad + plot_h * (1 - v / peak)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">']
    for i in range(5):      # byte grid and ticks
        v = peak * i / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end">{format_size(int(v))}</text>')
    lower = [0] * len(x)
    for k, (name, values) in enumerate(series.items()):
        upper = [a + b for a, b in zip(lower, values)]
        pts = [f"{x[i]:.1f},{y(upper[i]):.1f}" for i in range(len(x))]
        pts += [f"{x[i]:.1f},{y(lower[i]):.1f}" for i in reversed(range(len(x)))]
        color = _color(name, k)
        label = html.escape(f"{name}: peak {format_size(max(values))}")
        parts.append(f'<polygon class="band" data-band="{k}" points="{" ".join(pts)}" '
                     f'fill="{color}" stroke="none"><title>{label}</title></polygon>')
        ly = top_pad + 6 + 14 * k     # legend, top left
        parts.append(f'<rect x="{left + 8}" y="{ly}" width="10" height="10" fill="{color}"/>'
                     f'<text x="{left + 22}" y="{ly + 9}">{html.escape(_short(name))}</text>')
        lower = upper
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">'
                 f'allocator event (of {tl.times[-1]})</text></svg>')
    return "\n".join(parts)


def _color(name: str, k: int) -> str:
    return "#cccccc" if name == OTHER else _COLORS[k % len(_COLORS)]


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }}
td.site, th.site {{ text-align: left; font-family: monospace; }}
.swatch {{ display: inline-block; width: 10px; height: 10px; margin-right: 6px; }}
polygon.dim {{ opacity: 0.25; }}
</style></head><body>
<h2>{title}</h2>
<p>{summary}</p>
{svg}
<h3>Allocation sites, largest peak first</h3>
<table><tr><th class="site">site</th><th>peak live</th><th>allocated</th><th>allocations</th>
<th>live at end</th></tr>
{rows}
</table>
<script>
for (const row of document.querySelectorAll("tr[data-band]")) {{
  const band = row.dataset.band;
  row.addEventListener("mouseenter", () => {{
    for (const p of document.querySelectorAll("polygon.band"))
      p.classList.toggle("dim", p.dataset.band !== band);
  }});
  row.addEventListener("mouseleave", () => {{
    for (const p of document.querySelectorAll("polygon.band")) p.classList.remove("dim");
  }});
}}
</script>
</body></html>
"""


def render_html(snapshot, path=None, top: int = 8, title: str = "Memory over time") -> str:
    """The page as a string; also written to `path` when given."""
    tl = timeline(snapshot, top)
    band_of = {name: k for k, name in enumerate(tl.series)}
    rows = []
    for site, allocs, allocated, peak, live in tl.sites:
        k = band_of.get(site, band_of.get(OTHER))
        color = _color(site if site in band_of else OTHER, k)
        rows.append(f'<tr data-band="{k}"><td class="site"><span class="swatch" '
                    f'style="background:{color}"></span>{html.escape(_short(site, 110))}</td>'
                    f'<td>{format_size(peak)}</td><td>{format_size(allocated)}</td>'
                    f'<td>{allocs}</td><td>{format_size(live)}</td></tr>')
    totals = tl.totals
    summary = (f"{tl.times[-1]} events, {len(tl.sites)} allocation sites, peak "
               f"{format_size(max(totals or [0]))} live. Hover a row to pick out its band.")
    page = _PAGE.format(title=html.escape(title), summary=summary, svg=_svg(tl),
                        rows="\n".join(rows))
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    return page


def render_png(snapshot, path, top: int = 8, title: str = "Memory over time") -> None:
    """A stacked-area PNG (needs matplotlib; render_html needs nothing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("render_png needs matplotlib: pip install 'glasstorch[viz]' (or "
                          "pip install matplotlib); render_html draws the same picture "
                          "without it, and an output name not ending in .png writes HTML") \
            from None
    tl = timeline(snapshot, top)
    fig, ax = plt.subplots(figsize=(11, 5))
    colors = [_color(n, k) for k, n in enumerate(tl.series)]
    times, series = tl.steps()
    if series:
        ax.stackplot(times, [[v / 2**20 for v in s] for s in series.values()],
                     labels=[_short(n, 60) for n in tl.series], colors=colors)
        ax.legend(loc="upper left", fontsize=7)
    ax.set_xlabel("allocator event")
    ax.set_ylabel("live MiB")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.memory.visualize",
        description="Draw memory over time, grouped by allocation site, from a snapshot "
                    "pickle (glasstorch.memory._dump_snapshot or torch's).")
    parser.add_argument("snapshot", help="the snapshot pickle")
    parser.add_argument("-o", "--output", default="memory.html",
                        help="output file: .png draws with matplotlib, anything else is HTML")
    parser.add_argument("--top", type=int, default=8, help="sites with their own band")
    args = parser.parse_args(argv)
    if args.output.lower().endswith(".png"):
        render_png(args.snapshot, args.output, args.top)
    else:
        render_html(args.snapshot, args.output, args.top)
    print(args.output)


if __name__ == "__main__":
    main()
