"""TD702 incomplete-seeding: a file seeds some random generators and draws from another one."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    FileIndex,
    Finding,
    Pitfall,
    index,
    per_file,
    statements,
)

PITFALL = Pitfall(
    code="TD702",
    name="incomplete-seeding",
    title={
        "en": "Some random generators are seeded, another one in use is not",
        "zh": "只给部分随机数生成器设置了种子，另一个在用的却没有",
    },
    messages={
        "": {
            "en": "this file seeds {seeded} but also draws from {unseeded}, which is never seeded: "
            "runs are not reproducible",
            "zh": "该文件为 {seeded} 设置了种子，却也使用了从未设置种子的 {unseeded}：结果无法复现",
        }
    },
    default=False,
    docs={
        "en": """
## What it catches
A file that seeds two of Python's three global random generators (`random.seed`,
`np.random.seed`, `torch.manual_seed`), or seeds one at the top level of a script, and also
calls functions of a generator it never seeds: `np.random.shuffle(...)` next to `torch.manual_seed(0)`, `random.random()` next to
`np.random.seed(0)`, `torch.randn(...)` or `nn.init.*` next to `random.seed(0)`.

Not reported: a single generator seeded inside a function (often a deliberate, local choice);
a file that uses only the generators it seeds; draws through a generator object
seeded on its own (`np.random.default_rng(seed)`, `random.Random(seed)`,
`torch.Generator().manual_seed(seed)`, a `generator=` argument); and files that call a seeding
helper (`set_seed`, `seed_everything`, `init_seeds`...), which may seed the rest elsewhere.
`torch.cuda.manual_seed(_all)` is not needed next to `torch.manual_seed`: the latter already
seeds every device. The check is opt-in: seeding may also happen in another module.

## Why is this bad?
Each library keeps its own generator. Seeding one leaves the others started from the clock
or the OS, so the data order, the augmentations or the initial weights still change from run
to run, while the `seed` in the code suggests that the run can be repeated. Differences between
two "identical" runs then look like the effect of the change you made.

## Known problems
Only what is written in the file is seen: a generator seeded in another module that this file
does not call by a seeding helper's name is reported. Full determinism on GPU also needs
`torch.backends.cudnn.deterministic = True`, `torch.backends.cudnn.benchmark = False` (or
`torch.use_deterministic_algorithms(True)`) and seeded DataLoader workers; this rule does not
check those. Files that never mention torch are not checked.
""",
        "zh": """
## What it catches
文件为 Python 三个全局随机数生成器中的两个设置了种子（`random.seed`、`np.random.seed`、
`torch.manual_seed`），或在脚本顶层为其中一个设置了种子，却又调用了另一个从未设置种子的生成器的函数：例如在 `torch.manual_seed(0)`
旁边用 `np.random.shuffle(...)`，在 `np.random.seed(0)` 旁边用 `random.random()`，在
`random.seed(0)` 旁边用 `torch.randn(...)` 或 `nn.init.*`。

以下情况不报告：只在函数内部为单个生成器设置种子（往往是有意为之的局部做法）；文件只用到了已设种子的生成器；通过单独设种子的生成器对象取随机数
（`np.random.default_rng(seed)`、`random.Random(seed)`、`torch.Generator().manual_seed(seed)`、
`generator=` 参数）；文件调用了设种子的辅助函数（`set_seed`、`seed_everything`、`init_seeds` 等），
其余生成器可能在那里设置。有了 `torch.manual_seed` 就不需要再写 `torch.cuda.manual_seed(_all)`：
前者已经为所有设备设置种子。该检查需要手动开启：种子也可能在别的模块里设置。

## Why is this bad?
每个库都有自己独立的生成器。只给其中一个设种子，其他生成器仍由时钟或操作系统初始化，
数据顺序、数据增强或初始权重每次运行都会变化，而代码里的 `seed` 却让人以为结果可以复现。
于是两次“相同”的运行之间的差异，看起来就像是你所做改动带来的效果。

## Known problems
只能看到本文件中写出的内容：在其他模块里设置了种子、而本文件又没有通过设种子辅助函数名调用它时，
仍会被报告。GPU 上的完全确定性还需要 `torch.backends.cudnn.deterministic = True`、
`torch.backends.cudnn.benchmark = False`（或 `torch.use_deterministic_algorithms(True)`）以及为
DataLoader 的 worker 设置种子；本规则不检查这些。完全没有提到 torch 的文件不会被检查。
""",
    },
    example="""
import numpy as np
import torch

torch.manual_seed(0)
indices = np.arange(100)
np.random.shuffle(indices)
""",
    use_instead="""
import numpy as np
import torch

torch.manual_seed(0)
np.random.seed(0)
indices = np.arange(100)
np.random.shuffle(indices)
""",
)

# The global generators, by the qualified name of the call that seeds them.
SEEDERS = {
    "random.seed": "random",
    "numpy.random.seed": "numpy",
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
}
SHOWN = {"random": "`random`", "numpy": "`np.random`", "torch": "`torch`"}
# Functions drawing from a global generator; objects seeded on their own are left out.
DRAWS_BY_MODULE = {
    "random": (
        "random",
        frozenset(
            """
random randint randrange choice choices shuffle sample uniform gauss normalvariate triangular
betavariate expovariate gammavariate lognormvariate vonmisesvariate paretovariate weibullvariate
getrandbits randbytes binomialvariate
""".split()
        ),
    ),
    "numpy.random": (
        "numpy",
        frozenset(
            """
