"""TD508 state-dict-key-mismatch: the checkpoint's keys are not the model's keys."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile
from torchdoctor.catalog.sdk import state_dicts as sd_errors

PITFALL = Pitfall(
    code="TD508",
    name="state-dict-key-mismatch",
    title={
        "en": "Checkpoint keys do not match the model's keys",
        "zh": "checkpoint 的键与模型的键对不上",
    },
    messages={
        "": {
            "en": "`load_state_dict` finds keys the model lacks, or misses keys it needs: the "
            "weights are nested, renamed, or from another architecture",
            "zh": "`load_state_dict` 发现了模型没有的键，或缺少模型需要的键：权重被嵌套了一层、"
            "被改了名，或者来自另一种架构",
        },
        "ckpt-nesting": {
            "en": "the weights are nested in a training checkpoint: `load_state_dict` needs "
            "`{access}`, not the whole dict (next to it: {others})",
            "zh": "权重嵌套在训练 checkpoint 里：`load_state_dict` 需要的是 `{access}`，而不是整个字典"
            "（与它并列的还有：{others}）",
        },
        "ckpt-renamed": {
            "en": "layer `{old}` of the checkpoint looks renamed to `{new}` in {reference} ({count} "
            "keys with the same shapes, in the same order): rename its keys if it is the same "
            "layer",
            "zh": "checkpoint 中的层 `{old}` 看起来在{reference}中改名成了 `{new}`（{count} 个键形状相同、"
            "顺序一致）：如果确实是同一层，请重命名这些键",
        },
        "ckpt-missing": {
            "en": "{count} keys of {reference} are not in the checkpoint: {groups}; with "
            "`strict=False` these weights would silently keep their initial values",
            "zh": "{reference}的 {count} 个键不在 checkpoint 中：{groups}；用 `strict=False` 加载时，"
            "这些权重会悄悄保持初始值",
        },
        "ckpt-unexpected": {
            "en": "{count} keys of the checkpoint are not in {reference}: {groups}",
            "zh": "checkpoint 中有 {count} 个键不在{reference}中：{groups}",
        },
    },
    fix_hint={
        "en": "Compare the checkpoint's keys with `model.state_dict().keys()` (`torchdoctor "
        "ckpt inspect FILE` lists them without loading the file): take the nested entry "
        '(`ckpt["state_dict"]`), rename keys, or build the architecture the checkpoint '
        "was trained with.",
        "zh": "把 checkpoint 的键和 `model.state_dict().keys()` 对比一下（`torchdoctor ckpt "
        'inspect FILE` 不加载文件就能列出它们）：取出嵌套的那一项（`ckpt["state_dict"]`）、'
        "重命名键，或者构建 checkpoint 训练时所用的架构。",
    },
    docs={
        "en": """
## What it catches
A `load_state_dict` error with `Missing key(s)` or `Unexpected key(s)` that is neither a wrapper
prefix (`state-dict-prefix-mismatch`) nor BatchNorm counters (`state-dict-num-batches-tracked`):
the weights nested inside a training checkpoint, renamed layers, or another architecture.

## Why is this bad?
A strict load refuses a dict whose keys are not exactly the model's parameter and buffer names.
The most common reason is that the file is a training checkpoint, a dict such as
`{"state_dict": ..., "optimizer": ..., "epoch": ...}`, and the whole dict was passed instead of
its weights entry. Next come layers renamed in the code since the checkpoint was written, and
checkpoints of another model or variant (resnet50 weights for a resnet18). Switching to
`strict=False` silences the error and loads nothing of what did not match: the model then runs
on random weights.

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: Missing key(s) in state_dict:
"conv1.weight", "bn1.weight", ... Unexpected key(s) in state_dict: "state_dict", "optimizer",
"epoch".`; torch 0.3: `KeyError: 'unexpected key "features.0.weight" in state_dict'` and
`KeyError: 'missing keys in state_dict: "{'fc.weight', 'fc.bias'}"'`; torch 0.4 with old
InstanceNorm checkpoints: `Unexpected running stats buffer(s) "in1.running_mean" and
"in1.running_var" for InstanceNorm2d with track_running_stats=False.`
""",
        "zh": """
## What it catches
`load_state_dict` 报 `Missing key(s)` 或 `Unexpected key(s)`，但既不是包装器前缀问题
（`state-dict-prefix-mismatch`），也不是 BatchNorm 计数器问题（`state-dict-num-batches-tracked`）：
权重嵌套在训练 checkpoint 里、层被改了名，或者是另一种架构。

## Why is this bad?
严格模式加载要求字典的键与模型参数和缓冲区的名字完全一致。最常见的原因是文件其实是一个训练
checkpoint，形如 `{"state_dict": ..., "optimizer": ..., "epoch": ...}`，而代码把整个字典传了进去，
而不是其中存权重的那一项。其次是 checkpoint 保存之后代码里的层改了名，或者 checkpoint 属于另一个
模型或变体（把 resnet50 的权重加载进 resnet18）。改用 `strict=False` 只会让报错消失，没对上的
键一个都不会加载：模型实际上在用随机权重运行。

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: Missing key(s) in state_dict:
"conv1.weight", "bn1.weight", ... Unexpected key(s) in state_dict: "state_dict", "optimizer",
"epoch".`；torch 0.3 中为 `KeyError: 'unexpected key "features.0.weight" in state_dict'` 和
`KeyError: 'missing keys in state_dict: "{'fc.weight', 'fc.bias'}"'`；torch 0.4 加载旧的
InstanceNorm checkpoint 时为 `Unexpected running stats buffer(s) "in1.running_mean" and
"in1.running_var" for InstanceNorm2d with track_running_stats=False.`
""",
    },
    example="""
