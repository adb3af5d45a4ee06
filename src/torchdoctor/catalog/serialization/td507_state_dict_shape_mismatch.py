"""TD507 state-dict-shape-mismatch: a checkpoint's tensor has another shape than the model's."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall
from torchdoctor.catalog.sdk import state_dicts as sd_errors

PITFALL = Pitfall(
    code="TD507",
    name="state-dict-shape-mismatch",
    title={
        "en": "Checkpoint tensors have other shapes than the model's parameters",
        "zh": "checkpoint 中张量的形状与模型参数不一致",
    },
    messages={
        "": {
            "en": "`load_state_dict` finds the same keys but other shapes: the model was built with "
            "other hyperparameters than the checkpoint (classes, width, vocabulary)",
            "zh": "`load_state_dict` 找到了相同的键，但形状不同：模型的超参数（类别数、宽度、词表）"
            "与训练 checkpoint 时不一样",
        },
        "ckpt-head": {
            "en": "the output layer differs in size: {layers} has {checkpoint} outputs in the "
            "checkpoint and {model} in {reference} (fine-tuning to another number of "
            "classes?): drop these keys and load the rest, or build the model with "
            "{checkpoint} outputs",
            "zh": "输出层的大小不同：{layers} 在 checkpoint 中有 {checkpoint} 个输出，在{reference}中有 "
            "{model} 个（换了类别数做微调？）：删掉这些键再加载其余部分，或者按 {checkpoint} 个"
            "输出构建模型",
        },
        "ckpt-shape": {
            "en": "{count} tensors have other shapes than in {reference}, e.g. `{key}`: {checkpoint} "
            "in the checkpoint, {model} in {reference}: the model was built with other "
            "hyper-parameters (width, vocabulary, classes)",
            "zh": "{count} 个张量的形状与{reference}不同，如 `{key}`：checkpoint 中是 {checkpoint}，"
            "{reference}中是 {model}：模型构建时用了不同的超参数（宽度、词表、类别数）",
        },
    },
    fix_hint={
        "en": "Build the model with the checkpoint's configuration; to fine-tune with another "
        "number of classes, drop the head's keys from the state dict and load with "
        "`strict=False`, checking that only those keys are reported missing; "
        "`torchdoctor ckpt diff FILE --model model.py:build` lists which layers differ.",
        "zh": "用 checkpoint 训练时的配置构建模型；如果是换了类别数做微调，先从 state dict 中删掉"
        "分类头的键，再用 `strict=False` 加载，并确认报告缺失的只有这些键；"
        "`torchdoctor ckpt diff FILE --model model.py:build` 会列出哪些层不同。",
    },
    docs={
        "en": """
## What it catches
A `load_state_dict` error that lists `size mismatch for <key>`: the key exists in both the
checkpoint and the model, with different shapes.

## Why is this bad?
The model in memory is not the model that was trained. Most often it is built with other
hyperparameters than the checkpoint: a different `num_classes` (an ImageNet checkpoint with 1000
outputs loaded into a 10-class model), width or depth multiplier, vocabulary size, number of
anchors, or input channels. When only the classification head differs, that is usually
intended fine-tuning, and the head's weights must be left out rather than loaded; otherwise the
fix is to construct the model with the same configuration the checkpoint was trained with.

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: size mismatch for fc.weight: copying a
param with shape torch.Size([1000, 512]) from checkpoint, the shape in current model is
torch.Size([10, 512]).`; torch 0.4-1.0: `size mismatch for fc.weight: copying a param of
torch.Size([1000, 512]) from checkpoint, where the shape is torch.Size([10, 512]) in current
model.`; torch 0.3: `RuntimeError: While copying the parameter named fc.weight, whose dimensions
in the model are torch.Size([10, 512]) and whose dimensions in the checkpoint are
torch.Size([1000, 512]).`
""",
        "zh": """
## What it catches
`load_state_dict` 报错中出现 `size mismatch for <key>`：checkpoint 和模型里都有这个键，但形状不同。

## Why is this bad?
内存里的模型并不是训练时的那个模型。最常见的是构建模型用的超参数与 checkpoint 不一致：
`num_classes` 不同（把 1000 类输出的 ImageNet checkpoint 加载进 10 类模型）、宽度或深度系数、
词表大小、anchor 数量、输入通道数不同。如果只有分类头不同，通常是有意的微调，此时应该跳过分类头的
权重而不是加载它；其他情况下，应当按照 checkpoint 训练时的配置来构建模型。

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ResNet: size mismatch for fc.weight: copying a
param with shape torch.Size([1000, 512]) from checkpoint, the shape in current model is
torch.Size([10, 512]).`；torch 0.4-1.0 中为 `size mismatch for fc.weight: copying a param of
torch.Size([1000, 512]) from checkpoint, where the shape is torch.Size([10, 512]) in current
model.`；torch 0.3 中为 `RuntimeError: While copying the parameter named fc.weight, whose
dimensions in the model are torch.Size([10, 512]) and whose dimensions in the checkpoint are
torch.Size([1000, 512]).`
""",
    },
    example="""
import torch
import torchvision

model = torchvision.models.resnet18(num_classes=10)
state_dict = torch.load("resnet18-imagenet.pth")
model.load_state_dict(state_dict)
""",
    use_instead="""
import torch
import torchvision

model = torchvision.models.resnet18(num_classes=10)
state_dict = torch.load("resnet18-imagenet.pth")
for key in ("fc.weight", "fc.bias"):
    state_dict.pop(key)