rand randn randint random random_sample ranf sample choice shuffle permutation uniform normal
standard_normal binomial poisson beta gamma exponential multinomial multivariate_normal
dirichlet laplace lognormal bytes integers
""".split()
        ),
    ),
    "torch": (
        "torch",
        frozenset(
            """
rand randn randint randperm rand_like randn_like randint_like normal bernoulli multinomial
poisson
""".split()
        ),
    ),
}
LIBRARY_PREFIXES = ("random.", "numpy.", "torch.")


@PITFALL.static(ast.Call, names={"seed", "manual_seed"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    generator = SEEDERS.get(ctx.qualname(call.func))
    if generator is None:
        return
    usage = _file_usage(ctx)
    if usage is None or usage.first_seed is not call:
        return  # one finding per file, on its first seeding call
    unseeded = sorted(usage.drawn - usage.seeded)
    if not unseeded:
        return
    # One generator seeded inside a function is often a local, deliberate choice (a model's
    # fixed random pattern, a test of one generator); seeding two, or seeding the whole
    # script at its top level, is a bid for a reproducible run.
    if len(usage.seeded) < 2 and (ctx.enclosing_function() or ctx.enclosing_class()):
        return
    yield ctx.finding(PITFALL, call, seeded=_listed(usage.seeded), unseeded=_listed(unseeded))


def _listed(generators) -> str:
    return " and ".join(SHOWN[g] for g in sorted(generators))


class _Usage:
    def __init__(self) -> None:
        self.seeded: set[str] = set()
        self.drawn: set[str] = set()
        self.first_seed: ast.Call | None = None


@per_file
def _file_usage(ctx: Context) -> _Usage | None:
    """Which global generators the file seeds and draws from; None when a seeding helper is
    called, since it may seed the others."""
    found = index(ctx)
    aliases = _module_aliases(statements(ctx, ast.Import, ast.ImportFrom))
    usage = _Usage()
    calls = sorted(
        _candidate_calls(found, aliases), key=lambda n: (n.lineno, n.col_offset, found.number[n])
    )
    for call in calls:
        name = _dotted(call.func, aliases)
        if name is None:
            continue
        if name in SEEDERS:
            usage.seeded.add(SEEDERS[name])
            usage.first_seed = usage.first_seed or call
            continue
        if _is_seed_helper(name):
            return None
        drawn = _drawn_generator(name, call)
        if drawn:
            usage.drawn.add(drawn)
    return usage


def _candidate_calls(found: FileIndex, aliases: dict[str, str]) -> list[ast.Call]:
    """The calls that may seed or draw (the others change nothing in `_file_usage`): those of a
    name with "seed" in it, of a drawing function, of an imported name, and of a function of
    `torch.nn.init` (`nn.init.normal_(w)`, `init.normal_(w)`)."""
    keys = [
        key
        for key in found.calls
        if key is not None and ("seed" in key.lower() or key in _DRAW_NAMES or key in aliases)
    ]
    candidates = {at for key in keys for at in found.calls[key]}
    for module in [
        "init",
        *(name for name, origin in aliases.items() if origin == "torch.nn.init"),
    ]:
        for at in [*found.names.get(module, ()), *found.attributes.get(module, ())]:
            attribute = found.parents.get(found.nodes[at])
            call = found.parents.get(attribute)
            if (
                type(call) is ast.Call
                and call.func is attribute
                and attribute.value is found.nodes[at]
            ):
                candidates.add(found.number[call])
    return [found.nodes[at] for at in candidates]


# The functions of DRAWS_BY_MODULE, whatever their module.
_DRAW_NAMES = frozenset(name for _, names in DRAWS_BY_MODULE.values() for name in names)


def _is_seed_helper(name: str) -> bool:
    """`set_seed(0)`, `utils.seed_everything(0)`, `rng.seed(0)`: not a library's own seeding
    function (`torch.cuda.manual_seed_all`, `np.random.RandomState`...)."""
    if name.startswith(LIBRARY_PREFIXES):
        return False
    return "seed" in name.rpartition(".")[2].lower()


def _drawn_generator(name: str, call: ast.Call) -> str | None:
    module, _, function = name.rpartition(".")
    if module == "torch.nn.init":
        return "torch"
    entry = DRAWS_BY_MODULE.get(module)
    if entry is None or function not in entry[1]:
        return None
    if any(keyword.arg == "generator" for keyword in call.keywords):
        return None  # a torch.Generator object seeded on its own
    return entry[0]


def _dotted(func: ast.AST, aliases: dict[str, str]) -> str | None:
    """`np.random.seed` -> "numpy.random.seed" through the file's imports; local names kept."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(aliases.get(func.id, func.id))
    return ".".join(reversed(parts))


def _module_aliases(imports: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """Names bound by the file's imports (in any scope), to their dotted origin. A name bound
    to two different origins is left out: which one a call means is unknown."""
    aliases: dict[str, str] = {}
    ambiguous: set[str] = set()
    for node in imports:
        if isinstance(node, ast.Import):
            pairs = [
                (
                    a.asname or a.name.partition(".")[0],
                    a.name if a.asname else a.name.partition(".")[0],
                )
                for a in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            pairs = [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]
        else:
            continue
        for bound, origin in pairs:
            if aliases.setdefault(bound, origin) != origin:
                ambiguous.add(bound)
    for name in ambiguous:
        aliases[name] = ""
    return aliases
