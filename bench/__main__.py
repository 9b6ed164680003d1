"""`python -m bench` runs the benchmark suite; see bench/cli.py."""
import sys

from .cli import main

sys.exit(main())
