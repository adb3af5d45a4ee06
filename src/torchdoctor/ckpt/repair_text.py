"""The lines that say which safe repairs were made to a checkpoint, in the user's language:
shared by `torchdoctor ckpt fix` and `torchdoctor.load_state_dict`."""

from __future__ import annotations

REPAIRS = {
    "en": {
        "nesting": "unwrapped {access} (the rest of the checkpoint is not in the output)",
        "nesting-taken": "took the weights from {access}",
        "nesting-kept": "repaired the weights inside {access}; the rest is kept",
        "prefix-checkpoint": "stripped the prefix `{prefix}` from {count} keys",
        "prefix-model": "added the prefix `{prefix}` to {count} keys",
        "batches-tracked-missing": "added {count} `num_batches_tracked` counters (0)",
        "batches-tracked-unexpected": "dropped {count} `num_batches_tracked` counters",
        "cpu": "moved {count} tensors from {devices} to the CPU",
        "dtype": "converted floating-point tensors to {dtype}",
        "plain": "turned metadata into plain values: {what}",
        "safetensors": "wrote the weights as safetensors",
    },
    "zh": {
        "nesting": "取出了 {access}（checkpoint 的其余部分不在输出里）",
        "nesting-taken": "从 {access} 中取出了权重",
        "nesting-kept": "修复了 {access} 中的权重；其余部分保留",
        "prefix-checkpoint": "从 {count} 个键上去掉了前缀 `{prefix}`",
        "prefix-model": "给 {count} 个键加上了前缀 `{prefix}`",
        "batches-tracked-missing": "补上了 {count} 个 `num_batches_tracked` 计数器（0）",
        "batches-tracked-unexpected": "删掉了 {count} 个 `num_batches_tracked` 计数器",
        "cpu": "把 {count} 个张量从 {devices} 移到了 CPU",
        "dtype": "把浮点张量转换成了 {dtype}",
        "plain": "把元数据转换成了普通值：{what}",
        "safetensors": "以 safetensors 格式写出权重",
    },
}


def repair_lines(diff, where, unwrap: bool | None, lang: str) -> list[str]:
    """One line per safe repair the diff applies."""
    texts = REPAIRS[lang if lang in REPAIRS else "en"]
    lines = []
    for difference in diff.differences:
        fields = difference.fields
        if difference.kind == "nesting":
            key = {True: "nesting", False: "nesting-kept", None: "nesting-taken"}[unwrap]
            lines.append(texts[key].format(access=access(where)))
        elif difference.kind == "prefix":
            lines.append(texts[f"prefix-{fields['side']}"].format(**fields))
        elif difference.kind == "batches-tracked":
            lines.append(texts[f"batches-tracked-{fields['side']}"].format(**fields))
    return lines


def access(where: tuple[str, ...]) -> str:
    """How Python code reaches the weights: `checkpoint["state_dict"]`."""
    return "checkpoint" + "".join(f'["{part}"]' for part in where)
