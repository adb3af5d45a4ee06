"""TD010 embedding-index-out-of-range: a token id at or beyond the embedding's size."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD010",
    name="embedding-index-out-of-range",
    title={
        "en": "Embedding index out of range (token id >= num_embeddings)",
        "zh": "Embedding 索引越界（token id >= num_embeddings）",
    },
    messages={
        "": {
            "en": "an id passed to an embedding is negative or not smaller than its "
            "`num_embeddings`: the vocabulary and the embedding table disagree",
            "zh": "传给 embedding 的某个 id 为负数，或者不小于它的 `num_embeddings`：词表和 embedding 表的大小不一致",
        }
    },
    fix_hint={
        "en": "Check `ids.min() >= 0 and ids.max() < embedding.num_embeddings` on a batch. "
        "After adding tokens to a tokenizer call `model.resize_token_embeddings("
        "len(tokenizer))`; build `nn.Embedding(vocab_size, ...)` from the real vocabulary "
        "size (padding and unknown ids included); truncate inputs to the model's maximum "
        "length so position ids stay in range.",
        "zh": "拿一个 batch 检查 `ids.min() >= 0 and ids.max() < embedding.num_embeddings`。"
        "给 tokenizer 加了新 token 之后要调用 `model.resize_token_embeddings(len(tokenizer))`；"
        "`nn.Embedding(vocab_size, ...)` 要按真实的词表大小创建（包括 padding 和 unknown 的 id）；"
        "把输入截断到模型支持的最大长度，使位置 id 不越界。",
    },
    docs={
        "en": """
## What it catches
An embedding lookup with an index outside `[0, num_embeddings)`: `index out of range in
self` raised from `nn.Embedding` / `F.embedding` on the CPU, and the CUDA assertion
`srcIndex < srcSelectDimSize` of the `indexSelectLargeIndex`/`indexSelectSmallIndex` kernels
on the GPU.

## Why is this bad?
An embedding is a table with one row per id; an id equal to or above the number of rows has
no row. The ids and the table come from different places, so they drift apart:

- a tokenizer whose vocabulary grew (added special tokens, a different checkpoint) while the
  model's embedding kept its old size: `model.resize_token_embeddings(len(tokenizer))` is
  missing;
- `nn.Embedding(vocab_size, ...)` built from a vocabulary count that forgets the padding,
  unknown or end-of-sequence ids, which are often `vocab_size` itself, or `-1`;
- sequences longer than the model's maximum, so position ids exceed
  `max_position_embeddings`; token type ids beyond `type_vocab_size`.

On the GPU the failure is a device-side assert: reported asynchronously, at a later line, and
the CUDA context cannot be used any more.

## Symptoms
CPU: `IndexError: index out of range in self` from `torch.embedding`; before torch 1.5:
`RuntimeError: index out of range at ../aten/src/TH/generic/THTensorEvenMoreMath.cpp:191`.

GPU: `Indexing.cu:1146: indexSelectLargeIndex: block: [18,0,0], thread: [5,0,0] Assertion
srcIndex < srcSelectDimSize failed.` (torch 0.x: `THCTensorIndex.cu`), then
`RuntimeError: CUDA error: device-side assert triggered`.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html
- https://huggingface.co/docs/transformers/main_classes/model
""",
        "zh": """
## What it catches
embedding 查表时索引不在 `[0, num_embeddings)` 范围内：CPU 上 `nn.Embedding` / `F.embedding` 抛出的
`index out of range in self`，以及 GPU 上 `indexSelectLargeIndex`/`indexSelectSmallIndex` 内核的
CUDA 断言 `srcIndex < srcSelectDimSize`。

## Why is this bad?
embedding 是一张每个 id 占一行的表；等于或大于行数的 id 没有对应的行。id 和这张表来自不同的地方，
很容易对不上：

- tokenizer 的词表变大了（加了特殊 token，或换了 checkpoint），模型的 embedding 却还是原来的大小：
  少了 `model.resize_token_embeddings(len(tokenizer))`；
- `nn.Embedding(vocab_size, ...)` 按词表计数创建，却漏算了 padding、unknown 或结束符的 id，
  而这些 id 往往正好是 `vocab_size` 本身，或者是 `-1`；
- 序列长度超过模型支持的最大长度，位置 id 超出 `max_position_embeddings`；token type id 超出
  `type_vocab_size`。

在 GPU 上，这表现为 device-side assert：错误异步报告，出现在后面的某一行，并且 CUDA 上下文无法再使用。

## Symptoms
CPU：`torch.embedding` 抛出 `IndexError: index out of range in self`；torch 1.5 之前：
`RuntimeError: index out of range at ../aten/src/TH/generic/THTensorEvenMoreMath.cpp:191`。

GPU：`Indexing.cu:1146: indexSelectLargeIndex: block: [18,0,0], thread: [5,0,0] Assertion
srcIndex < srcSelectDimSize failed.`（torch 0.x 中是 `THCTensorIndex.cu`），随后是
`RuntimeError: CUDA error: device-side assert triggered`。

