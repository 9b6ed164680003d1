"""Run by the tests on two ranks: rank 1 raises, rank 0 would sleep for five minutes, longer
than the tests wait, so the job ends in time only when rank 1's failure stops it."""
import time

import glasstorch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    raise RuntimeError("rank one gives up")
time.sleep(300)
