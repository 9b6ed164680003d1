"""python -m tests.fuzz --programs 20000 --seed S: a differential campaign against PyTorch
(see tests/fuzz/differential.py); prints the difference rate and the distinct patterns,
each with a minimised reproducer."""
import argparse
import signal
import sys
import time

from tests.fuzz.differential import campaign, format_report


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=30, help="patterns to print in full")
    args = parser.parse_args(argv)
    start = time.time()

    def progress(k, report):
        if (k + 1) % 1000 == 0:
            print(f"... {k + 1} programs, {report.differing} differing, "
                  f"{len(report.patterns)} patterns, {time.time() - start:.0f} s",
                  file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _interrupt)      # `timeout` ends a run: report so far
    report = campaign(args.programs, args.seed, progress=progress)
    print(format_report(report, args.show))
    print(f"\n({time.time() - start:.0f} s, seeds {args.seed}..{args.seed + report.programs - 1})")
    return 0 if report.differing == 0 and report.crashes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
