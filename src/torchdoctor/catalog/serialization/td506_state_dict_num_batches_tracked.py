"""TD506 state-dict-num-batches-tracked: only BatchNorm's `num_batches_tracked` keys differ."""

from __future__ import annotations


from torchdoctor.catalog.sdk import lazy_compile, Clue, Pitfall
from torchdoctor.catalog.sdk import state_dicts as sd_errors

PITFALL = Pitfall(
    code="TD506",
    name="state-dict-num-batches-tracked",
    title={
        "en": "State dict and model disagree only on BatchNorm's `num_batches_tracked`",
        "zh": "state_dict 与模型只在 BatchNorm 的 `num_batches_tracked` 上对不上",
    },
    messages={
        "": {
            "en": "`load_state_dict` fails only because of BatchNorm's `num_batches_tracked` "
            "counters: every weight matches",
            "zh": "`load_state_dict` 失败仅仅是因为 BatchNorm 的 `num_batches_tracked` 计数器："
            "所有权重其实都对得上",
        },
        "ckpt": {
            "en": "{count} BatchNorm layers have no `num_batches_tracked` (e.g. `{example}`) while "
            "the state dict's version metadata says they should: "
            "`load_state_dict(strict=True)` reports them missing",
            "zh": "{count} 个 BatchNorm 层没有 `num_batches_tracked`（如 `{example}`），而 state dict "
            "的版本元数据表明应该有：`load_state_dict(strict=True)` 会报告它们缺失",
        },
        "ckpt-missing": {
            "en": "{reference} has `num_batches_tracked` counters that the checkpoint lacks ({count}, "
            "e.g. `{example}`): saved by an old PyTorch (< 0.4.1) or with the counters "
            "removed; the repair adds them as 0, as `load_state_dict` does for old files",
            "zh": "{reference}有 checkpoint 中没有的 `num_batches_tracked` 计数器（{count} 个，如 "
            "`{example}`）：由旧版 PyTorch（< 0.4.1）保存，或计数器被删掉了；修复时补为 0，"
            "与 `load_state_dict` 处理旧文件的做法相同",
        },
        "ckpt-unexpected": {
            "en": "the checkpoint has `num_batches_tracked` counters that {reference} does not "
            "({count}, e.g. `{example}`): its BatchNorm keeps none (FrozenBatchNorm2d, an old "
            "version); the repair drops them",
            "zh": "checkpoint 中有{reference}没有的 `num_batches_tracked` 计数器（{count} 个，如 "
            "`{example}`）：模型的 BatchNorm 不保存它们（FrozenBatchNorm2d、旧版本）；修复时删掉",
        },
    },
    fix_hint={
        "en": "Add the missing counters from the model (`state_dict.setdefault(key, buffer)` "
        "for each `*.num_batches_tracked` of `model.state_dict()`) or drop the unexpected "
        "ones, then load with `strict=True`; "
        "`torchdoctor ckpt fix FILE -o FIXED.pth` rewrites the file.",
        "zh": "从模型补上缺少的计数器（对 `model.state_dict()` 中每个 `*.num_batches_tracked` 执行 "
        "`state_dict.setdefault(key, buffer)`），或删掉多出来的计数器，再用 `strict=True` "
        "加载；`torchdoctor ckpt fix FILE -o FIXED.pth` 可以直接改写文件。",
    },
    docs={
        "en": """
## What it catches
A `load_state_dict` error whose only missing or unexpected keys are BatchNorm's
`*.num_batches_tracked` buffers: every weight and running statistic matches.

## Why is this bad?
PyTorch 0.4.1 added the `num_batches_tracked` counter to BatchNorm. `load_state_dict` fills it
in for checkpoints whose metadata says they come from an older BatchNorm, but not when the
dict claims to be current: a `state_dict()` whose counters were filtered out by a conversion
or pruning script, or a dict copied key by key while keeping `_metadata`. The reverse happens
when the model's normalization layers have no counter (a custom `FrozenBatchNorm2d`, a very old
PyTorch) and the checkpoint has one. The usual way out, `strict=False`, also hides every real
mismatch; the counter itself only matters for BatchNorm with `momentum=None`.

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: Missing key(s) in state_dict:
"bn1.num_batches_tracked", "layer1.0.bn1.num_batches_tracked", ...` or
`Unexpected key(s) in state_dict: "bn1.num_batches_tracked", ...`.

## References
- https://github.com/pytorch/pytorch/pull/6445
""",
        "zh": """
## What it catches
`load_state_dict` 报错，而缺少或多出的键只有 BatchNorm 的 `*.num_batches_tracked` 缓冲区：
所有权重和滑动统计量其实都对得上。

## Why is this bad?
PyTorch 0.4.1 给 BatchNorm 加了 `num_batches_tracked` 计数器。如果 checkpoint 的元数据表明它来自旧版
BatchNorm，`load_state_dict` 会自动补上这个键；但如果字典自称是新版的，就不会补：比如转换或剪枝脚本
从 `state_dict()` 里删掉了计数器，或者逐个键复制时保留了 `_metadata`。反过来，如果模型的归一化层没有
计数器（自己写的 `FrozenBatchNorm2d`、很老的 PyTorch），而 checkpoint 里有，就会报多余的键。
常见的绕过办法 `strict=False` 会把真正的不匹配一起藏起来；而计数器本身只在 BatchNorm 使用
`momentum=None` 时才有作用。

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: Missing key(s) in state_dict:
"bn1.num_batches_tracked", "layer1.0.bn1.num_batches_tracked", ...` 或
`Unexpected key(s) in state_dict: "bn1.num_batches_tracked", ...`。

## References
- https://github.com/pytorch/pytorch/pull/6445
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
state_dict = model.state_dict()
for key in [k for k in state_dict if k.endswith("num_batches_tracked")]:
    del state_dict[key]
model.load_state_dict(state_dict)
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
state_dict = torch.load("converted.pt")
for key, buffer in model.state_dict().items():
    if key.endswith("num_batches_tracked"):
        state_dict.setdefault(key, buffer)
model.load_state_dict(state_dict)
""",
)

CAUSES = {
    "missing": {
        "en": "Only BatchNorm counters are missing (keys: {count}, e.g. `{example}`): the "
        "checkpoint's weights all match, but it lacks `num_batches_tracked` while its "
        "metadata says the BatchNorm is current: counters filtered out by a conversion "
        "script, or a dict copied from a `state_dict()` with its `_metadata`.",
        "zh": "缺少的只有 BatchNorm 的计数器（{count} 个键，如 `{example}`）：权重全都对得上，"
        "但 checkpoint 里没有 `num_batches_tracked`，而它的元数据又表明 BatchNorm 是新版的："
        "可能是转换脚本删掉了计数器，或者从 `state_dict()` 复制字典时连 `_metadata` 一起带上了。",
    },
    "unexpected": {
        "en": "Only BatchNorm counters are unexpected (keys: {count}, e.g. `{example}`): the "
        "checkpoint comes from `nn.BatchNorm` layers (PyTorch >= 0.4.1) but your model's "
        "normalization layers keep no counter (a custom FrozenBatchNorm, an older "
        "PyTorch).",
        "zh": "多出来的只有 BatchNorm 的计数器（{count} 个键，如 `{example}`）：checkpoint 来自 "
        "`nn.BatchNorm` 层（PyTorch >= 0.4.1），而你的模型的归一化层没有计数器"
        "（自定义的 FrozenBatchNorm，或较老的 PyTorch）。",
    },
}
FIXES = {
    "missing": {
        "en": "Fill them in from the model before loading: `for k, v in "
        'model.state_dict().items(): if k.endswith("num_batches_tracked"): '
        "state_dict.setdefault(k, v)`; or `torchdoctor ckpt` to rewrite the file.",
        "zh": "加载前从模型补上：`for k, v in model.state_dict().items(): if "
        'k.endswith("num_batches_tracked"): state_dict.setdefault(k, v)`；'
        "或用 `torchdoctor ckpt` 改写文件。",
    },
    "unexpected": {
        "en": "Drop them before loading: `state_dict = {{k: v for k, v in state_dict.items() "
        'if not k.endswith("num_batches_tracked")}}`; or `torchdoctor ckpt` to rewrite '
        "the file.",
        "zh": "加载前删掉它们：`state_dict = {{k: v for k, v in state_dict.items() "
        'if not k.endswith("num_batches_tracked")}}`；或用 `torchdoctor ckpt` 改写文件。',
    },
}


_SHAPE_CAUSE = {
    "en": "Only BatchNorm counters differ in shape ({count} keys, e.g. `{example}`: {checkpoint} "
    "in the checkpoint, {model} in the model); every weight matches. The counter is a 0-dim "
    "tensor in current PyTorch, and one side comes from code that made it a 1-element one (an "
    "old, custom or converted BatchNorm).",
    "zh": "只有 BatchNorm 的计数器形状不同（{count} 个键，例如 `{example}`：checkpoint 中为 "
    "{checkpoint}，模型中为 {model}）；所有权重都一致。当前 PyTorch 中该计数器是 0 维张量，而其中"
    "一方来自把它做成单元素张量的代码（旧的、自定义的或转换过的 BatchNorm）。",
}
_SHAPE_FIX = {
    "en": "Give the counters the model's shape before loading: `target = model.state_dict()`, "
    'then for each key ending in "num_batches_tracked" set `state_dict[k] = '
    "state_dict[k].reshape(target[k].shape)` (or drop them and load with `strict=False`; they "
    "matter only for BatchNorm with `momentum=None`).",
    "zh": "加载前把计数器改成模型中的形状：`target = model.state_dict()`，然后对每个以 "
    '"num_batches_tracked" 结尾的键设置 `state_dict[k] = state_dict[k].reshape(target[k].shape)`'
    "（或者删掉它们并用 `strict=False` 加载；只有 `momentum=None` 的 BatchNorm 才用到它们）。",
}


@PITFALL.error_check(types=(), words=("state_dict", "unexpected", "num_batches_tracked"))
def explain(block, report) -> Clue | None:
    error = sd_errors.from_block(block, report)
    if error is None or error.other_missing or error.other_unexpected:
        return None
    if sd_errors.counters_only_mismatched(error):
        first = error.mismatched[0]
        fields = {
            "count": str(len(error.mismatched)),
            "example": first.key,
            "checkpoint": sd_errors.size(first.checkpoint),
            "model": sd_errors.size(first.model),
        }
        return Clue(0.95, _SHAPE_CAUSE, _SHAPE_FIX, fields)
    if not (error.missing or error.unexpected):
        return None
    side = "missing" if error.missing else "unexpected"
    keys = error.missing or error.unexpected
    # Next to a size mismatch the counters are a footnote: the shapes are the story.
    confidence = 0.95 if sd_errors.kind(error) == "batches-tracked" else 0.5
    return Clue(
        confidence, CAUSES[side], FIXES[side], {"count": str(len(keys)), "example": keys[0]}
    )


# Code that copies the model's keys from a checkpoint by hand (`checkpoint[name]` for each
# `name` of `model.state_dict()`) fails on the first counter an old checkpoint lacks.
_COUNTER_KEY_ERROR = lazy_compile(r"^'(?P<key>[\w.]*num_batches_tracked)'$")


@PITFALL.error_check(types=("KeyError",), words=("num_batches_tracked",))
def counter_key_error(block, report) -> Clue | None:
    found = _COUNTER_KEY_ERROR.match(block.message.strip())
    if found is None:
        return None
    return Clue(
        0.9,
        {
            "en": "The code looks up `{key}` in the checkpoint because the model has it, and the "
            "checkpoint does not: BatchNorm's `num_batches_tracked` counter came with PyTorch "
            "0.4.1, and the checkpoint was saved by an older one.",
            "zh": "代码因为模型里有 `{key}` 就去 checkpoint 中查找它，而 checkpoint 里没有：BatchNorm 的 "
            "`num_batches_tracked` 计数器是 PyTorch 0.4.1 才加入的，而这个 checkpoint 由更旧的版本保存。",
        },
        {
            "en": 'Skip the counters when copying (`if name.endswith("num_batches_tracked"): '
            "continue`), or load with `model.load_state_dict(state_dict, strict=False)` and check "
            "that only counters are reported missing.",
            "zh": '复制时跳过这些计数器（`if name.endswith("num_batches_tracked"): continue`），'
            "或者用 `model.load_state_dict(state_dict, strict=False)` 加载，并确认报告缺失的只有计数器。",
        },
        found.groupdict(),
    )


@PITFALL.checkpoint
def check_checkpoint(subject):
    if subject.diff is not None:
        for difference in subject.diff.differences:
            if difference.kind == "batches-tracked":
                yield subject.finding(
                    PITFALL,
                    f"ckpt-{difference.fields['side']}",
                    keys=difference.keys,
                    repairable=True,
                    count=len(difference.keys),
                    example=difference.keys[0],
                )
        return
    listing = subject.listing
    if listing is not None and listing.counters_required:
        keys = [f"{layer}.{sd_errors.BATCHES_TRACKED}" for layer in listing.missing_counters]
        yield subject.finding(
            PITFALL, "ckpt", keys=keys, repairable=True, count=len(keys), example=keys[0]
        )