## References
- https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html
- https://huggingface.co/docs/transformers/main_classes/model
""",
    },
    example="""
import torch
import torch.nn as nn

vocab = {"<pad>": 0, "hello": 1, "world": 2}
embedding = nn.Embedding(len(vocab), 16)
unknown_id = len(vocab)
ids = torch.tensor([vocab["hello"], unknown_id])
vectors = embedding(ids)
""",
    use_instead="""
import torch
import torch.nn as nn

vocab = {"<pad>": 0, "hello": 1, "world": 2}
unknown_id = len(vocab)
embedding = nn.Embedding(len(vocab) + 1, 16)
ids = torch.tensor([vocab["hello"], unknown_id])
vectors = embedding(ids)
""",
)

_CAUSE = {
    "en": "An id passed to an embedding is >= its `num_embeddings` (or negative): the "
    "tokenizer's vocabulary is larger than the model's embedding (tokens added without "
    "`resize_token_embeddings`), a padding/unknown id equals the vocabulary size, or a "
    "sequence is longer than the model's position embeddings.",
    "zh": "传给 embedding 的某个 id >= 它的 `num_embeddings`（或为负数）：tokenizer 的词表比模型的 "
    "embedding 大（加了 token 却没有 `resize_token_embeddings`），padding/unknown 的 id 等于"
    "词表大小，或者序列长度超过了模型的位置 embedding。",
}

# The CUDA kernels behind embedding lookups (and index_select, rarer in user code).
PITFALL.error(r"srcIndex < srcSelectDimSize", types=(), confidence=0.95, cause=_CAUSE)
# torch 1.0-1.4's embedding on the CPU.
PITFALL.error(
    r"index out of range: Tried to access index \d+ out of table with \d+ rows",
    types=(),
    confidence=0.9,
    cause=_CAUSE,
)

# TH is looked for once, ahead: `\S*TH\S*Math` would retry each TH in a long path.
_OUT_OF_RANGE = lazy_compile(
    # also quoted or capitalised by an issue's title: `IndexError: "Index out of range in self"`
    r"^[\"'\u201c]?[Ii]ndex out of range in self|^index out of range at (?=\S*?TH)\S*Math"
)
_EMBEDDING = lazy_compile(r"embedding", re.I)


@PITFALL.error_check(
    types=("IndexError", "RuntimeError"),
    words=("index out of range in self", "index out of range at"),
)
def check(block, report) -> Clue | None:
    if not _OUT_OF_RANGE.search(block.message):
        return None
    return Clue(embedding_likelihood(block), _CAUSE)


def embedding_likelihood(block) -> float:
    """`index out of range in self` comes from index_select; embeddings are its usual caller."""
    if any(_EMBEDDING.search(f"{frame.function} {frame.source or ''}") for frame in block.frames):
        return 0.95
    if any("index_select" in (frame.source or "") for frame in block.frames):
        return 0.6  # index-out-of-range explains a plain index_select better
    return 0.85


# A log line that carries the message after its own prefix, its traceback pasted without the
# exception line: ComfyUI's `!!! Exception during processing !!! index out of range in self`, a
# logger's `ERROR: ...` or `[...] `. Only where no exception was parsed: one that was is read
# by `check`, with its frames.
_LOGGED = lazy_compile(
    r"(?m)(?:^|!!! |\] |: |ERROR |- )[\"'\u201c]?[Ii]ndex out of range in self\b"
)


@PITFALL.error_check(types=(), words=("index out of range in self",))
def logged(block, report) -> Clue | None:
    if report.exceptions or report.once(_logged) is None:
        return None
    return Clue(0.8, _CAUSE)


def _logged(report):
    return _LOGGED.search(report.text or "")


# Retold or cut short ("IndexError: index out of range", "an index out of range error"). Python's
# own messages name their container first ("list index out of range"): a word just before is
# not ours. Only an embedding's when the text speaks of one, of a vocabulary or of tokens.
_RETOLD = lazy_compile(r"(?<!\w )index out of range(?! in self| at )")
_VOCABULARY = lazy_compile(r"[Ee]mbedding|vocab|\btokens?\b")


@PITFALL.error_check(types=(), words=("index out of range",))
def retold(block, report) -> Clue | None:
    if not _RETOLD.search(block.message) or not report.search(_VOCABULARY):
        return None
    return Clue(0.7, _CAUSE)


@PITFALL.error_check(types=("RuntimeError",), words=("device-side assert triggered",))
def check_async(block, report) -> Clue | None:
    """A device-side assert whose traceback runs through an embedding (CUDA_LAUNCH_BLOCKING=1)."""
    if "device-side assert triggered" not in block.message:
        return None
    if not any(
        _EMBEDDING.search(f"{frame.function} {frame.source or ''}") for frame in block.frames[-3:]
    ):
        return None
    return Clue(0.7, _CAUSE)


# A CUDA indexing kernel's assert ("index out of bounds"), reported by someone who says the
# embedding's size and the tokenizer's vocabulary differ: the ids index past the embedding.
_INDEX_ASSERT = lazy_compile(r"index out of bounds|index < sizes\[i\]")
_SIZES_DIFFER = lazy_compile(
    r"(?:[Ee]mbedding|[Vv]ocab)[\w ']{0,60}(?:size|length|dimension)s?[\w ']{0,20}?"
    r" (?:differs?|is larger|is bigger|is greater|exceeds?|does not match|doesn't match|mismatch)"
)
_VOCAB_WORD = lazy_compile(r"[Vv]ocab|[Tt]okeni[sz]er")


@PITFALL.error_check(types=(), words=("index out of bounds", "index < sizes[i]"))
def sizes_said_to_differ(block, report) -> Clue | None:
    if not _INDEX_ASSERT.search(block.message):
        return None
    said = report.search(_SIZES_DIFFER)
    if said is None or not report.search(_VOCAB_WORD) or "mbedding" not in report.text:
        return None
    return Clue(0.92, _CAUSE)


# Told in prose, as issues do: "IndexError when using BertTone with sequences longer than 512
# tokens". An IndexError (not Python's own list's) together with inputs longer than a length in
# tokens: the position embeddings end at the model's maximum length.
_PAST_MAX_LENGTH = lazy_compile(
    r"(?:longer than|more than|exceed(?:s|ing)?|over) (?:the )?(?P<length>\d{3,5}) tokens"
)


@PITFALL.error_check(types=(), words=("indexerror",))
def past_max_length(block, report) -> Clue | None:
    message = block.message
    if "IndexError" not in message or "list index out of range" in message:
        return None
    found = _PAST_MAX_LENGTH.search(message)
    if found is None:
        return None
    return Clue(
        0.7,
        {
            "en": "An IndexError with inputs longer than {length} tokens: a transformer has one "
            "position embedding per position up to its maximum length, so a tokenized sequence "
            "longer than that indexes past the table (past the vocabulary it would be the token "
            "ids instead).",
            "zh": "输入超过 {length} 个 token 时出现 IndexError：transformer 的位置 embedding 只到它的"
            "最大长度为止，更长的 token 序列会越过这张表来索引（如果越过的是词表，则是 token id 的问题）。",
        },
        {
            "en": "Truncate when tokenizing (`tokenizer(..., truncation=True, max_length={length})`) "
            "or split long documents into windows of at most {length} tokens.",
            "zh": "分词时截断（`tokenizer(..., truncation=True, max_length={length})`），或把长文档切成"
            "不超过 {length} 个 token 的窗口。",
        },
        found.groupdict(),
    )


# transformers' tokenizer warns when it encodes a sequence longer than the model's positions:
# "Token indices sequence length is longer than the specified maximum sequence length for this
# model (1017 > 512). Running this sequence through the model will result in indexing errors".
# Alone, or with the indexing error it announces, it is the cause; next to an unrelated error
# it is only a warning.
_TOO_LONG = lazy_compile(
    r"[Ss]equence length is longer than the specified maximum sequence length"
    r"(?: for this model)? \((?P<length>\d+) > (?P<max>\d+)\)",
)
_ANNOUNCED = lazy_compile(r"(?<!list )[Ii]ndex|device-side assert|srcIndex")
_TOO_LONG_CAUSE = {
    "en": "The tokenizer made a sequence of {length} tokens for a model with {max} positions: "
    "passed to the model, it indexes the position embeddings past their end (an "
    "`index out of range in self` error, or a device-side assert on the GPU).",
    "zh": "tokenizer 生成了 {length} 个 token 的序列，而模型只有 {max} 个位置：传给模型后，它会越过"
    "位置 embedding 的末尾去索引（报 `index out of range in self`，在 GPU 上则是 device-side assert）。",
}
_TOO_LONG_FIX = {
    "en": "Truncate when tokenizing (`tokenizer(text, truncation=True, max_length={max})`), "
    "or split long texts into windows of at most {max} tokens.",
    "zh": "分词时截断（`tokenizer(text, truncation=True, max_length={max})`），或把长文本切成不超过 "
    "{max} 个 token 的窗口。",
}


def _other_errors(report) -> bool:
    """An exception other than the announced length error (asked once per input)."""
    return any(not _ANNOUNCED.search(error.message) for error in report.exceptions)


@PITFALL.error_check(
    types=(),
    words=("sequence length is longer than the specified maximum sequence length",),
)
def longer_than_positions(block, report) -> Clue | None:
    found = _TOO_LONG.search(block.message)
    if found is None:
        return None
    if report.once(_other_errors):
        return None  # another error is what the run died of
    return Clue(0.75, _TOO_LONG_CAUSE, _TOO_LONG_FIX, found.groupdict())
