"""torch.distributed.algorithms: DDP communication hooks."""
