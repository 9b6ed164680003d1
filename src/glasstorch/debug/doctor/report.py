"""A finding and the report: what kind of problem, the evidence, where, why, and the fix."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Finding:
    kind: str             # the kind of problem in words: "NaN appeared"
    evidence: str         # the numbers that show it
    site: object          # the user's line (frames.Site), or None
    cause: str            # why, in one sentence
    fix: str              # what to change

    def format(self, number: int) -> str:
        where = f"  at {self.site}" if self.site is not None else ""
        lines = [f"{number}. {self.kind}{where}"]
        source = self.site.source if self.site is not None else ""
        if source:
            lines.append(f"     {self.site.lineno} | {source}")
        lines += [f"   evidence: {self.evidence}", f"   cause:    {self.cause}",
                  f"   fix:      {self.fix}"]
        return "\n".join(lines)


def format_report(findings: list) -> str:
    """The report: one verdict line when nothing is wrong, else each finding in turn."""
    if not findings:
        return "No problems found."
    count = "1 problem" if len(findings) == 1 else f"{len(findings)} problems"
    parts = [f"glasstorch doctor: {count} found."]
    parts += [f.format(i) for i, f in enumerate(findings, 1)]
    return "\n\n".join(parts)
