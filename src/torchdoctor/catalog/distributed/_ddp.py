"""The DDP and FSDP wrapper classes, and the names a file's imports give them."""

from __future__ import annotations

import ast

from torchdoctor.catalog.sdk import Context, index, per_file

# The wrappers that average gradients across ranks without splitting the data.
WRAPPERS = frozenset({"DistributedDataParallel", "FullyShardedDataParallel"})
_WRAPPER_MODULES = frozenset(
    {
        "torch.nn",
        "torch.nn.parallel",
        "torch.nn.parallel.distributed",
        "torch.distributed.fsdp",
        "torch.distributed.fsdp.fully_sharded_data_parallel",
    }
)


@per_file
def imported_wrapper_names(ctx: Context) -> frozenset[str]:
    """The names imports give the DDP and FSDP classes (`DDP`, `DistributedDataParallel`)."""
    names = set()
    for node in index(ctx).everywhere(ast.ImportFrom):
        if node.module in _WRAPPER_MODULES:
            names.update(a.asname or a.name for a in node.names if a.name in WRAPPERS)
    return frozenset(names)
