"""torch.distributed.fsdp: FullyShardedDataParallel, its sharding strategies and wrap
policies."""
from .fully_sharded_data_parallel import FullyShardedDataParallel, ShardingStrategy
from .wrap import ModuleWrapPolicy, size_based_auto_wrap_policy, transformer_auto_wrap_policy

__all__ = ["FullyShardedDataParallel", "ModuleWrapPolicy", "ShardingStrategy",
           "size_based_auto_wrap_policy", "transformer_auto_wrap_policy"]
