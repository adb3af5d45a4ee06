"""The renderers' own text (labels, headings, summaries) in English and Simplified Chinese: one
table per area, each key giving its string in every language.

Catalog entries keep their messages in their own files; what the renderers show around them is
here, so a language is added in one place and no renderer keeps a private table
(tests/test_strings.py keeps it so). Strings are `str.format` templates: both languages of a
key take the same `{fields}`, but for `{s}`, the English plural ending other languages leave out.
"""

from __future__ import annotations

# key -> {language -> template}
Table = dict[str, dict[str, str]]

# `check`'s text output (report/render.py).
CHECK: Table = {
    "none": {"en": "All checks passed.", "zh": "全部检查通过。"},
    "incomplete": {
        "en": "No problems found, but the check is incomplete: {n} error{s} above.",
        "zh": "未发现问题，但检查不完整：见上方 {n} 条错误。",
    },
    "found": {"en": "Found {n} problem{s}", "zh": "发现 {n} 个问题"},
    "fixable": {"en": "{n} fixable with --fix", "zh": "其中 {n} 个可用 --fix 修复"},
    "unsafe": {"en": "{n} more with --unsafe-fixes", "zh": "另有 {n} 个可用 --unsafe-fixes 修复"},
    "fixed": {"en": "Fixed {n} problem{s}.", "zh": "已修复 {n} 个问题。"},
    "see": {"en": "see `torchdoctor rule {name}`", "zh": "详见 `torchdoctor rule {name}`"},
    "end": {"en": ".", "zh": "。"},
}
# `explain`'s text output (explain/render.py, explain/match.py).
EXPLAIN: Table = {
    "header": {"en": "torchdoctor", "zh": "torchdoctor"},
    "at": {"en": "at", "zh": "位置"},
    "cause": {"en": "cause", "zh": "原因"},
    "fix": {"en": "fix", "zh": "修复"},
    "root": {"en": "likely root of", "zh": "可能是此错误的根源："},
    "linked": {"en": "likely cause", "zh": "可能的根源"},
    "more": {"en": "more", "zh": "详见"},
    "confidence": {"en": "confidence", "zh": "置信度"},
    "unknown": {
        "en": "not recognised: no pitfall in the catalog matches this error.",
        "zh": "未能识别：目录中没有与此错误匹配的问题。",
    },
    "parsed": {"en": "parsed", "zh": "解析结果"},
    "nothing": {"en": "no error found in the input.", "zh": "输入中没有找到错误。"},
    "others": {"en": "other possible causes", "zh": "其他可能的原因"},
    "log": {"en": "no exception in the input; read as a log", "zh": "输入中没有异常，按日志读取"},
    "see_rule": {"en": "See `torchdoctor rule {name}`.", "zh": "详见 `torchdoctor rule {name}`。"},
}
# `run`: the summary at exit and the crash's context (watch/report.py, watch/runner.py).
WATCH: Table = {
    "none": {
        "en": "torchdoctor: watched {steps} step(s): no findings",
        "zh": "torchdoctor：共监视 {steps} 步：未发现问题",
    },
    "some": {
        "en": "torchdoctor: watched {steps} step(s): {count} finding(s)",
        "zh": "torchdoctor：共监视 {steps} 步：发现 {count} 个问题",
    },
    "context": {
        "en": "Tensors in the failing frames (shape, dtype, device):",
        "zh": "出错帧中的张量（形状、数据类型、设备）：",
    },
}
# `run --report-html` (watch/html.py); `lang` is the page's `<html lang>`.
WATCH_HTML: Table = {
    "lang": {"en": "en", "zh": "zh-CN"},
    "title": {"en": "torchdoctor: training run report", "zh": "torchdoctor：训练运行报告"},
    "script": {"en": "script", "zh": "脚本"},
    "args": {"en": "arguments", "zh": "参数"},
    "torch": {"en": "torch", "zh": "torch"},
    "duration": {"en": "duration", "zh": "用时"},
    "exit": {"en": "exit code", "zh": "退出码"},
    "rank": {"en": "rank", "zh": "rank"},
    "steps": {"en": "steps", "zh": "步数"},
    "clean": {"en": "no problems found", "zh": "未发现问题"},
    "crashed": {"en": "crashed", "zh": "已崩溃"},
    "findings_n": {"en": "{n} findings", "zh": "{n} 个问题"},
    "finding_1": {"en": "1 finding", "zh": "1 个问题"},
    "loss": {"en": "Loss", "zh": "损失 (loss)"},
    "lr": {"en": "Learning rate", "zh": "学习率"},
    "grad": {"en": "Gradient norm per layer", "zh": "各层梯度范数"},
    "findings": {"en": "Findings", "zh": "发现的问题"},
    "crash": {"en": "Crash", "zh": "崩溃"},
    "step": {"en": "step", "zh": "步"},
    "log": {"en": "log scale", "zh": "对数刻度"},
    "nonfinite": {"en": "non-finite (NaN/Inf)", "zh": "非有限值 (NaN/Inf)"},
    "missing": {"en": "not recorded", "zh": "未记录"},
    "finding_marker": {"en": "finding", "zh": "问题"},
    "no_metrics": {
        "en": "No training metrics were recorded for this run.",
        "zh": "本次运行没有记录训练指标。",
    },
    "no_series": {"en": "Not recorded.", "zh": "未记录。"},
    "no_findings": {"en": "No findings.", "zh": "没有发现问题。"},
    "code": {"en": "code", "zh": "代码"},
    "name": {"en": "name", "zh": "名称"},
    "module": {"en": "module", "zh": "模块"},
    "message": {"en": "message", "zh": "说明"},
    "fix": {"en": "fix", "zh": "修复"},
    "where": {"en": "where", "zh": "位置"},
    "layers_shown": {
        "en": (
            "{shown} of {total} layers shown: those whose gradients went non-finite first, then "
            "the largest norms. {left} left out."
        ),
        "zh": (
            "显示 {shown} / {total} 层：先是梯度最早变为非有限值的层，再是范数最大的层。另有 "
            "{left} 层未显示。"
        ),
    },
    "columns": {
        "en": "Each column is the maximum over {n} steps.",
        "zh": "每一列是 {n} 步中的最大值。",
    },
    "rows_left": {"en": "{n} more findings not shown.", "zh": "另有 {n} 个问题未显示。"},
    "error": {"en": "error", "zh": "错误"},
    "at": {"en": "at", "zh": "位置"},
    "causes": {"en": "Likely causes", "zh": "可能的原因"},
    "cause": {"en": "cause", "zh": "原因"},
    "confidence": {"en": "confidence", "zh": "置信度"},
    "unknown": {
        "en": "No pitfall in the catalog matches this error.",
        "zh": "目录中没有与此错误匹配的问题。",
    },
}
# `ckpt inspect|diff|fix` and `load_state_dict` (ckpt/).
CKPT: Table = {
    "zip": {
        "en": "PyTorch checkpoint (zip format, torch >= 1.6)",
        "zh": "PyTorch checkpoint（zip 格式，torch >= 1.6）",
    },
    "legacy": {
        "en": (
            "PyTorch checkpoint (legacy format, torch < 1.6 or "
            "_use_new_zipfile_serialization=False)"
        ),
        "zh": "PyTorch checkpoint（旧格式，torch < 1.6 或 _use_new_zipfile_serialization=False）",
    },
    "pickle": {
        "en": "plain pickle (not written by torch.save)",
        "zh": "普通 pickle（不是 torch.save 写的）",
    },
    "safetensors": {"en": "safetensors", "zh": "safetensors"},
    "bare": {"en": "a bare state_dict", "zh": "一个单纯的 state_dict"},
    "nested": {
        "en": "a training checkpoint; the weights are under {where}",
        "zh": "训练 checkpoint；权重在 {where} 下",
    },
    "module": {
        "en": "a whole pickled nn.Module ({cls}); its state_dict keys are listed",
        "zh": "整个被 pickle 的 nn.Module（{cls}）；下面列出它的 state_dict 键",
    },
    "none": {"en": "no state dict found", "zh": "没有找到 state dict"},
    "structure": {"en": "structure", "zh": "结构"},
    "tensors": {"en": "tensors", "zh": "张量"},
    "params": {"en": "parameters", "zh": "参数"},
    "dtypes": {"en": "dtypes", "zh": "数据类型"},
    "devices": {"en": "saved on", "zh": "保存时所在设备"},
    "prefix": {"en": "key prefix", "zh": "键前缀"},
    "batchnorm": {"en": "BatchNorm", "zh": "BatchNorm"},
    "counters_ok": {
        "en": "{n} layers, num_batches_tracked present",
        "zh": "{n} 层，num_batches_tracked 齐全",
    },
    "counters_missing": {
        "en": (
            "{n} layers, num_batches_tracked missing in {m} (load_state_dict fills them in: "
            "{fills})"
        ),
        "zh": "{n} 层，其中 {m} 层缺少 num_batches_tracked（load_state_dict 会自动补上：{fills}）",
    },
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    "weights_only": {"en": "weights_only=True", "zh": "weights_only=True"},
    "accepted": {"en": "accepted", "zh": "可以加载"},
    "refused": {"en": "refused, needs {names}", "zh": "会被拒绝，需要 {names}"},
    "data": {"en": "data", "zh": "数据"},
    "class": {"en": "class: trust", "zh": "类：需要信任"},
    "code": {"en": "code: DANGER", "zh": "代码：危险"},
    "keys": {"en": "keys", "zh": "键"},
    "more": {"en": "... {n} more (--keys lists all)", "zh": "……还有 {n} 个（--keys 列出全部）"},
    "clean": {"en": "Nothing to report.", "zh": "没有发现问题。"},
    "found": {"en": "Found {n} problem(s).", "zh": "发现 {n} 个问题。"},
    "see": {"en": "see `torchdoctor rule {name}`", "zh": "详见 `torchdoctor rule {name}`"},
    "vs": {"en": "{a} vs {b}: {n} keys match", "zh": "{a} 对比 {b}：{n} 个键一致"},
    "after": {
        "en": "After the safe repairs ({kinds}) it loads with strict=True: `torchdoctor ckpt fix`.",
        "zh": "经过安全修复（{kinds}）后可以用 strict=True 加载：`torchdoctor ckpt fix`。",
    },
    "still": {
        "en": "Still does not fit after the safe repairs: {kinds}.",
        "zh": "安全修复之后仍然对不上：{kinds}。",
    },
    "dtype_note": {
        "en": (
            "note: {n} tensors are {a} in the checkpoint and {b} in the reference "
            "(load_state_dict casts them)"
        ),
        "zh": (
            "注意：{n} 个张量在 checkpoint 中是 {a}，在参照中是 {b}（load_state_dict 会自动转换）"
        ),
    },
    "wrote": {
        "en": "Wrote {out}: {n} tensors, {size}.",
        "zh": "已写入 {out}：{n} 个张量，{size}。",
    },
    "repairs": {"en": "repairs", "zh": "修复"},
    "none_needed": {"en": "no repair needed", "zh": "不需要修复"},
    "proved": {
        "en": "Loaded into the model with strict=True: every key and shape fits.",
        "zh": "已用 strict=True 加载进模型：所有键和形状都对得上。",
    },
    "reloaded": {
        "en": "Read back with torch.load(weights_only=True): OK.",
        "zh": "已用 torch.load(weights_only=True) 重新读取：正常。",
    },
    "reloaded_st": {
        "en": "Read back as safetensors: OK.",
        "zh": "已按 safetensors 重新读取：正常。",
    },
    "not_written": {"en": "Nothing written to {out}.", "zh": "没有写入 {out}。"},
    "repair-nesting": {
        "en": "unwrapped {access} (the rest of the checkpoint is not in the output)",
        "zh": "取出了 {access}（checkpoint 的其余部分不在输出里）",
    },
    "repair-nesting-taken": {
        "en": "took the weights from {access}",
        "zh": "从 {access} 中取出了权重",
    },
    "repair-nesting-kept": {
        "en": "repaired the weights inside {access}; the rest is kept",
        "zh": "修复了 {access} 中的权重；其余部分保留",
    },
    "repair-prefix-checkpoint": {
        "en": "stripped the prefix `{prefix}` from {count} keys",
        "zh": "从 {count} 个键上去掉了前缀 `{prefix}`",
    },
    "repair-prefix-model": {
        "en": "added the prefix `{prefix}` to {count} keys",
        "zh": "给 {count} 个键加上了前缀 `{prefix}`",
    },
    "repair-wrapped-part": {
        "en": "moved `module.` to where the model has it in {count} keys (`{example}` -> "
        "`{target}`)",
        "zh": "在 {count} 个键中把 `module.` 移到了模型中的位置（`{example}` -> `{target}`）",
    },
    "repair-batches-tracked-missing": {
        "en": "added {count} `num_batches_tracked` counters (0)",
        "zh": "补上了 {count} 个 `num_batches_tracked` 计数器（0）",
    },
    "repair-batches-tracked-unexpected": {
        "en": "dropped {count} `num_batches_tracked` counters",
        "zh": "删掉了 {count} 个 `num_batches_tracked` 计数器",
    },
    "repair-cpu": {
        "en": "moved {count} tensors from {devices} to the CPU",
        "zh": "把 {count} 个张量从 {devices} 移到了 CPU",
    },
    "repair-dtype": {
        "en": "converted floating-point tensors to {dtype}",
        "zh": "把浮点张量转换成了 {dtype}",
    },
    "repair-plain": {
        "en": "turned metadata into plain values: {what}",
        "zh": "把元数据转换成了普通值：{what}",
    },
    "repair-safetensors": {
        "en": "wrote the weights as safetensors",
        "zh": "以 safetensors 格式写出权重",
    },
    "fix_command": {
        "en": "`torchdoctor ckpt fix {path} -o FIXED.pth{model}` repairs this",
        "zh": "`torchdoctor ckpt fix {path} -o FIXED.pth{model}` 可以修复",
    },
    "the_model": {"en": "the model", "zh": "模型"},
    "other_file": {"en": "`{path}`", "zh": " `{path}` "},
}

# Each area's table, by the name keys start with: "check.found", "ckpt.repair-cpu".
AREAS: dict[str, Table] = {
    "check": CHECK,
    "explain": EXPLAIN,
    "watch": WATCH,
    "watch_html": WATCH_HTML,
    "ckpt": CKPT,
}


def text(key: str, lang: str, **fields: object) -> str:
    """The string `key` ("area.name") in `lang`, English for a language it lacks, filled in."""
    area, _, name = key.partition(".")
    return _pick(AREAS[area][name], lang).format(**fields)


def in_every_language(key: str, **fields: object) -> dict[str, str]:
    """The string `key` filled in, in every language: for text picked later, as the catalog's is."""
    area, _, name = key.partition(".")
    return {lang: template.format(**fields) for lang, template in AREAS[area][name].items()}


def labels(area: str, lang: str) -> dict[str, str]:
    """Every string of `area` in `lang`, unfilled: for a renderer that hands its labels around."""
    return {name: _pick(languages, lang) for name, languages in AREAS[area].items()}


def _pick(languages: dict[str, str], lang: str) -> str:
    return languages.get(lang) or languages["en"]