result = model.load_state_dict(state_dict, strict=False)
assert set(result.missing_keys) == {"fc.weight", "fc.bias"}, result
""",
)

HEAD = {
    "cause": {
        "en": "Only the last layer differs: `{layer}` has {checkpoint_size} outputs in the "
        "checkpoint and {model_size} in the model (`{key}`: checkpoint {checkpoint}, "
        "model {model}). The checkpoint was trained with another number of classes; "
        "this is fine-tuning with a new head.",
        "zh": "只有最后一层不同：`{layer}` 在 checkpoint 中有 {checkpoint_size} 个输出，在模型中有 "
        "{model_size} 个（`{key}`：checkpoint {checkpoint}，模型 {model}）。checkpoint "
        "是用另一个类别数训练的，这是换了新分类头的微调。",
    },
    "fix": {
        "en": "Drop the head's keys ({keys}) from the state dict, load with "
        "`result = model.load_state_dict(state_dict, strict=False)` and check that "
        "`result.missing_keys` holds only them; or build the model with "
        "{checkpoint_size} classes to use the checkpoint's head as is.",
        "zh": "从 state dict 中删掉分类头的键（{keys}），用 "
        "`result = model.load_state_dict(state_dict, strict=False)` 加载，并确认 "
        "`result.missing_keys` 中只有它们；若要原样使用 checkpoint 的分类头，"
        "就用 {checkpoint_size} 个类别构建模型。",
    },
}
EMBEDDING = {
    "en": "`{key}` has {checkpoint_size} rows in the checkpoint and {model_size} in the model "
    "(tensors that differ: {count}): the vocabulary (or label set) the model is built "
    "with is not the one the checkpoint was trained with.",
    "zh": "`{key}` 在 checkpoint 中有 {checkpoint_size} 行，在模型中有 {model_size} 行"
    "（共 {count} 个张量不一致）：构建模型所用的词表（或标签集合）与训练 checkpoint 时不同。",
}
EMBEDDING_FIX = {
    "en": "Build the model with the vocabulary or tokenizer saved with the checkpoint (the "
    "same vocab file, `num_embeddings` / `vocab_size`).",
    "zh": "用与 checkpoint 一起保存的词表或 tokenizer 构建模型（同一个词表文件、相同的 "
    "`num_embeddings` / `vocab_size`）。",
}
GENERIC = {
    "en": "`{key}` is {checkpoint} in the checkpoint but {model} in the model (tensors that "
    "differ: {count}, in {layers}): the model is built with other hyperparameters than the "
    "checkpoint (width, depth, number of classes or channels).{extra}",
    "zh": "`{key}` 在 checkpoint 中是 {checkpoint}，在模型中是 {model}（共 {count} 个张量不一致，"
    "涉及 {layers}）：构建模型的超参数（宽度、深度、类别数或通道数）与 checkpoint 不同。"
    "{extra}",
}
# The message cut off before the model's shape.
CUT_OFF = {
    "en": "`{key}` is {checkpoint} in the checkpoint and has another shape in the model (the "
    "message is cut off before it; tensors that differ: {count}, in {layers}): the model is "
    "built with other hyperparameters than the checkpoint (width, depth, number of classes or "
    "channels).{extra}",
    "zh": "`{key}` 在 checkpoint 中是 {checkpoint}，在模型中是另一个形状（信息在此之前被截断；共 {count} "
    "个张量不一致，涉及 {layers}）：构建模型的超参数（宽度、深度、类别数或通道数）与 checkpoint "
    "不同。{extra}",
}
ALSO_KEYS = {
    "en": " {missing} keys are missing and {unexpected} unexpected as well: probably another "
    "variant of the architecture.",
    "zh": "另外还有 {missing} 个键缺失、{unexpected} 个键多余：很可能是该架构的另一个变体。",
}


@PITFALL.error_check(types=(), words=("checkpoint",))
def explain(block, report) -> Clue | None:
    error = sd_errors.from_block(block, report)
    if error is None or not error.mismatched:
        return None
    first = error.mismatched[0]
    fields = {
        "key": first.key,
        "layer": first.layer,
        "count": str(len(error.mismatched)),
        "checkpoint": sd_errors.size(first.checkpoint),
        "model": sd_errors.size(first.model),
    }
    top = sd_errors.kind(error) == "shape"
    other_keys = error.other_missing or error.other_unexpected
    confidence = (0.85 if other_keys else 0.95) if top else 0.6
    head = sd_errors.head_change(error)
    if head is not None:
        fields.update(
            checkpoint_size=str(head[0]),
            model_size=str(head[1]),
            keys=", ".join(f"`{m.key}`" for m in error.mismatched),
        )
        return Clue(confidence, HEAD["cause"], HEAD["fix"], fields)
    embedding = sd_errors.embedding_change(error)
    if embedding is not None:
        fields.update(checkpoint_size=str(embedding[0]), model_size=str(embedding[1]))
        return Clue(confidence, EMBEDDING, EMBEDDING_FIX, fields)
    layers = sd_errors.groups(tuple(m.key for m in error.mismatched))
    extra = {lang: "" for lang in ALSO_KEYS}
    if other_keys:
        extra = {
            lang: text.format(
                missing=len(error.other_missing), unexpected=len(error.other_unexpected)
            )
            for lang, text in ALSO_KEYS.items()
        }
    generic = CUT_OFF if not first.model else GENERIC
    cause = {lang: text.replace("{extra}", extra[lang]) for lang, text in generic.items()}
    return Clue(confidence, cause, None, {**fields, "layers": layers})


@PITFALL.checkpoint
def check_checkpoint(subject):
    for difference in subject.diff.differences if subject.diff is not None else ():
        fields = {k: v for k, v in difference.fields.items() if k != "shapes"}
        if difference.kind in ("head", "shape"):
            yield subject.finding(
                PITFALL, f"ckpt-{difference.kind}", keys=difference.keys, **fields
            )