import torch
import torchvision

model = torchvision.models.resnet18()
checkpoint = torch.load("checkpoint.pth")
model.load_state_dict(checkpoint)
""",
    use_instead="""
import torch
import torchvision

model = torchvision.models.resnet18()
checkpoint = torch.load("checkpoint.pth")
model.load_state_dict(checkpoint["state_dict"])
""",
)

NESTED = {
    "en": "The unexpected keys are the top level of a training checkpoint ({top}): the weights "
    'sit under `checkpoint["{container}"]`, and the whole dict was passed to '
    "`load_state_dict`.",
    "zh": '多出来的键是训练 checkpoint 的顶层条目（{top}）：权重在 `checkpoint["{container}"]` '
    "里面，而代码把整个字典传给了 `load_state_dict`。",
}
NESTED_FIX = {
    "en": 'Load the nested entry: `model.load_state_dict(checkpoint["{container}"])`.',
    "zh": '加载嵌套的那一项：`model.load_state_dict(checkpoint["{container}"])`。',
}
METADATA_ONLY = {
    "en": "The unexpected keys are a training checkpoint's bookkeeping ({top}) and none of the "
    "model's weights: the whole checkpoint dict was passed to `load_state_dict`.",
    "zh": "多出来的键是训练 checkpoint 的记录信息（{top}），而不是模型的权重：代码把整个 "
    "checkpoint 字典传给了 `load_state_dict`。",
}
METADATA_FIX = {
    "en": "Print `checkpoint.keys()` (or run `torchdoctor ckpt inspect FILE`) to find the "
    "entry that holds the weights, and load that one.",
    "zh": "打印 `checkpoint.keys()`（或运行 `torchdoctor ckpt inspect FILE`）找到存权重的那一项，"
    "再加载它。",
}
RENAMED = {
    "en": "As many keys are missing as unexpected ({count} each, e.g. model `{missing}` vs "
    "checkpoint `{unexpected}`): the same tensors under other names, so layers were "
    "renamed in the code since the checkpoint was saved, or it comes from another "
    "implementation of the same network.",
    "zh": "缺失的键和多余的键一样多（各 {count} 个，如模型的 `{missing}` 对应 checkpoint 的 "
    "`{unexpected}`）：张量相同、名字不同，说明保存 checkpoint 之后代码里的层改了名，"
    "或者它来自同一网络的另一种实现。",
}
RENAMED_FIX = {
    "en": "Map the old names to the new ones before loading (compare shapes with "
    "`torchdoctor ckpt inspect FILE`), e.g. `state_dict = {{new_name(k): v for k, v in "
    "state_dict.items()}}`.",
    "zh": "加载前把旧名字映射成新名字（可以用 `torchdoctor ckpt inspect FILE` 对照形状），例如 "
    "`state_dict = {{new_name(k): v for k, v in state_dict.items()}}`。",
}
ONLY_MISSING = {
    "en": "The checkpoint lacks {count} of the model's keys, in {groups} (e.g. `{missing}`): it "
    "was saved from a smaller model (a backbone without this head, an older version of "
    "the code) or the model has parts the checkpoint never had.",
    "zh": "checkpoint 缺少模型的 {count} 个键，位于 {groups}（如 `{missing}`）：它保存自一个更小的"
    "模型（没有这部分头的骨干网络、旧版本的代码），或者模型里有 checkpoint 从未有过的部分。",
}
CUT_MISSING = {
    "en": "The checkpoint lacks model keys in {groups} (e.g. `{missing}`; the list is cut off "
    "in the text): it was saved from a smaller model or an older version of the code, or "
    "under other names (a `module.`/`_orig_mod.` prefix), which the unexpected keys torch "
    "lists after the missing ones would show.",
    "zh": "checkpoint 缺少模型在 {groups} 中的键（如 `{missing}`；文本中的列表被截断了）：它保存自"
    "更小的模型或旧版本的代码，或者键名不同（带 `module.`/`_orig_mod.` 前缀），torch 在缺失键之后"
    "列出的多余键会说明是哪一种。",
}
ONLY_MISSING_FIX = {
    "en": "If those parts are meant to start fresh, load with `result = "
    "model.load_state_dict(state_dict, strict=False)` and check that "
    "`result.missing_keys` is exactly them; otherwise find the checkpoint of this model.",
    "zh": "如果这些部分本来就该从头训练，用 `result = model.load_state_dict(state_dict, "
    "strict=False)` 加载并确认 `result.missing_keys` 恰好是它们；否则请找与该模型匹配的 "
    "checkpoint。",
}
ONLY_UNEXPECTED = {
    "en": "The checkpoint has {count} keys the model lacks, in {groups} (e.g. `{unexpected}`): "
    "it was saved from a bigger model or variant (an extra head, auxiliary layers, an "
    "EMA copy).",
    "zh": "checkpoint 有 {count} 个模型没有的键，位于 {groups}（如 `{unexpected}`）：它保存自"
    "更大的模型或变体（多一个头、辅助层、EMA 副本）。",
}
ONLY_UNEXPECTED_FIX = {
    "en": "Drop those keys before loading (`state_dict = {{k: v for k, v in "
    "state_dict.items() if k in model.state_dict()}}`), after checking they are not "
    "weights your model should have.",
    "zh": "确认它们不是模型应有的权重后，加载前删掉这些键（`state_dict = {{k: v for k, v in "
    "state_dict.items() if k in model.state_dict()}}`）。",
}
DIFFERENT = {
    "en": "{missing_count} of the model's keys are missing (in {missing_groups}) and "
    "{unexpected_count} of the checkpoint's are unexpected (in {unexpected_groups}): "
    "the checkpoint belongs to another architecture or variant than the model built "
    "here{owner}.",
    "zh": "模型有 {missing_count} 个键缺失（位于 {missing_groups}），checkpoint 有 "
    "{unexpected_count} 个键多余（位于 {unexpected_groups}）：checkpoint 属于另一种架构"
    "或变体，而不是这里构建的模型{owner}。",
}
DIFFERENT_FIX = {
    "en": "Build the model the checkpoint was trained with (same class, depth, options), or "
    "pick the checkpoint that matches this model; `torchdoctor ckpt inspect FILE` lists "
    "its keys.",
    "zh": "构建 checkpoint 训练时所用的模型（相同的类、深度和选项），或者换一个与该模型匹配的 "
    "checkpoint；`torchdoctor ckpt inspect FILE` 可以列出它的键。",
}

# torch 0.4.0 refused old InstanceNorm checkpoints with running stats.
PITFALL.error(
    r"Unexpected running stats buffer\(s\) (?P<keys>.+?) for (?P<layer>InstanceNorm\dd) with "
    r"track_running_stats=False",
    types=("RuntimeError", "KeyError"),
    confidence=0.9,
    cause={
        "en": "The checkpoint has running statistics {keys} that `{layer}` no longer keeps "
        "(since PyTorch 0.4.0 InstanceNorm tracks none by default): a checkpoint from "
        "an older PyTorch.",
        "zh": "checkpoint 里有 `{layer}` 已不再保存的滑动统计量 {keys}（PyTorch 0.4.0 起 "
        "InstanceNorm 默认不跟踪它们）：这是旧版 PyTorch 保存的 checkpoint。",
    },
    fix={
        "en": "Delete those keys from the state dict before loading (or build the layer with "
        "`track_running_stats=True` if the statistics are really used).",
        "zh": "加载前从 state dict 里删掉这些键（如果确实要用这些统计量，就用 "
        "`track_running_stats=True` 构建该层）。",
    },
)


# Lightning builds the layers of a model in these hooks, after the model object exists: a
# checkpoint restored before the hook has run finds a model without those layers, and all of its
# keys are unexpected although checkpoint and model are the same (Lightning issue 18829).
_LATE_LAYERS = lazy_compile(r"\bconfigure_(?:sharded_)?model\b")


@PITFALL.error_check(types=(), words=("state_dict", "unexpected"))
def explain(block, report) -> Clue | None:
    error = sd_errors.from_block(block, report)
    if error is None:
        return None
    kind = sd_errors.kind(error)
    missing, unexpected = error.other_missing, error.other_unexpected
    if kind not in ("keys", "shape") or not (missing or unexpected):
        return None
    # Next to size mismatches, extra keys are part of the shape story (another variant).
    confidence = 0.9 if kind == "keys" else 0.7
    fields = {
        "missing": missing[0] if missing else "",
        "count": "",
        "unexpected": unexpected[0] if unexpected else "",
    }
    nested = sd_errors.container_of(error)
    if nested is not None and kind == "keys":
        container, others = nested
        top = ", ".join(f'"{k}"' for k in ((container,) if container else ()) + others)
        fields.update(container=container, top=top)
        if container:
            return Clue(0.95, NESTED, NESTED_FIX, fields)
        return Clue(0.9, METADATA_ONLY, METADATA_FIX, fields)
    if missing and unexpected and len(missing) == len(unexpected) and _same_leaves(error):
        fields["count"] = str(len(missing))
        return Clue(confidence, RENAMED, RENAMED_FIX, fields)
    if not unexpected:
        fields.update(count=str(len(missing)), groups=sd_errors.groups(missing))
        if not error.missing_closed:
            # The list is cut off: how many keys are missing, and whether unexpected keys (a
            # wrapper's prefix, another naming) followed, the text does not say.
            # Below state-dict-prefix-mismatch's guess when it makes one (cut_before_unexpected).
            cut = 0.55 if sd_errors.cut_before_unexpected(error, report) else 0.7
            return Clue(cut, CUT_MISSING, ONLY_MISSING_FIX, fields)
        return Clue(confidence - 0.05, ONLY_MISSING, ONLY_MISSING_FIX, fields)
    if not missing:
        if report.search(_LATE_LAYERS):
            return None  # the layers may not be built yet: nothing says the models differ
        fields.update(count=str(len(unexpected)), groups=sd_errors.groups(unexpected))
        return Clue(confidence - 0.05, ONLY_UNEXPECTED, ONLY_UNEXPECTED_FIX, fields)
    fields.update(
        missing_count=str(len(missing)),
        unexpected_count=str(len(unexpected)),
        missing_groups=sd_errors.groups(missing),
        unexpected_groups=sd_errors.groups(unexpected),
        owner=f" (`{error.model}`)" if error.model else "",
    )
    return Clue(confidence, DIFFERENT, DIFFERENT_FIX, fields)


def _same_leaves(error: sd_errors.StateDictError) -> bool:
    """Missing and unexpected keys pair up in order by their last part (weight, bias ...)."""
    pairs = zip(error.other_missing, error.other_unexpected)
    return all(m.rpartition(".")[2] == u.rpartition(".")[2] for m, u in pairs)


# Checking checkpoints ------------------------------------------------------------------------


@PITFALL.checkpoint
def check_checkpoint(subject):
    for difference in subject.diff.differences if subject.diff is not None else ():
        kind, fields = difference.kind, difference.fields
        if kind == "nesting":
            where = fields["container"].split("/")
            access = "checkpoint" + "".join(f'["{part}"]' for part in where)
            listing = subject.listing
            others = [name for name, _ in listing.entries if name != where[0]] if listing else []
            yield subject.finding(
                PITFALL,
                "ckpt-nesting",
                repairable=True,
                access=access,
                others=", ".join(f"`{o}`" for o in others[:6]) or "-",
            )
        elif kind == "renamed":
            yield subject.finding(PITFALL, "ckpt-renamed", keys=difference.keys, **fields)
        elif kind in ("missing", "unexpected"):
            yield subject.finding(
                PITFALL,
                f"ckpt-{kind}",
                keys=difference.keys,
                count=len(difference.keys),
                groups=fields["groups"],
            )
