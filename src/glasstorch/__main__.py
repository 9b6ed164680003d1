"""`python -m glasstorch ...` runs the `glasstorch` command."""
from .cli import main

raise SystemExit(main())
