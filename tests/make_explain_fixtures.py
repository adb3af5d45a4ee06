"""Regenerate the reproduced explain fixtures, `tests/fixtures/explain/<name>/torch213-<what>.txt`.

Not a pytest test (no `test_` prefix): run it by hand with torch 2.13 (CPU) installed.

    python tests/make_explain_fixtures.py              # every case
    python tests/make_explain_fixtures.py CASE...      # only these cases (a case is `<what>`,
                                                       # or a catalog name for all its cases)
    python tests/make_explain_fixtures.py --list       # case -> fixture path

Each case is a small user program (`train.py`, sometimes with helper files next to it) written
to a fresh temporary project directory and run there in a subprocess with this Python; stdout
and stderr are captured together, unbuffered, so warnings and prints keep their real order.
Some cases first run a `pre` program (e.g. one that saves the checkpoint the case then loads);
its output is not kept. The output is written verbatim apart from machine-specific prefixes:
the project directory becomes `/home/user/project`, `$HOME` `/home/user`, site-packages
`/usr/lib/python3.11/site-packages`, the stdlib `/usr/lib/python3.11` and the interpreter's
bin directory `/usr/bin`. Memory addresses, timings and pids are left as printed.

Every fixture starts with `#| ` header lines (the format: tests/fixtures/README.md):

    #| source: reproduced with torch 2.13.0 CPU by tests/make_explain_fixtures.py (case <what>)
    #| expect: <catalog name that must be the top answer of `torchdoctor explain`>
    #| note: <only for cases whose surface message points elsewhere>

A case whose output lacks its expected text (`must`) makes the script fail instead of
writing a useless fixture.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "fixtures" / "explain"
PROJECT = "/home/user/project"
USER_HOME = "/home/user"
SITE = "/usr/lib/python3.11/site-packages"
STDLIB = "/usr/lib/python3.11"
BIN = "/usr/bin"


@dataclass
class Case:
    expect: str  # catalog name (fixture directory)
    what: str  # case name, fixture file torch213-<what>.txt
    files: dict[str, str]  # project files, relative path -> source
    must: list[str]  # texts the output must contain
    cmd: list[str] = field(default_factory=lambda: ["python", "train.py"])
    pre: list[list[str]] = field(default_factory=list)  # commands run first, output dropped
    note: str | None = None
    nofile: int | None = None  # soft RLIMIT_NOFILE for the run (a low `ulimit -n`)
    # A private /dev/shm of this size for the run, as in a container started without
    # `--shm-size` (`unshare -m`: needs root).
    shm_size: str | None = None
    timeout: int = 300


CASES: dict[str, Case] = {}


def case(expect, what, must, files=None, note=None, **kw):
    """Register a case; `files` may be one source (train.py) or a dict of files."""
    if isinstance(files, str):
        files = {"train.py": files}
    assert what not in CASES, what
    CASES[what] = Case(
        expect,
        what,
        {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()},
        [must] if isinstance(must, str) else must,
        note=note,
        **kw,
    )


# --------------------------------------------------------------------------- dtype-mismatch

case(
    "dtype-mismatch",
    "linear-half-input",
    "mat1 and mat2 must have the same dtype",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    x = torch.randn(32, 128).half()  # "save memory"
    logits = model(x)
    print(logits.shape)
""",
)

case(
    "dtype-mismatch",
    "bf16-model-float-input",
    "mat1 and mat2 must have the same dtype",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 2))
    model = model.to(torch.bfloat16)

    batch = torch.randn(16, 256)
    with torch.no_grad():
        out = model(batch)
    print(out.argmax(-1))
""",
)

case(
    "dtype-mismatch",
    "conv-half-input",
    "Input type (c10::Half) and bias type (float) should be the same",
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 28 * 28, 10)

        def forward(self, x):
            x = torch.relu(self.conv(x))
            return self.fc(x.flatten(1))

    net = Net()
    images = torch.rand(4, 1, 28, 28).half()   # dataset cached in fp16 to save RAM
    print(net(images).shape)
""",
)

case(
    "dtype-mismatch",
    "scatter-add-long-counts",
    "scatter(): Expected self.dtype to be equal to src.dtype",
    """
    import torch

    labels = torch.randint(0, 10, (1000,))
    counts = torch.zeros(10)
    counts.scatter_add_(0, labels, torch.ones_like(labels))   # class histogram
    print(counts / counts.sum())
""",
)

case(
    "dtype-mismatch",
    "index-add-half-source",
    "must have the same scalar type",
    """
    import torch

    num_nodes, dim = 5, 4
    messages = torch.randn(7, dim).half()
    dst = torch.tensor([0, 1, 1, 2, 3, 4, 4])

    agg = torch.zeros(num_nodes, dim)
    agg.index_add_(0, dst, messages)
    print(agg)
""",
)

case(
    "dtype-mismatch",
    "lstm-half-input",
    "RNN input dtype (torch.float16) does not match weight dtype",
    """
    import torch
    import torch.nn as nn

    encoder = nn.LSTM(input_size=40, hidden_size=128, num_layers=2, batch_first=True)
    mel = torch.randn(4, 200, 40).to(torch.float16)   # features stored as fp16
    outputs, (h, c) = encoder(mel)
    print(h.shape)
""",
)

# ------------------------------------------------------------------- float64-numpy-tensor

case(
    "float64-numpy-tensor",
    "numpy-linear",
    "mat1 and mat2 must have the same dtype, but got Double and Float",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    X = np.random.rand(100, 8)   # features, float64
    y = np.random.rand(100, 1)

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(10):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(torch.from_numpy(X)), torch.from_numpy(y))
        loss.backward()
        opt.step()
""",
)

case(
    "float64-numpy-tensor",
    "numpy-conv2d",
    "Input type (double) and bias type (float) should be the same",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 2)
    )

    img = np.random.rand(64, 64, 3)        # image normalised to [0, 1]
    x = torch.from_numpy(img.transpose(2, 0, 1)).unsqueeze(0)
    print(model(x).softmax(-1))
""",
)

case(
    "float64-numpy-tensor",
    "numpy-target-bce-backward",
    "Found dtype Double but expected Float",
    """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import TensorDataset, DataLoader

    X = np.random.randn(256, 4).astype(np.float32)
    y = np.random.randint(0, 2, 256) * 1.0   # binary labels, float64

    ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(y))
    loader = DataLoader(ds, batch_size=32, shuffle=True)

    model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    criterion = nn.BCELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
    print("done")
""",
)

case(
    "float64-numpy-tensor",
    "numpy-class-weights",
    "expected scalar type Float but found Double",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    labels = np.random.choice(3, size=500, p=[0.8, 0.15, 0.05])
    # same as sklearn.utils.class_weight.compute_class_weight("balanced", ...)
    class_weights = len(labels) / (3 * np.bincount(labels, minlength=3))
    criterion = nn.CrossEntropyLoss(weight=torch.from_numpy(class_weights))

    model = nn.Linear(16, 3)
    x = torch.randn(500, 16)
    loss = criterion(model(x), torch.from_numpy(labels))
    loss.backward()
""",
)

case(
    "float64-numpy-tensor",
    "numpy-bmm-projection",
    "expected scalar type Double but found Float",
    """
    import numpy as np
    import torch

    proj = np.load("pca_projection.npy")            # saved by a numpy script
    feats = torch.randn(8, 10, 64)
    reduced = torch.bmm(feats, torch.from_numpy(proj))
    print(reduced.shape)
""",
    pre=[
        [
            "python",
            "-c",
            "import numpy as np; np.save('pca_projection.npy', np.random.randn(8, 64, 16))",
        ]
    ],
)

case(
    "float64-numpy-tensor",
    "numpy-lstm",
    "RNN input dtype (torch.float64) does not match weight dtype",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    series = np.sin(np.linspace(0, 20, 500))
    windows = np.stack([series[i:i + 30] for i in range(400)])[..., None]

    lstm = nn.LSTM(input_size=1, hidden_size=32, batch_first=True)
    head = nn.Linear(32, 1)

    x = torch.tensor(windows)
    out, _ = lstm(x)
    pred = head(out[:, -1])
    print(pred.shape)
""",
)

# -------------------------------------------------------------- cross-entropy-target-dtype

case(
    "cross-entropy-target-dtype",
    "ce-float-labels",
    "expected target dtype to be Long or Byte, but got Float",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(20, 5)
    criterion = nn.CrossEntropyLoss()

    x = torch.randn(8, 20)
    labels = torch.tensor([0, 3, 1, 4, 2, 2, 0, 1], dtype=torch.float32)
    loss = criterion(model(x), labels)
    loss.backward()
""",
)

case(
    "cross-entropy-target-dtype",
    "nll-int32-numpy-labels",
    "expected target dtype to be Long or Byte, but got Int",
    """
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    labels = np.random.randint(0, 10, size=64).astype(np.int32)
    feats = np.random.randn(64, 32).astype(np.float32)

    model = nn.Sequential(nn.Linear(32, 10), nn.LogSoftmax(dim=1))
    out = model(torch.from_numpy(feats))
    loss = F.nll_loss(out, torch.from_numpy(labels))
    print(loss.item())
""",
)

case(
    "cross-entropy-target-dtype",
    "segmentation-float-mask",
    "expected target dtype to be Long or Byte, but got Float",
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    net = nn.Conv2d(3, 4, kernel_size=1)   # 4-class segmentation head
    image = torch.rand(2, 3, 32, 32)
    mask = torch.randint(0, 4, (2, 32, 32)).float()  # loaded as float from a PNG

    logits = net(image)
    loss = F.cross_entropy(logits, mask)
    loss.backward()
""",
)

# -------------------------------------------------------------- cross-entropy-target-range

case(
    "cross-entropy-target-range",
    "ce-labels-1-based",
    "Target 10 is out of bounds",
    """
    import torch
    import torch.nn as nn

    NUM_CLASSES = 10
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, NUM_CLASSES))
    criterion = nn.CrossEntropyLoss()

    images = torch.rand(16, 1, 28, 28)
    labels = torch.randint(1, NUM_CLASSES + 1, (16,))  # labels read from a CSV: 1..10
    labels[0] = NUM_CLASSES
    loss = criterion(model(images), labels)
    print(loss.item())
""",
)

case(
    "cross-entropy-target-range",
    "nll-negative-label",
    "Target -1 is out of bounds",
    """
    import torch
    import torch.nn as nn

    classes = ["cat", "dog", "bird"]
    raw = ["cat", "dog", "unknown", "bird"]
    targets = torch.tensor([classes.index(c) if c in classes else -1 for c in raw])

    model = nn.Sequential(nn.Linear(12, 3), nn.LogSoftmax(dim=-1))
    loss_fn = nn.NLLLoss()
    loss = loss_fn(model(torch.randn(4, 12)), targets)
    print(loss)
""",
)

case(
    "cross-entropy-target-range",
    "segmentation-ignore-255",
    "Target 255 is out of bounds",
    """
    import torch
    import torch.nn.functional as F

    # VOC-style masks mark object borders with 255
    logits = torch.randn(2, 21, 64, 64, requires_grad=True)
    target = torch.randint(0, 21, (2, 64, 64))
    target[:, 30:34, :] = 255

    loss = F.cross_entropy(logits, target, ignore_index=-100)
    loss.backward()
""",
)

# ---------------------------------------------------------- embedding-index-out-of-range

case(
    "embedding-index-out-of-range",
    "vocab-too-small",
    "index out of range in self",
    """
    import torch
    import torch.nn as nn

    vocab = {"<pad>": 0, "the": 1, "cat": 2, "sat": 3}
    sentences = [["the", "cat", "sat"], ["the", "dog", "sat"]]
    ids = [[vocab.get(w, len(vocab)) for w in s] for s in sentences]  # OOV -> len(vocab)

    class Classifier(nn.Module):
        def __init__(self, vocab_size, dim=16):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, dim)
            self.out = nn.Linear(dim, 2)

        def forward(self, x):
            return self.out(self.emb(x).mean(1))

    model = Classifier(len(vocab))
    print(model(torch.tensor(ids)))
""",
)

case(
    "embedding-index-out-of-range",
    "tokenizer-vocab-mismatch",
    "index out of range in self",
    """
    import torch
    import torch.nn as nn

    VOCAB_SIZE = 30000          # model config
    token_ids = torch.randint(0, 30522, (4, 128))   # ids from a bert-base tokenizer
    token_ids[0, 5] = 30521

    encoder = nn.Sequential(nn.Embedding(VOCAB_SIZE, 64), nn.TransformerEncoderLayer(64, 4, batch_first=True))
    hidden = encoder(token_ids)
    print(hidden.shape)
""",
)

case(
    "embedding-index-out-of-range",
    "f-embedding-position-ids",
    "index out of range in self",
    """
    import torch
    import torch.nn.functional as F

    max_len = 512
    pos_table = torch.randn(max_len, 32)
    seq = torch.randn(2, 600, 32)  # longer than the model's max length

    positions = torch.arange(seq.size(1))
    x = seq + F.embedding(positions, pos_table)
    print(x.shape)
""",
)

# -------------------------------------------------------------------- index-out-of-range

case(
    "index-out-of-range",
    "tensor-index-out-of-bounds",
    "index 10 is out of bounds for dimension 0 with size 10",
    """
    import torch

    scores = torch.rand(10)
    topk = [3, 7, 10]  # 1-based ids from an annotation file
    for i in topk:
        print(i, scores[i].item())
""",
)

case(
    "index-out-of-range",
    "gather-out-of-bounds",
    "is out of bounds for dimension 1 with size 5",
    """
    import torch

    q_values = torch.randn(32, 5)          # 5 actions
    actions = torch.randint(0, 6, (32, 1))  # env has 6 actions
    actions[0] = 5
    chosen = q_values.gather(1, actions)
    print(chosen.mean())
""",
)

case(
    "index-out-of-range",
    "index-select-out-of-range",
    "index out of range in self",
    note="surface message is the embedding one; this is a plain index_select with a bad index",
    files="""
    import torch

    features = torch.randn(100, 16)       # 100 nodes
    edge_index = torch.randint(0, 101, (2, 400))
    edge_index[0, 0] = 100
    src = features.index_select(0, edge_index[0])
    print(src.shape)
""",
)

# ------------------------------------------------------------------- state-dict-prefix-mismatch

_MODEL = """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
            )
            self.fc = nn.Linear(16, num_classes)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))
"""

case(
    "state-dict-prefix-mismatch",
    "dataparallel-module-prefix",
    'Unexpected key(s) in state_dict: "module.',
    files={
        "model.py": _MODEL,
        # nn.DataParallel(model).state_dict() on a GPU box has the same `module.` keys
        "save.py": """
        import torch
        from model import Net

        model = Net()
        state = {"module." + k: v for k, v in model.state_dict().items()}
        torch.save(state, "checkpoint.pth")
    """,
        "eval.py": """
        import torch
        from model import Net

        model = Net()
        model.load_state_dict(torch.load("checkpoint.pth", map_location="cpu"))
        model.eval()
        print("loaded")
    """,
    },
    pre=[["python", "save.py"]],
    cmd=["python", "eval.py"],
)

case(
    "state-dict-prefix-mismatch",
    "compile-orig-mod-prefix",
    'Unexpected key(s) in state_dict: "_orig_mod.',
    files={
        "model.py": _MODEL,
        "train.py": """
        import torch
        from model import Net

        model = torch.compile(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.save(model.state_dict(), "best.pt")
    """,
        "predict.py": """
        import torch
        from model import Net

        net = Net()
        net.load_state_dict(torch.load("best.pt"))
        print(net(torch.rand(1, 3, 32, 32)).argmax())
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "predict.py"],
)

case(
    "state-dict-prefix-mismatch",
    "lightning-model-prefix",
    'Unexpected key(s) in state_dict: "model.',
    files={
        "model.py": _MODEL,
        # a Lightning checkpoint keeps the LightningModule's `self.model` under "model."
        "save.py": """
        import torch
        from model import Net

        net = Net()
        ckpt = {"epoch": 9, "global_step": 4690,
                "state_dict": {"model." + k: v for k, v in net.state_dict().items()}}
        torch.save(ckpt, "last.ckpt")
    """,
        "export.py": """
        import torch
        from model import Net

        ckpt = torch.load("last.ckpt", map_location="cpu")
        net = Net()
        net.load_state_dict(ckpt["state_dict"])
        torch.save(net.state_dict(), "net.pt")
    """,
    },
    pre=[["python", "save.py"]],
    cmd=["python", "export.py"],
)

# --------------------------------------------------------- state-dict-num-batches-tracked

case(
    "state-dict-num-batches-tracked",
    "frozen-bn-unexpected",
    'Unexpected key(s) in state_dict: "bn1.num_batches_tracked"',
    """
    import torch
    import torch.nn as nn

    class FrozenBatchNorm2d(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.register_buffer("weight", torch.ones(n))
            self.register_buffer("bias", torch.zeros(n))
            self.register_buffer("running_mean", torch.zeros(n))
            self.register_buffer("running_var", torch.ones(n))

        def forward(self, x):
            scale = self.weight * (self.running_var + 1e-5).rsqrt()
            shift = self.bias - self.running_mean * scale
            return x * scale[None, :, None, None] + shift[None, :, None, None]

    class Backbone(nn.Module):
        def __init__(self, norm=nn.BatchNorm2d):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = norm(64)

        def forward(self, x):
            return torch.relu(self.bn1(self.conv1(x)))

    pretrained = Backbone().state_dict()          # trained with regular BatchNorm
    detector_backbone = Backbone(norm=FrozenBatchNorm2d)
    detector_backbone.load_state_dict(pretrained)
""",
)

case(
    "state-dict-num-batches-tracked",
    "ema-dropped-counters",
    'Missing key(s) in state_dict: "1.num_batches_tracked"',
    """
    import torch
    import torch.nn as nn

    def make_model():
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8))

    model = make_model()
    ema_state = model.state_dict()
    # integer buffers can't be averaged: drop them from the EMA copy
    for k in list(ema_state):
        if k.endswith("num_batches_tracked"):
            del ema_state[k]
    torch.save(ema_state, "ema.pth")

    eval_model = make_model()
    eval_model.load_state_dict(torch.load("ema.pth"))
""",
)

# ------------------------------------------------------------- state-dict-shape-mismatch

case(
    "state-dict-shape-mismatch",
    "resized-classifier-head",
    "size mismatch for fc.weight: copying a param with shape",
    files={
        "model.py": _MODEL,
        "save.py": """
        import torch
        from model import Net
        torch.save(Net(num_classes=1000).state_dict(), "pretrained.pth")
    """,
        "finetune.py": """
        import torch
        from model import Net

        model = Net(num_classes=5)   # my dataset has 5 classes
        model.load_state_dict(torch.load("pretrained.pth"))
    """,
    },
    pre=[["python", "save.py"]],
    cmd=["python", "finetune.py"],
)

case(
    "state-dict-shape-mismatch",
    "vocab-size-changed",
    "size mismatch for embedding.weight",
    """
    import torch
    import torch.nn as nn

    class LM(nn.Module):
        def __init__(self, vocab_size, dim=32):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, dim)
            self.rnn = nn.GRU(dim, dim, batch_first=True)
            self.decoder = nn.Linear(dim, vocab_size)

    torch.save(LM(vocab_size=10000).state_dict(), "lm.pt")

    vocab = [f"tok{i}" for i in range(10004)]   # rebuilt vocab after adding special tokens
    model = LM(vocab_size=len(vocab))
    model.load_state_dict(torch.load("lm.pt"))
""",
)

case(
    "state-dict-shape-mismatch",
    "grayscale-first-conv",
    "size mismatch for features.0.weight",
    files={
        "model.py": _MODEL,
        "train.py": """
        import torch
        import torch.nn as nn
        from model import Net

        torch.save(Net().state_dict(), "rgb.pth")

        model = Net()
        model.features[0] = nn.Conv2d(1, 16, 3, padding=1)   # grayscale X-rays
        model.load_state_dict(torch.load("rgb.pth"), strict=False)
    """,
    },
)

# --------------------------------------------------------------- state-dict-key-mismatch

case(
    "state-dict-key-mismatch",
    "full-checkpoint-dict",
    'Unexpected key(s) in state_dict: "epoch"',
    files={
        "model.py": _MODEL,
        "train.py": """
        import torch
        from model import Net

        model = Net()
        optimizer = torch.optim.Adam(model.parameters())
        torch.save({"epoch": 20, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "loss": 0.31}, "ckpt.pth")
    """,
        "test.py": """
        import torch
        from model import Net

        model = Net()
        model.load_state_dict(torch.load("ckpt.pth"))
        model.eval()
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "test.py"],
)

case(
    "state-dict-key-mismatch",
    "renamed-layer",
    'Missing key(s) in state_dict: "classifier.weight"',
    """
    import torch
    import torch.nn as nn

    class Old(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(32, 32)
            self.fc = nn.Linear(32, 4)

    class New(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(32, 32)
            self.classifier = nn.Linear(32, 4)   # renamed in v2 of the code

    torch.save(Old().state_dict(), "v1.pt")
    New().load_state_dict(torch.load("v1.pt"))
""",
)

case(
    "state-dict-key-mismatch",
    "encoder-only-checkpoint",
    'Missing key(s) in state_dict: "decoder.',
    """
    import torch
    import torch.nn as nn

    class AutoEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 16))
            self.decoder = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 784))

    ae = AutoEncoder()
    torch.save({"encoder." + k: v for k, v in ae.encoder.state_dict().items()}, "encoder.pt")

    model = AutoEncoder()
    model.load_state_dict(torch.load("encoder.pt"))
""",
)

# -------------------------------------------------------------------- load-weights-only

case(
    "load-weights-only",
    "numpy-scalar-in-checkpoint",
    "Unsupported global: GLOBAL numpy",
    files={
        "train.py": """
        import numpy as np
        import torch
        import torch.nn as nn

        model = nn.Linear(10, 2)
        best_acc = np.float64(0.0)
        for epoch in range(3):
            acc = np.mean(np.random.rand(100) > 0.5)
            if acc > best_acc:
                best_acc = acc
                torch.save({"epoch": epoch, "best_acc": best_acc, "state_dict": model.state_dict()}, "best.pth")
    """,
        "resume.py": """
        import torch
        import torch.nn as nn

        model = nn.Linear(10, 2)
        ckpt = torch.load("best.pth")
        model.load_state_dict(ckpt["state_dict"])
        print("resuming from epoch", ckpt["epoch"])
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "resume.py"],
)

case(
    "load-weights-only",
    "argparse-namespace-in-checkpoint",
    "Unsupported global: GLOBAL argparse.Namespace",
    files={
        "train.py": """
        import argparse
        import torch
        import torch.nn as nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=3e-4)
        parser.add_argument("--hidden", type=int, default=64)
        args = parser.parse_args()

        model = nn.Linear(args.hidden, 1)
        torch.save({"args": args, "model": model.state_dict()}, "run.ckpt")
    """,
        "evaluate.py": """
        import torch

        ckpt = torch.load("run.ckpt", map_location="cpu")
        print(ckpt["args"])
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "evaluate.py"],
)

case(
    "load-weights-only",
    "pathlib-path-in-checkpoint",
    "Unsupported global: GLOBAL pathlib.PosixPath",
    files={
        "train.py": """
        from pathlib import Path
        import torch
        import torch.nn as nn

        out_dir = Path("runs") / "exp1"
        out_dir.mkdir(parents=True, exist_ok=True)
        model = nn.Linear(8, 2)
        torch.save({"model": model.state_dict(), "data_root": Path("data/train"), "out_dir": out_dir},
                   out_dir / "last.pt")
    """,
        "eval.py": """
        import torch

        ckpt = torch.load("runs/exp1/last.pt")
        print(ckpt["data_root"])
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "eval.py"],
)

case(
    "whole-module-saved",
    "whole-model-default-load",
    note="torch >= 2.6 refuses the pickled class with weights_only=True; the root cause is torch.save(model): save the state_dict",
    must="Unsupported global: GLOBAL torch.nn.modules.container.Sequential",
    files={
        "train.py": """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
        torch.save(model, "iris_model.pt")
    """,
        "serve.py": """
        import torch

        model = torch.load("iris_model.pt")
        model.eval()
        print(model(torch.tensor([[5.1, 3.5, 1.4, 0.2]])))
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "serve.py"],
)

case(
    "whole-module-saved",
    "custom-class-default-load",
    note="torch >= 2.6 refuses the pickled class with weights_only=True; the root cause is torch.save(model): save the state_dict",
    must="Unsupported global: GLOBAL model.Net",
    files={
        "model.py": _MODEL,
        "train.py": """
        import torch
        from model import Net
        torch.save(Net(), "net.pth")
    """,
        "infer.py": """
        import torch
        from model import Net

        net = torch.load("net.pth", map_location="cpu")
        print(net)
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "infer.py"],
)

# --------------------------------------------------------------------- whole-module-saved

case(
    "whole-module-saved",
    "cant-get-attribute-net",
    "Can't get attribute 'Net' on <module '__main__'",
    files={
        "train.py": """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x.flatten(1))))

        model = Net()
        torch.save(model, "mnist_net.pt")
    """,
        "predict.py": """
        import torch

        model = torch.load("mnist_net.pt", weights_only=False)
        model.eval()
        print(model(torch.rand(1, 1, 28, 28)).argmax())
    """,
    },
    pre=[["python", "train.py"]],
    cmd=["python", "predict.py"],
)

case(
    "whole-module-saved",
    "no-module-named-models",
    "No module named 'models'",
    files={
        "models/__init__.py": "",
        "models/resnet.py": _MODEL,
        "train.py": """
        import torch
        from models.resnet import Net

        torch.save(Net(), "deploy/model.pth")
    """,
        "deploy/app.py": """
        import torch

        model = torch.load("model.pth", map_location="cpu", weights_only=False)
        model.eval()
    """,
    },
    pre=[["mkdir", "-p", "deploy"], ["python", "train.py"]],
    cmd=["sh", "-c", "cd deploy && python app.py"],
)

case(
    "whole-module-saved",
    "class-renamed-since-save",
    "Can't get attribute 'Net' on <module 'model'",
    files={
        "model.py": _MODEL,
        "train.py": """
        import torch
        from model import Net
        torch.save(Net(), "model_full.pth")
    """,
        "rename.py": """
        import pathlib
        p = pathlib.Path("model.py")
        p.write_text(p.read_text().replace("class Net(", "class SmallNet("))
    """,
        "eval.py": """
        import torch
        import model  # now defines SmallNet

        net = torch.load("model_full.pth", weights_only=False)
    """,
    },
    pre=[["python", "train.py"], ["python", "rename.py"]],
    cmd=["python", "eval.py"],
)

# ------------------------------------------------------------------- corrupted-checkpoint

_SAVE_BIG = """
    import torch
    import torch.nn as nn
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    torch.save(model.state_dict(), "model.pth")
"""

_LOAD = """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    state = torch.load("model.pth", map_location="cpu"{extra})
    model.load_state_dict(state)
    print("ok")
"""

case(
    "corrupted-checkpoint",
    "truncated-download",
    "failed finding central directory",
    files={
        "save.py": _SAVE_BIG,
        # an interrupted copy / download: only the first part of the file arrived
        "cut.py": """
        import os
        os.truncate("model.pth", os.path.getsize("model.pth") // 3)
    """,
        "load.py": _LOAD.format(extra=""),
    },
    pre=[["python", "save.py"], ["python", "cut.py"]],
    cmd=["python", "load.py"],
)

_LFS = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:9c1a5c6f1e0d2b4d8b0c4b1f7a9b3f1d2e4c6a8b0d2f4e6a8c0e2a4c6e8a0c2e\nsize 1048576\n"
)
_HTML = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"/><title>Google Drive - Virus scan warning'
    "</title></head><body><p>Google Drive can't scan this file for viruses.</p></body></html>\n"
)

case(
    "corrupted-checkpoint",
    "git-lfs-pointer",
    "invalid load key, 'v'",
    files={"model.pth": _LFS, "load.py": _LOAD.format(extra=", weights_only=False")},
    cmd=["python", "load.py"],
    note="model.pth is the Git LFS pointer text (repository cloned without git lfs pull)",
)

case(
    "corrupted-checkpoint",
    "git-lfs-pointer-weights-only",
    "Unsupported operand 118",
    files={"model.pth": _LFS, "load.py": _LOAD.format(extra="")},
    cmd=["python", "load.py"],
    note="surface says weights-only load failed; model.pth is really a Git LFS pointer (operand 118 = 'v')",
)

case(
    "corrupted-checkpoint",
    "html-page",
    "invalid load key, '<'",
    files={"model.pth": _HTML, "load.py": _LOAD.format(extra=", weights_only=False")},
    cmd=["python", "load.py"],
    note="model.pth is an HTML page (download link returned a web page)",
)

case(
    "corrupted-checkpoint",
    "html-page-weights-only",
    "Unsupported operand 60",
    files={"model.pth": _HTML, "load.py": _LOAD.format(extra="")},
    cmd=["python", "load.py"],
    note="surface says weights-only load failed; model.pth is an HTML page (operand 60 = '<')",
)

case(
    "corrupted-checkpoint",
    "empty-file",
    "Ran out of input",
    files={"load.py": _LOAD.format(extra=", weights_only=False")},
    pre=[["touch", "model.pth"]],
    cmd=["python", "load.py"],
)

case(
    "corrupted-checkpoint",
    "empty-file-weights-only",
    "EOFError",
    files={"load.py": _LOAD.format(extra="")},
    pre=[["touch", "model.pth"]],
    cmd=["python", "load.py"],
    note="model.pth is an empty (0-byte) file",
)

case(
    "corrupted-checkpoint",
    "legacy-format-truncated",
    "unexpected EOF, expected",
    files={
        "save.py": _SAVE_BIG.replace(
            '"model.pth")', '"model.pth", _use_new_zipfile_serialization=False)'
        ),
        "cut.py": """
        import os
        os.truncate("model.pth", os.path.getsize("model.pth") // 2)
    """,
        "load.py": _LOAD.format(extra=", weights_only=False"),
    },
    pre=[["python", "save.py"], ["python", "cut.py"]],
    cmd=["python", "load.py"],
)

# ------------------------------------------------------------------------ loss-data-index

case(
    "loss-data-index",
    "loss-data-0",
    "invalid index of a 0-dim tensor",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(10, 1)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    running_loss = 0.0
    for i in range(100):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.data[0]
    print(running_loss / 100)
""",
)

case(
    "loss-data-index",
    "correct-count-index",
    "invalid index of a 0-dim tensor",
    """
    import torch

    outputs = torch.randn(64, 10)
    labels = torch.randint(0, 10, (64,))
    _, predicted = torch.max(outputs, 1)
    correct = (predicted == labels).sum()
    print("Accuracy: %.2f %%" % (100.0 * correct[0] / labels.size(0)))
""",
)

case(
    "loss-data-index",
    "loss-index-0-logging",
    "invalid index of a 0-dim tensor",
    """
    import torch
    import torch.nn.functional as F

    logits = torch.randn(8, 3, requires_grad=True)
    target = torch.randint(0, 3, (8,))
    loss = F.cross_entropy(logits, target)
    loss.backward()
    print("train loss: {:.4f}".format(loss[0]))
""",
)

# ----------------------------------------------------------- unregistered-tensor-attribute

case(
    "unregistered-tensor-attribute",
    "trace-grad-tensor-attribute",
    "Cannot insert a Tensor that requires grad as a constant",
    """
    import torch
    import torch.nn as nn


    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.scale = torch.ones(3, requires_grad=True)  # meant as a learnable parameter

        def forward(self, x):
            return self.fc(x) * self.scale


    traced = torch.jit.trace(Scaled(), torch.randn(2, 3))
""",
)

# ------------------------------------------------------------------ batch-sampler-conflict

case(
    "batch-sampler-conflict",
    "batch-sampler-with-batch-size",
    "batch_sampler option is mutually exclusive",
    """
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

    ds = TensorDataset(torch.randn(100, 8))
    batches = BatchSampler(RandomSampler(ds), batch_size=16, drop_last=False)
    loader = DataLoader(ds, batch_sampler=batches, batch_size=16, shuffle=True)
    for (x,) in loader:
        print(x.shape)
""",
)

# ---------------------------------------------------------- batchnorm-single-sample-batch

case(
    "batchnorm-single-sample-batch",
    "last-batch-of-one",
    "Expected more than 1 value per channel when training",
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import TensorDataset, DataLoader

    ds = TensorDataset(torch.randn(65, 20), torch.randint(0, 2, (65,)))
    loader = DataLoader(ds, batch_size=32, shuffle=True)   # 32 + 32 + 1

    model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
""",
)

case(
    "batchnorm-single-sample-batch",
    "pooled-features-batch-size-1",
    "got input size torch.Size([1, 32, 1, 1])",
    """
    import torch
    import torch.nn as nn

    net = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.BatchNorm2d(32),
        nn.Flatten(), nn.Linear(32, 10),
    )
    image = torch.rand(1, 3, 224, 224)   # predict one image, forgot net.eval()
    print(net(image).argmax(1))
""",
)

case(
    "batchnorm-single-sample-batch",
    "batch-size-1-mlp",
    "got input size torch.Size([1, 128])",
    """
    import torch
    import torch.nn as nn

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 4))

        def act(self, obs):
            logits = self.net(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
            return torch.distributions.Categorical(logits=logits).sample().item()

    policy = Policy()
    obs = [0.0] * 8
    print(policy.act(obs))
""",
)

# -------------------------------------------------------------- dataloader-worker-pickle

case(
    "dataloader-worker-pickle",
    "spawn-local-lambda",
    "Can't pickle local object",
    """
    import torch
    import torch.multiprocessing as mp
    from torch.utils.data import Dataset, DataLoader

    class ListDataset(Dataset):
        def __init__(self, items, transform):
            self.items, self.transform = items, transform
        def __len__(self):
            return len(self.items)
        def __getitem__(self, i):
            return self.transform(self.items[i])

    def build_loader():
        scale = 1 / 255
        ds = ListDataset([torch.full((3, 8, 8), 128.0)] * 64, transform=lambda x: x * scale)
        return DataLoader(ds, batch_size=8, num_workers=2)

    if __name__ == "__main__":
        mp.set_start_method("spawn")
        for batch in build_loader():
            print(batch.shape)
""",
)

case(
    "dataloader-worker-pickle",
    "spawn-module-lambda",
    "Can't pickle <function <lambda>",
    """
    import torch
    from torch.utils.data import Dataset, DataLoader

    normalize = lambda x: (x - 0.5) / 0.5

    class Noise(Dataset):
        def __init__(self, transform=None):
            self.transform = transform
        def __len__(self):
            return 100
        def __getitem__(self, i):
            return self.transform(torch.rand(3, 32, 32))

    if __name__ == "__main__":
        loader = DataLoader(Noise(normalize), batch_size=10, num_workers=2, multiprocessing_context="spawn")
        for x in loader:
            print(x.mean())
""",
)

case(
    "dataloader-worker-pickle",
    "spawn-sqlite-connection",
    "cannot pickle 'sqlite3.Connection' object",
    """
    import sqlite3
    import torch
    from torch.utils.data import Dataset, DataLoader

    class SQLDataset(Dataset):
        def __init__(self, path):
            self.conn = sqlite3.connect(path)
            self.conn.execute("CREATE TABLE IF NOT EXISTS samples (id INTEGER, value REAL)")
            self.conn.executemany("INSERT INTO samples VALUES (?, ?)", [(i, i * 0.5) for i in range(32)])
        def __len__(self):
            return 32
        def __getitem__(self, i):
            (v,) = self.conn.execute("SELECT value FROM samples WHERE id = ?", (i,)).fetchone()
            return torch.tensor(v)

    if __name__ == "__main__":
        torch.multiprocessing.set_start_method("spawn", force=True)
        loader = DataLoader(SQLDataset("data.db"), batch_size=4, num_workers=2)
        for batch in loader:
            print(batch)
""",
)

# ------------------------------------------------------------ shared-memory-open-failed

_PATCHES = """
    import torch
    from torch.utils.data import Dataset, DataLoader

    class PatchDataset(Dataset):
        \"\"\"Each sample is a bag of small image patches (multiple-instance learning).\"\"\"
        def __len__(self):
            return 2000
        def __getitem__(self, i):
            return [torch.randn(3, 16, 16) for _ in range(64)]

    loader = DataLoader(PatchDataset(), batch_size=1, num_workers=2, collate_fn=lambda b: b[0])
    bags = []
    for step, bag in enumerate(loader):
        bags.append(bag)   # keep every bag for clustering afterwards
        if step % 500 == 0:
            print(f"step {step}: {len(bag)} patches")
"""

case(
    "shared-memory-open-failed",
    "ancdata-low-ulimit",
    "received 0 items of ancdata",
    _PATCHES,
    nofile=256,
    timeout=120,
    note="run with `ulimit -n 256`; worker tensors are shared as file descriptors and the limit runs out",
)

# ---------------------------------------------------------------- collate-size-mismatch

_IMAGES = """
    import torch
    from torch.utils.data import Dataset, DataLoader

    class PhotoDataset(Dataset):
        \"\"\"Photos of different sizes, no resize in the transform.\"\"\"
        sizes = [(224, 224), (224, 224), (180, 240), (224, 224), (300, 200)] * 8
        def __len__(self):
            return len(self.sizes)
        def __getitem__(self, i):
            h, w = self.sizes[i]
            return torch.rand(3, h, w), i % 2

    if __name__ == "__main__":
        loader = DataLoader(PhotoDataset(), batch_size=4, shuffle=False, num_workers={workers})
        for images, labels in loader:
            print(images.shape)
"""

case(
    "collate-size-mismatch",
    "images-num-workers-0",
    "stack expects each tensor to be equal size",
    _IMAGES.format(workers=0),
)
case(
    "collate-size-mismatch",
    "images-num-workers-2",
    "Caught RuntimeError in DataLoader worker process 0",
    _IMAGES.format(workers=2),
)

case(
    "collate-size-mismatch",
    "token-sequences",
    "stack expects each tensor to be equal size",
    """
    import torch
    from torch.utils.data import Dataset, DataLoader

    texts = ["a short one", "this sentence is quite a bit longer than the first", "mid length text here"]

    class TextDataset(Dataset):
        def __len__(self):
            return len(texts)
        def __getitem__(self, i):
            ids = torch.tensor([hash(w) % 1000 for w in texts[i].split()])
            return {"input_ids": ids, "label": i % 2}

    loader = DataLoader(TextDataset(), batch_size=3)
    batch = next(iter(loader))
    print(batch["input_ids"].shape)
""",
)

# ---------------------------------------------------------------- matmul-shape-mismatch

case(
    "matmul-shape-mismatch",
    "cnn-flatten-wrong-in-features",
    "mat1 and mat2 shapes cannot be multiplied",
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):  # LeNet from the CIFAR-10 tutorial
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    net = Net()
    images = torch.rand(4, 3, 64, 64)   # my own dataset, 64x64 images
    print(net(images).shape)
""",
)

case(
    "matmul-shape-mismatch",
    "linear-3d-sequence",
    "mat1 and mat2 shapes cannot be multiplied",
    """
    import torch
    import torch.nn as nn

    embed = nn.Embedding(1000, 300)
    classifier = nn.Linear(300 * 50, 2)

    tokens = torch.randint(0, 1000, (8, 40))   # sequences padded to 40, not 50
    x = embed(tokens).view(8, -1)
    print(classifier(x).shape)
""",
)

case(
    "matmul-shape-mismatch",
    "torch-matmul-features",
    "shapes cannot be multiplied",
    """
    import torch

    X = torch.randn(100, 3)   # samples x features
    w = torch.randn(100, 1)
    y_hat = torch.mm(X, w)
    print(y_hat.shape)
""",
)

# pytest reports of two failures: a shape mismatch first, then a dtype mismatch.
# tests/test_explain_pytest.py checks each failure's own cause and user line.
_PYTEST_TWO_FAILURES = {
    "test_model.py": """
    import torch
    import torch.nn as nn


    def make_head(features):
        return nn.Sequential(nn.Flatten(), nn.Linear(features, 10))


    def test_head_accepts_feature_maps():
        head = make_head(256)
        out = head(torch.randn(4, 16, 5, 5))
        assert out.shape == (4, 10)


    def test_head_runs_in_double():
        head = make_head(8)
        out = head(torch.randn(2, 8, dtype=torch.float64))
        assert out.dtype == torch.float64
"""
}
for _what, _args in (
    ("pytest-two-failures", []),
    ("pytest-two-failures-short", ["-q", "--tb=short"]),
    ("pytest-two-failures-tb-no", ["--tb=no", "-vv"]),
):
    case(
        "matmul-shape-mismatch",
        _what,
        ["mat1 and mat2 shapes cannot be multiplied", "2 failed"],
        _PYTEST_TWO_FAILURES,
        note="two failures: a shape mismatch, then a dtype mismatch",
        cmd=["python", "-m", "pytest", "-p", "no:cacheprovider", *_args, "test_model.py"],
    )

# ----------------------------------------------------------------- conv-input-channels-last

case(
    "conv-input-channels-last",
    "hwc-image-batch",
    "to have 3 channels, but got 224 channels instead",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 2))

    img = (np.random.rand(224, 224, 3) * 255).astype(np.uint8)   # as returned by cv2.imread / PIL
    x = torch.from_numpy(img).float().div(255).unsqueeze(0)
    print(model(x))
""",
)

case(
    "conv-input-channels-last",
    "dataloader-nhwc",
    "to have 3 channels, but got 64 channels instead",
    """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import TensorDataset, DataLoader

    images = np.random.rand(40, 64, 64, 3).astype(np.float32)   # N, H, W, C from an .npy dump
    labels = np.random.randint(0, 5, 40)
    loader = DataLoader(TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)), batch_size=8)

    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.LazyLinear(5))
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
""",
)

case(
    "conv-input-channels-last",
    "grayscale-missing-channel-dim",
    "expected input[1, 28, 28, 1] to have 1 channels",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 26 * 26, 10))
    digit = np.random.rand(1, 28, 28, 1).astype(np.float32)   # keras-style NHWC
    print(model(torch.from_numpy(digit)).argmax())
""",
)

# ---------------------------------------------------------------- conv-input-shape-mismatch

case(
    "conv-input-shape-mismatch",
    "grayscale-into-rgb-model",
    "to have 3 channels, but got 1 channels instead",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    scans = torch.rand(8, 1, 64, 64)   # grayscale images, one channel
    print(model(scans).shape)
""",
)

case(
    "conv-input-shape-mismatch",
    "image-without-channel-dim",
    "Expected 3D (unbatched) or 4D (batched) input to conv2d",
    """
    import torch
    import torch.nn as nn

    conv = nn.Conv2d(1, 8, 3)
    digit = torch.rand(28, 28)   # one grayscale image, no channel and no batch dimension
    print(conv(digit).shape)
""",
)

# ----------------------------------------------------------------- loss-batch-size-mismatch

case(
    "loss-batch-size-mismatch",
    "flatten-with-wrong-view",
    "Expected input batch_size (8) to match target batch_size (32)",
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 16, 3, padding=1)
            self.fc = nn.Linear(16 * 28 * 28 * 4, 10)

        def forward(self, x):
            x = F.relu(self.conv(x))
            x = x.view(-1, 16 * 28 * 28 * 4)
            return self.fc(x)

    net = Net()
    images, labels = torch.rand(32, 1, 28, 28), torch.randint(0, 10, (32,))
    loss = nn.CrossEntropyLoss()(net(images), labels)
""",
)

case(
    "loss-batch-size-mismatch",
    "seq-logits-flattened-targets-not",
    "to match target batch_size",
    """
    import torch
    import torch.nn as nn

    vocab, B, T = 100, 4, 12
    model = nn.Sequential(nn.Embedding(vocab, 32), nn.Linear(32, vocab))
    tokens = torch.randint(0, vocab, (B, T + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    logits = model(inputs)                     # B, T, vocab
    loss = nn.functional.cross_entropy(logits.view(-1, vocab), targets[:, -1])
""",
)

case(
    "loss-batch-size-mismatch",
    "nll-targets-one-hot",
    "Expected input batch_size (16) to match target batch_size (48)",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(10, 3), nn.LogSoftmax(dim=1))
    x = torch.randn(16, 10)
    y = nn.functional.one_hot(torch.randint(0, 3, (16,)), 3)
    loss = nn.NLLLoss()(model(x), y.view(-1))
""",
)

# ------------------------------------------------------------- loss-target-shape-mismatch

case(
    "loss-target-shape-mismatch",
    "bce-logits-extra-dim",
    "Target size (torch.Size([32])) must be the same as input size (torch.Size([32, 1]))",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1))
    criterion = nn.BCEWithLogitsLoss()
    x = torch.randn(32, 20)
    y = torch.randint(0, 2, (32,)).float()
    loss = criterion(model(x), y)
""",
)

case(
    "loss-target-shape-mismatch",
    "bce-sigmoid-extra-dim",
    "Using a target size (torch.Size([32])) that is different to the input size",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(20, 1), nn.Sigmoid())
    criterion = nn.BCELoss()
    x, y = torch.randn(32, 20), torch.randint(0, 2, (32,)).float()
    loss = criterion(model(x), y)
""",
)

case(
    "loss-target-shape-mismatch",
    "mse-broadcast-warning",
    "This will likely lead to incorrect results due to broadcasting",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(13, 1)       # house prices
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    X, y = torch.randn(64, 13), torch.randn(64)
    for epoch in range(3):
        optimizer.zero_grad()
        loss = nn.MSELoss()(model(X), y)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
""",
)

case(
    "loss-target-shape-mismatch",
    "l1-broadcast-warning",
    "Using a target size",
    """
    import torch
    import torch.nn.functional as F

    pred = torch.randn(16, 1, requires_grad=True)
    target = torch.randn(16)
    loss = F.l1_loss(pred, target)
    loss.backward()
    print(loss.item())
""",
)

# ---------------------------------------------------------- numpy-on-grad-or-cuda-tensor

case(
    "numpy-on-grad-or-cuda-tensor",
    "plot-predictions",
    "Can't call numpy() on Tensor that requires grad",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    model = nn.Linear(1, 1)
    xs = torch.linspace(-1, 1, 50).unsqueeze(1)
    preds = model(xs)
    np.savetxt("preds.csv", preds.numpy())
""",
)

case(
    "numpy-on-grad-or-cuda-tensor",
    "np-array-of-output",
    "Can't call numpy() on Tensor that requires grad",
    """
    import numpy as np
    import torch
    import torch.nn as nn

    encoder = nn.Sequential(nn.Linear(64, 16), nn.Tanh())
    embeddings = encoder(torch.randn(10, 64))
    sims = np.array(embeddings) @ np.array(embeddings).T
    print(sims.shape)
""",
)

case(
    "numpy-on-grad-or-cuda-tensor",
    "loss-history-numpy",
    "Can't call numpy() on Tensor that requires grad",
    """
    import torch

    w = torch.zeros(3, requires_grad=True)
    history = []
    for step in range(5):
        loss = ((w - torch.tensor([1.0, 2.0, 3.0])) ** 2).sum()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
        history.append(w.numpy().copy())
    print(history[-1])
""",
)

# ----------------------------------------------------------------- dataparallel-attribute

case(
    "dataparallel-attribute",
    "dp-custom-method",
    "'DataParallel' object has no attribute 'predict'",
    """
    import torch
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 3)
        def forward(self, x):
            return self.fc(x)
        def predict(self, x):
            return self.forward(x).argmax(-1)

    model = nn.DataParallel(Classifier())
    print(model.predict(torch.randn(4, 10)))
""",
)

case(
    "dataparallel-attribute",
    "dp-replace-head",
    "'DataParallel' object has no attribute 'fc'",
    """
    import torch
    import torch.nn as nn

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(32, 32)
            self.fc = nn.Linear(32, 1000)

    model = nn.DataParallel(Backbone())
    model.fc = nn.Linear(model.fc.in_features, 5)
""",
)

case(
    "dataparallel-attribute",
    "dp-save-config",
    "'DataParallel' object has no attribute 'config'",
    """
    import torch
    import torch.nn as nn

    class Transformer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.layer = nn.Linear(config["hidden"], config["hidden"])

    model = Transformer({"hidden": 64, "layers": 2})
    model = torch.nn.DataParallel(model)
    torch.save({"config": model.config, "state_dict": model.state_dict()}, "out.bin")
""",
)

# ------------------------------------------------------------------------------- uint8-mask

case(
    "uint8-mask",
    "numpy-uint8-mask-index",
    "indexing with dtype torch.uint8 is now deprecated",
    """
    import numpy as np
    import torch

    depth = torch.rand(240, 320)
    valid = (np.random.rand(240, 320) > 0.1).astype(np.uint8)   # mask PNG, 0/1
    mean_depth = depth[torch.from_numpy(valid)].mean()
    print(f"mean depth {mean_depth:.3f}")
""",
)

case(
    "uint8-mask",
    "byte-mask-assign",
    "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char",
    """
    import torch

    scores = torch.randn(100)
    keep = (scores > 0).byte()
    scores[keep] = 0.0
    print(scores[:5])
""",
)

# ------------------------------------------------------------------------ bool-mask-arithmetic

case(
    "bool-mask-arithmetic",
    "one-minus-bool-mask",
    "Subtraction, the `-` operator, with a bool tensor is not supported",
    """
    import torch

    scores = torch.randn(4, 10)
    lengths = torch.tensor([10, 7, 5, 9])
    mask = torch.arange(10).repeat(4, 1).lt(lengths.unsqueeze(1))
    scores.masked_fill_(1 - mask, -float("inf"))
    print(scores.softmax(-1))
""",
)

# -------------------------------------------------------------------------------- syntax-error

case(
    "syntax-error",
    "zero-width-space-pasted",
    "invalid non-printable character U+200B",
    """
    import torch
    import torch.nn.functional as F


    def loss_function(recon_x, x):
        return F.binary_cross_entropy(recon_x, x, reduction="sum")\u200b


    print(loss_function(torch.rand(4), torch.rand(4)))
""",
)

# ------------------------------------------------------------- deprecated-loss-reduction-args

case(
    "deprecated-loss-reduction-args",
    "mse-size-average-false",
    "size_average and reduce args will be deprecated",
    """
    import torch
    import torch.nn as nn

    criterion = nn.MSELoss(size_average=False)
    pred, target = torch.randn(8, 2), torch.randn(8, 2)
    print(criterion(pred, target))
""",
)

case(
    "deprecated-loss-reduction-args",
    "mse-elementwise-mean",
    "reduction='elementwise_mean' is deprecated",
    """
    import torch
    import torch.nn as nn

    criterion = nn.MSELoss(reduction="elementwise_mean")  # a 0.4.0 tutorial
    print(criterion(torch.randn(8, 3), torch.randn(8, 3)))
""",
)

case(
    "deprecated-loss-reduction-args",
    "poisson-elementwise-mean",
    "elementwise_mean is not a valid value for reduction",
    """
    import torch
    import torch.nn as nn

    criterion = nn.PoissonNLLLoss(reduction="elementwise_mean")
    print(criterion(torch.randn(8), torch.rand(8) * 4))
""",
)

case(
    "deprecated-loss-reduction-args",
    "ce-reduce-false",
    "please use reduction='none' instead",
    """
    import torch
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss(reduce=False)   # per-sample losses for hard example mining
    losses = criterion(torch.randn(32, 10), torch.randint(0, 10, (32,)))
    hard = losses.topk(8).indices
    print(hard)
""",
)

case(
    "deprecated-loss-reduction-args",
    "functional-size-average",
    "size_average and reduce args will be deprecated",
    """
    import torch
    import torch.nn.functional as F

    recon, x = torch.rand(16, 784), torch.rand(16, 784)
    mu, logvar = torch.randn(16, 20), torch.randn(16, 20)
    bce = F.binary_cross_entropy(recon, x, size_average=False)
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    print((bce + kld).item())
""",
)

# ------------------------------------------------------------------- checkpoint-use-reentrant

case(
    "checkpoint-use-reentrant",
    "checkpoint-no-use-reentrant",
    "the use_reentrant parameter should be passed explicitly",
    """
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    block, head = nn.Linear(16, 16), nn.Linear(16, 1)
    x = torch.randn(4, 16)  # the batch: no input requires grad
    loss = head(checkpoint(block, x)).sum()
    loss.backward()
    print("block trained:", block.weight.grad is not None)
""",
)

case(
    "checkpoint-use-reentrant",
    "checkpoint-sequential-no-use-reentrant",
    "the use_reentrant parameter should be passed explicitly",
    """
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint_sequential

    model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(4)])
    x = torch.randn(4, 16, requires_grad=True)
    out = checkpoint_sequential(model, 2, x)
    out.sum().backward()
    print(out.shape)
""",
)

# -------------------------------------------------------------------- scheduler-step-order

case(
    "scheduler-step-order",
    "scheduler-at-epoch-start",
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    for epoch in range(3):
        scheduler.step()
        for _ in range(10):
            optimizer.zero_grad()
            loss = model(torch.randn(4, 10)).pow(2).mean()
            loss.backward()
            optimizer.step()
        print(epoch, scheduler.get_last_lr())
""",
)

case(
    "scheduler-step-order",
    "onecycle-before-optimizer",
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=100)

    for step in range(100):
        x, y = torch.randn(8, 10), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        scheduler.step()
        loss.backward()
        optimizer.step()
    print("final lr", scheduler.get_last_lr())
""",
)

# ----------------------------------------------------------------------------------- nan-loss

case(
    "nan-loss",
    "anomaly-manual-bce",
    "Function 'LogBackward0' returned nan values in its 0th output",
    """
    import torch
    import torch.nn as nn

    torch.autograd.set_detect_anomaly(True)

    model = nn.Linear(4, 1)
    x = torch.randn(64, 4) * 50          # unnormalised features
    y = torch.randint(0, 2, (64, 1)).float()

    p = torch.sigmoid(model(x))
    loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
    print("loss:", loss.item())
    loss.backward()
""",
)

case(
    "nan-loss",
    "anomaly-sqrt-negative",
    "returned nan values in its 0th output",
    """
    import torch

    torch.autograd.set_detect_anomaly(True)

    pred = torch.randn(32, 2, requires_grad=True)
    target = torch.randn(32, 2)
    var = pred[:, 1] - target[:, 1] ** 2        # predicted variance, can go negative
    loss = ((pred[:, 0] - target[:, 0]) ** 2 / var.sqrt()).mean()
    loss.backward()
""",
)

case(
    "nan-loss",
    "anomaly-div-zero-norm",
    "returned nan values in its",
    """
    import torch

    torch.autograd.set_detect_anomaly(True)

    emb = torch.zeros(4, 8, requires_grad=True)     # padding rows are all zero
    normed = emb / emb.norm(dim=1, keepdim=True)
    loss = (normed @ normed.T).sum()
    loss.backward()
""",
)

case(
    "nan-loss",
    "assert-loss-not-nan",
    "AssertionError: loss is nan",
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=10.0)   # far too high
    for step in range(200):
        x = torch.randn(32, 10) * 100
        y = x.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        print(f"step {step:3d} loss {loss.item():.4e}")
        assert not torch.isnan(loss), "loss is nan"
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
)

# ------------------------------------------------------------------ inplace-modified-for-grad

case(
    "inplace-modified-for-grad",
    "sigmoid-output-scaled-inplace",
    "modified by an inplace operation",
    """
    import torch
    import torch.nn as nn

    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            g = torch.sigmoid(self.fc(x))
            g *= 2      # rescale gate to [0, 2]
            return x * g

    m = Gate()
    m(torch.randn(4, 16)).sum().backward()
""",
)

case(
    "inplace-modified-for-grad",
    "gan-step-between-backwards",
    "which is output 0 of",
    """
    import torch
    import torch.nn as nn

    G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    D = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1))
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    bce = nn.BCEWithLogitsLoss()

    real = torch.randn(16, 2)
    fake = G(torch.randn(16, 8))
    d_fake = D(fake)

    loss_d = bce(D(real), torch.ones(16, 1)) + bce(d_fake, torch.zeros(16, 1))
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()

    loss_g = bce(d_fake, torch.ones(16, 1))
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
""",
)

case(
    "inplace-modified-for-grad",
    "relu-inplace-residual",
    "modified by an inplace operation",
    """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)
            self.act = nn.Sigmoid()

        def forward(self, x):
            out = self.act(self.conv(x))
            out += x          # residual, in place
            return out

    blk = Block(8)
    y = blk(torch.randn(2, 8, 16, 16))
    y.mean().backward()
""",
)

# --------------------------------------------------------------- backward-through-graph-twice

case(
    "backward-through-graph-twice",
    "rnn-hidden-not-detached",
    "Trying to backward through the graph a second time",
    """
    import torch
    import torch.nn as nn

    rnn = nn.GRU(10, 20, batch_first=True)
    head = nn.Linear(20, 10)
    opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()))
    hidden = torch.zeros(1, 4, 20)

    for chunk in range(5):   # truncated BPTT over a long sequence
        x = torch.randn(4, 35, 10)
        out, hidden = rnn(x, hidden)
        loss = head(out).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"chunk {chunk} loss {loss.item():.4f}")
""",
)

case(
    "backward-through-graph-twice",
    "two-losses-shared-graph",
    "Trying to backward through the graph a second time",
    """
    import torch
    import torch.nn as nn

    encoder = nn.Sequential(nn.Linear(32, 32), nn.Tanh())
    cls_head, reg_head = nn.Linear(32, 3), nn.Linear(32, 1)
    x = torch.randn(8, 32)

    feat = encoder(x)
    cls_loss = nn.functional.cross_entropy(cls_head(feat), torch.randint(0, 3, (8,)))
    reg_loss = reg_head(feat).pow(2).mean()
    cls_loss.backward()
    reg_loss.backward()
""",
)

case(
    "backward-through-graph-twice",
    "cached-features-reused",
    "Trying to backward through the graph a second time",
    """
    import torch
    import torch.nn as nn

    backbone = nn.Sequential(nn.Linear(100, 50), nn.ReLU())
    head = nn.Linear(50, 2)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)

    data = torch.randn(64, 100)
    features = backbone(data)          # computed once, "to save time"
    labels = torch.randint(0, 2, (64,))
    for epoch in range(3):
        loss = nn.functional.cross_entropy(head(features), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(epoch, loss.item())
""",
)

# ------------------------------------------------------------------------------- no-grad-fn

case(
    "no-grad-fn",
    "loss-under-no-grad",
    "element 0 of tensors does not require grad and does not have a grad_fn",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(10, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.no_grad():
        out = model(torch.randn(4, 10))
    loss = nn.functional.cross_entropy(out, torch.tensor([0, 1, 1, 0]))
    loss.backward()
""",
)

case(
    "no-grad-fn",
    "loss-rebuilt-from-item",
    "element 0 of tensors does not require grad",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(5, 1)
    preds = model(torch.randn(16, 5))
    targets = torch.randn(16, 1)
    mae = torch.tensor(sum(abs(p.item() - t.item()) for p, t in zip(preds, targets)) / 16)
    mae.backward()
""",
)

case(
    "no-grad-fn",
    "all-params-frozen",
    "element 0 of tensors does not require grad",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    for p in model.parameters():
        p.requires_grad = False        # freeze backbone ...
    head = model[2]                    # ... and "unfreeze" the head (forgot requires_grad=True)
    loss = model(torch.randn(8, 32)).logsumexp(1).mean()
    loss.backward()
""",
)

# ----------------------------------------------------------------------- non-scalar-backward

case(
    "non-scalar-backward",
    "reduction-none-backward",
    "grad can be implicitly created only for scalar outputs",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(10, 3)
    criterion = nn.CrossEntropyLoss(reduction="none")
    loss = criterion(model(torch.randn(8, 10)), torch.randint(0, 3, (8,)))
    loss.backward()
""",
)

case(
    "non-scalar-backward",
    "output-backward-for-saliency",
    "grad can be implicitly created only for scalar outputs",
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
    image = torch.rand(1, 3, 32, 32, requires_grad=True)
    scores = model(image)
    scores.backward()
    saliency = image.grad.abs().max(1).values
""",
)

# -------------------------------------------------------------------- non-leaf-grad-access

case(
    "non-leaf-grad-access",
    "scaled-weight-grad-none",
    "is not a leaf Tensor is being accessed",
    """
    import torch

    w = torch.randn(3, 1, requires_grad=True) * 0.01
    b = torch.zeros(1, requires_grad=True)
    x, y = torch.randn(20, 3), torch.randn(20, 1)
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    print("grad of w:", w.grad)
""",
)

case(
    "non-leaf-grad-access",
    "input-moved-to-device",
    "is not a leaf Tensor is being accessed",
    """
    import torch
    import torch.nn as nn

    device = torch.device("cpu")
    model = nn.Linear(8, 1).double()
    x = torch.randn(4, 8, requires_grad=True).to(device, torch.float64)
    model(x).sum().backward()
    print(x.grad)   # input gradient for attribution
""",
)

# ------------------------------------------------------------------ optimize-non-leaf-tensor

case(
    "optimize-non-leaf-tensor",
    "scaled-init-param",
    "can't optimize a non-leaf Tensor",
    """
    import torch

    W = torch.randn(784, 10, requires_grad=True) * 0.01
    b = torch.zeros(10, requires_grad=True)
    optimizer = torch.optim.SGD([W, b], lr=0.1)
""",
)

case(
    "optimize-non-leaf-tensor",
    "reshaped-param",
    "can't optimize a non-leaf Tensor",
    """
    import torch

    latent = torch.zeros(1, 512, requires_grad=True).view(1, 512, 1, 1)   # GAN inversion
    optimizer = torch.optim.Adam([latent], lr=0.01)
""",
)

case(
    "optimize-non-leaf-tensor",
    "double-cast-param",
    "can't optimize a non-leaf Tensor",
    """
    import torch
    import torch.nn as nn

    scale = torch.ones(1, requires_grad=True).double()
    model = nn.Linear(4, 4)
    optimizer = torch.optim.Adam([{"params": model.parameters()}, {"params": [scale], "lr": 1e-2}])
""",
)

# ------------------------------------------------------------ autograd-function-gradient-count

case(
    "autograd-function-gradient-count",
    "grad-reverse-alpha",
    "returned an incorrect number of gradients (expected 2, got 1)",
    """
    import torch
    import torch.nn as nn

    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.alpha

    feat = nn.Linear(16, 16)(torch.randn(4, 16))
    domain_logits = nn.Linear(16, 2)(GradReverse.apply(feat, 0.1))
    domain_logits.sum().backward()
""",
)

case(
    "autograd-function-gradient-count",
    "linear-function-no-bias-grad",
    "returned an incorrect number of gradients (expected 3, got 2)",
    """
    import torch

    class LinearFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias):
            ctx.save_for_backward(input, weight)
            return input @ weight.t() + bias

        @staticmethod
        def backward(ctx, grad_output):
            input, weight = ctx.saved_tensors
            return grad_output @ weight, grad_output.t() @ input

    x = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(3, 8, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    LinearFunction.apply(x, w, b).sum().backward()
""",
)

# ---------------------------------------------------------------- legacy-autograd-function

case(
    "legacy-autograd-function",
    "grad-reverse-init-arg",
    "Legacy autograd function with non-static forward method is deprecated",
    """
    import torch

    class GradReverse(torch.autograd.Function):
        def __init__(self, lambd):
            self.lambd = lambd

        def forward(self, x):
            return x.view_as(x)

        def backward(self, grad_output):
            return grad_output * -self.lambd

    def grad_reverse(x, lambd=1.0):
        return GradReverse(lambd)(x)

    features = torch.randn(4, 8, requires_grad=True)
    out = grad_reverse(features)
""",
)

case(
    "legacy-autograd-function",
    "binarize-legacy",
    "Legacy autograd function with non-static forward method is deprecated",
    """
    import torch
    import torch.nn as nn

    class Binarize(torch.autograd.Function):
        def forward(self, input):
            self.save_for_backward(input)
            return input.sign()

        def backward(self, grad_output):
            input, = self.saved_tensors
            return grad_output * (input.abs() <= 1).float()

    class BinaryLinear(nn.Linear):
        def forward(self, x):
            return nn.functional.linear(x, Binarize()(self.weight), self.bias)

    layer = BinaryLinear(16, 4)
    print(layer(torch.randn(2, 16)))
""",
)

# ------------------------------------------------------------------------ non-contiguous-view

case(
    "non-contiguous-view",
    "attention-merge-heads",
    "view size is not compatible with input tensor's size and stride",
    """
    import torch
    import torch.nn as nn

    class SelfAttention(nn.Module):
        def __init__(self, dim=64, heads=8):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, dim * 3)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)).softmax(-1)
            out = (att @ v).transpose(1, 2).view(B, T, C)
            return self.proj(out)

    print(SelfAttention()(torch.randn(2, 10, 64)).shape)
""",
)

case(
    "non-contiguous-view",
    "permute-then-view",
    "Use .reshape(...) instead",
    """
    import torch
    import torch.nn as nn

    conv = nn.Conv2d(3, 16, 3, padding=1)
    feat = conv(torch.randn(2, 3, 8, 8))          # B, C, H, W
    pixels = feat.permute(0, 2, 3, 1).view(-1, 16)   # one row per pixel for the classifier
    print(pixels.shape)
""",
)

case(
    "non-contiguous-view",
    "transposed-matrix-flatten",
    "view size is not compatible",
    """
    import torch

    similarity = torch.randn(32, 32)
    sym = (similarity + similarity.t()) / 2
    flat = similarity.t().view(-1)
    print(flat.shape)
""",
)

# ---------------------------------------------------------------------- numpy-negative-stride

case(
    "numpy-negative-stride",
    "bgr-to-rgb-slice",
    "At least one stride in the given numpy array is negative",
    """
    import numpy as np
    import torch

    bgr = (np.random.rand(120, 160, 3) * 255).astype(np.uint8)   # cv2.imread output
    rgb = bgr[:, :, ::-1]
    tensor = torch.from_numpy(rgb).permute(2, 0, 1).float() / 255
    print(tensor.shape)
""",
)

case(
    "numpy-negative-stride",
    "flip-augmentation-dataset",
    "At least one stride in the given numpy array is negative",
    """
    import random
    import numpy as np
    import torch
    from torch.utils.data import Dataset, DataLoader

    class Augmented(Dataset):
        def __init__(self):
            self.images = np.random.rand(16, 32, 32).astype(np.float32)
        def __len__(self):
            return len(self.images)
        def __getitem__(self, i):
            img = self.images[i]
            if random.random() < 2:      # always flip for the demo
                img = np.fliplr(img)
            return torch.from_numpy(img)

    for batch in DataLoader(Augmented(), batch_size=4):
        print(batch.shape)
""",
)

case(
    "numpy-negative-stride",
    "torch-tensor-reversed-audio",
    "At least one stride in the given numpy array is negative",
    """
    import numpy as np
    import torch

    wave = np.random.randn(16000).astype(np.float32)
    reversed_wave = torch.tensor(wave[::-1])
    print(reversed_wave.shape)
""",
)

# ----------------------------------------------------------------- deprecated-iterator-next

case(
    "deprecated-iterator-next",
    "dataiter-next-tutorial",
    "'_SingleProcessDataLoaderIter' object has no attribute 'next'",
    """
    import torch
    from torch.utils.data import TensorDataset, DataLoader

    trainset = TensorDataset(torch.rand(100, 3, 32, 32), torch.randint(0, 10, (100,)))
    trainloader = DataLoader(trainset, batch_size=4, shuffle=True)

    # get some random training images
    dataiter = iter(trainloader)
    images, labels = dataiter.next()
    print(images.shape)
""",
)

case(
    "deprecated-iterator-next",
    "dataiter-next-workers",
    "'_MultiProcessingDataLoaderIter' object has no attribute 'next'",
    """
    import torch
    from torch.utils.data import TensorDataset, DataLoader

    if __name__ == "__main__":
        ds = TensorDataset(torch.rand(100, 1, 28, 28), torch.randint(0, 10, (100,)))
        loader = DataLoader(ds, batch_size=16, num_workers=2)
        images, labels = iter(loader).next()
        print(images.shape, labels[:8])
""",
)

# ------------------------------------------------------------------------- removed-torch-api

case(
    "removed-torch-api",
    "torch-six-container-abcs",
    "No module named 'torch._six'",
    """
    import torch
    from torch._six import container_abcs

    def to_device(batch, device):
        if isinstance(batch, container_abcs.Mapping):
            return {k: to_device(v, device) for k, v in batch.items()}
        return batch.to(device)
""",
)

case(
    "removed-torch-api",
    "torch-six-string-classes",
    "module 'torch' has no attribute '_six'",
    """
    import torch

    def is_path(obj):
        return isinstance(obj, torch._six.string_classes)

    print(is_path("weights.pth"))
""",
)

case(
    "removed-torch-api",
    "torch-symeig",
    "This function was deprecated since version 1.9 and is now removed",
    """
    import torch

    X = torch.randn(100, 5)
    cov = X.T @ X / 99
    eigvals, eigvecs = torch.symeig(cov, eigenvectors=True)
    print(eigvals)
""",
)

case(
    "removed-torch-api",
    "torch-rfft",
    "module 'torch' has no attribute 'rfft'",
    """
    import torch

    signal = torch.randn(8, 1024)
    spectrum = torch.rfft(signal, 1, onesided=True)
    print(spectrum.shape)
""",
)

case(
    "removed-torch-api",
    "torch-solve",
    "`torch.solve` is deprecated in favor of `torch.linalg.solve`",
    """
    import torch

    A = torch.randn(3, 3) + 3 * torch.eye(3)
    B = torch.randn(3, 1)
    X, LU = torch.solve(B, A)
    print(X)
""",
)

# ------------------------------------------------------------------------ random-crop-too-large

case(
    "random-crop-too-large",
    "random-crop-helper",
    "empty range for randrange()",
    """
    import random
    import numpy as np
    import torch
    from torch.utils.data import Dataset, DataLoader

    def random_crop(img, size):
        h, w = img.shape[:2]
        top = random.randint(0, h - size)
        left = random.randint(0, w - size)
        return img[top:top + size, left:left + size]

    class Crops(Dataset):
        shapes = [(300, 400), (256, 256), (200, 180)]
        def __len__(self):
            return len(self.shapes)
        def __getitem__(self, i):
            img = np.zeros(self.shapes[i] + (3,), dtype=np.float32)
            return torch.from_numpy(random_crop(img, 224).copy()).permute(2, 0, 1)

    for batch in DataLoader(Crops(), batch_size=1):
        print(batch.shape)
""",
)

case(
    "random-crop-too-large",
    "audio-segment-too-short",
    "empty range for randrange()",
    """
    import random
    import torch

    SEGMENT = 16000 * 3   # 3 s at 16 kHz

    def sample_segment(wave):
        start = random.randrange(0, wave.shape[-1] - SEGMENT)
        return wave[..., start:start + SEGMENT]

    clips = [torch.randn(1, 16000 * 5), torch.randn(1, 16000 * 2)]
    for clip in clips:
        print(sample_segment(clip).shape)
""",
)

# ---------------------------------------------------------------------- local-rank-argument

case(
    "local-rank-argument",
    "launch-local-rank-dash",
    "unrecognized arguments: --local-rank=",
    """
    import argparse
    import torch.distributed as dist

    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    print(f"rank {dist.get_rank()} local_rank {args.local_rank}")
""",
    cmd=[
        "python",
        "-m",
        "torch.distributed.launch",
        "--nproc_per_node",
        "2",
        "train.py",
        "--epochs",
        "1",
    ],
)

case(
    "local-rank-argument",
    "local-rank-passed-by-launcher",
    "unrecognized arguments: --local-rank=0",
    """
    import argparse

    def parse():
        p = argparse.ArgumentParser(description="DDP training")
        p.add_argument("--local_rank", type=int, default=-1)
        p.add_argument("--batch-size", type=int, default=64)
        return p.parse_args()

    args = parse()
    print(args)
""",
    cmd=["python", "train.py", "--local-rank=0", "--batch-size", "32"],
    note="argv as torch.distributed.launch (torch>=2.0) passes it to each worker",
)

# ---------------------------------------------------------------------- argparse-in-notebook

_KERNEL = [
    "-f",
    "/root/.local/share/jupyter/runtime/kernel-3f2d1c9e-8b7a-4c21-9e0f-5a6b7c8d9e0f.json",
]

case(
    "argparse-in-notebook",
    "parse-args-kernel-argv",
    "unrecognized arguments: -f",
    """
    import argparse
    import torch

    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--lr", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(1)
    print(args)
""",
    cmd=["python", "train.py", *_KERNEL],
    note="argv simulated as in a Jupyter kernel (`-f <connection file>`)",
)

case(
    "argparse-in-notebook",
    "config-helper-kernel-argv",
    "unrecognized arguments: -f",
    files={
        "config.py": """
        import argparse

        def get_config():
            parser = argparse.ArgumentParser()
            parser.add_argument("--data", default="./data")
            parser.add_argument("--model", default="resnet18")
            return parser.parse_args()
    """,
        "train.py": """
        from config import get_config

        cfg = get_config()
        print(cfg.model)
    """,
    },
    cmd=["python", "train.py", *_KERNEL],
    note="argv simulated as in a Jupyter kernel (`-f <connection file>`)",
)

# -------------------------------------------------------------------- stdlib-shadowing-file

case(
    "stdlib-shadowing-file",
    "user-random-py",
    "cannot import name 'Random' from 'random'",
    files={
        "random.py": """
        # my helpers for random augmentations
        import numpy as np

        def random_flip(img):
            return img[:, ::-1] if np.random.rand() < 0.5 else img
    """,
        "train.py": """
        import random
        import torch

        random.seed(0)
        print(torch.rand(2))
    """,
    },
    note="random.py in the project shadows the stdlib module",
)

case(
    "stdlib-shadowing-file",
    "user-torch-py",
    "partially initialized module 'torch' has no attribute",
    files={
        "torch.py": """
        # quick test of my pytorch install
        import torch

        x = torch.rand(5, 3)
        print(x)
    """
    },
    cmd=["python", "torch.py"],
)

case(
    "stdlib-shadowing-file",
    "user-copy-py",
    "cannot import name 'deepcopy' from 'copy'",
    files={
        "copy.py": """
        # helpers to copy checkpoints around
        import shutil

        def copy_checkpoint(src, dst):
            shutil.copy2(src, dst)
    """,
        "train.py": """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 2)
        print(model)
    """,
    },
    note="copy.py in the project shadows the stdlib module",
)

# ---------------------------------------------------------------------- noisy outputs

case(
    "collate-size-mismatch",
    "progress-bar-then-crash",
    "stack expects each tensor to be equal size",
    """
    import sys
    import time
    import torch
    from torch.utils.data import Dataset, DataLoader

    class Bar:
        \"\"\"Minimal tqdm-style progress bar on stderr.\"\"\"
        def __init__(self, it, desc):
            self.it, self.desc, self.n, self.total, self.t0 = it, desc, 0, len(it), time.time()
        def __iter__(self):
            for x in self.it:
                yield x
                self.n += 1
                frac = self.n / self.total
                el = time.time() - self.t0
                bar = "\u2588" * int(frac * 10) + " " * (10 - int(frac * 10))
                sys.stderr.write(f"\\r{self.desc}: {int(frac * 100):3d}%|{bar}| {self.n}/{self.total} "
                                 f"[00:{int(el):02d}<00:00, {self.n / max(el, 1e-6):.2f}it/s]")
                sys.stderr.flush()

    class Frames(Dataset):
        def __len__(self):
            return 40
        def __getitem__(self, i):
            n = 16 if i < 30 else 12     # the last video has fewer frames
            return torch.rand(n, 3, 8, 8)

    loader = DataLoader(Frames(), batch_size=4)
    for epoch in range(1):
        for clip in Bar(loader, f"Epoch {epoch}"):
            time.sleep(0.02)
""",
)

case(
    "state-dict-shape-mismatch",
    "logging-then-crash",
    "size mismatch for head.weight",
    """
    import logging
    import torch
    import torch.nn as nn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    logger = logging.getLogger("finetune")

    class Model(nn.Module):
        def __init__(self, num_labels):
            super().__init__()
            self.encoder = nn.Linear(64, 64)
            self.head = nn.Linear(64, num_labels)

    torch.save(Model(num_labels=2).state_dict(), "sst2.bin")
    logger.info("Loading config: num_labels=3, hidden=64")
    model = Model(num_labels=3)
    logger.info("Loading weights from sst2.bin")
    model.load_state_dict(torch.load("sst2.bin"))
    logger.info("Weights loaded")
""",
)

case(
    "matmul-shape-mismatch",
    "torchrun-ddp-two-ranks",
    "[rank0]:",
    """
    import os
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 10)))
        images = torch.rand(32, 3, 28, 28)   # dataset is RGB, model expects grayscale
        print(f"[rank {rank}] starting, batch {tuple(images.shape)}")
        loss = model(images).sum()
        loss.backward()
        dist.destroy_process_group()

    if __name__ == "__main__":
        main()
""",
    cmd=["torchrun", "--nproc_per_node", "2", "train.py"],
    timeout=600,
)


# ------------------------------------------------------------------ more variants

case(
    "uint8-mask",
    "masked-select-uint8",
    "masked_select: expected BoolTensor for mask",
    """
    import numpy as np
    import torch
    import torch.nn.functional as F

    pred = torch.rand(2, 1, 64, 64, requires_grad=True)
    gt = torch.rand(2, 1, 64, 64)
    valid = torch.from_numpy((np.random.rand(2, 1, 64, 64) > 0.2).astype(np.uint8))
    loss = F.l1_loss(torch.masked_select(pred, valid), torch.masked_select(gt, valid))
    loss.backward()
""",
)

case(
    "uint8-mask",
    "where-uint8-condition",
    "where received a uint8 condition tensor",
    """
    import torch

    logits = torch.randn(4, 10)
    padding = torch.tensor([[1] * 7 + [0] * 3] * 4, dtype=torch.uint8)
    masked = torch.where(padding, logits, torch.tensor(float("-inf")))
    print(masked.softmax(-1)[0])
""",
)

case(
    "non-scalar-backward",
    "gradient-penalty-autograd-grad",
    "grad can be implicitly created only for scalar outputs",
    """
    import torch
    import torch.nn as nn

    D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    real, fake = torch.randn(16, 2), torch.randn(16, 2)
    alpha = torch.rand(16, 1)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_out = D(interp)
    grads = torch.autograd.grad(outputs=d_out, inputs=interp, create_graph=True)[0]
    gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
""",
)

case(
    "non-leaf-grad-access",
    "activation-grad-inspection",
    "is not a leaf Tensor is being accessed",
    """
    import torch
    import torch.nn as nn

    conv = nn.Conv2d(3, 8, 3)
    head = nn.Linear(8, 2)
    x = torch.rand(1, 3, 16, 16)
    fmap = torch.relu(conv(x))
    score = head(fmap.mean((2, 3)))[0, 1]
    score.backward()
    cam = (fmap.grad.mean((2, 3), keepdim=True) * fmap).sum(1)   # Grad-CAM
""",
)

case(
    "autograd-function-gradient-count",
    "loss-function-no-target-grad",
    "returned an incorrect number of gradients (expected 2, got 1)",
    """
    import torch

    class SoftmaxCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target):
            probs = logits.softmax(-1)
            ctx.save_for_backward(probs, target)
            return -probs.gather(1, target[:, None]).log().mean()

        @staticmethod
        def backward(ctx, grad_output):
            probs, target = ctx.saved_tensors
            grad = probs.clone()
            grad[torch.arange(len(target)), target] -= 1
            return grad_output * grad / len(target)

    logits = torch.randn(8, 5, requires_grad=True)
    loss = SoftmaxCrossEntropy.apply(logits, torch.randint(0, 5, (8,)))
    loss.backward()
""",
)

case(
    "random-crop-too-large",
    "volume-patch-sampler",
    "empty range for randrange()",
    """
    import random
    import numpy as np

    PATCH = 96

    def sample_patch(volume):
        d, h, w = volume.shape
        z = random.randint(0, d - PATCH)
        y = random.randint(0, h - PATCH)
        x = random.randint(0, w - PATCH)
        return volume[z:z + PATCH, y:y + PATCH, x:x + PATCH]

    ct_scans = [np.zeros((128, 160, 160), np.float32), np.zeros((64, 160, 160), np.float32)]
    for scan in ct_scans:
        print(sample_patch(scan).shape)
""",
)

# A checkpoint written by torch.save on a GPU machine records its storages as "cuda:0". This
# machine has no GPU, so save_gpu.py tags the storages the same way through torch's public
# register_package hook; the loading scripts are what a user runs on a CPU-only machine.
_SAVE_GPU = """
    import torch
    import torch.nn as nn
    import torch.serialization as ser

    ser.register_package(0, lambda storage: "cuda:0", lambda storage, location: None)  # as on a GPU box

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    torch.save({STATE}, "gpu_model.pth")
"""
_GPU_NOTE = "checkpoint storages tagged cuda:0 as torch.save on a GPU machine writes them"

case(
    "load-without-map-location",
    "state-dict-default-load",
    "Attempting to deserialize object on a CUDA device",
    files={
        "save_gpu.py": _SAVE_GPU.replace("{STATE}", "model.state_dict()"),
        "predict.py": """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        model.load_state_dict(torch.load("gpu_model.pth"))
        print(model(torch.randn(1, 16)))
    """,
    },
    pre=[["python", "save_gpu.py"]],
    cmd=["python", "predict.py"],
    note=_GPU_NOTE,
)

case(
    "load-without-map-location",
    "full-checkpoint-weights-only-false",
    "Attempting to deserialize object on a CUDA device",
    files={
        "save_gpu.py": _SAVE_GPU.replace("{STATE}", '{"epoch": 30, "model": model.state_dict()}'),
        "resume.py": """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        checkpoint = torch.load("gpu_model.pth", weights_only=False)
        model.load_state_dict(checkpoint["model"])
        start_epoch = checkpoint["epoch"] + 1
    """,
    },
    pre=[["python", "save_gpu.py"]],
    cmd=["python", "resume.py"],
    note=_GPU_NOTE,
)

# ------------------------------------------------------------- cpp-extension-removed-api

_EXT_LOAD = """
    from torch.utils.cpp_extension import load

    roi_ext = load(name="roi_pool_ext", sources=["roi_pool.cpp"], verbose=False)
    print(roi_ext)
"""

case(
    "cpp-extension-removed-api",
    "at-check-jit-load",
    ["AT_CHECK", "was not declared in this scope"],
    files={
        "roi_pool.cpp": """
        #include <torch/extension.h>

        at::Tensor roi_pool_forward(const at::Tensor& input, const at::Tensor& rois, int pooled) {
          AT_CHECK(input.dim() == 4, "input must be NCHW");
          AT_CHECK(rois.size(1) == 5, "rois must be (K, 5)");
          return at::zeros({rois.size(0), input.size(1), pooled, pooled}, input.options());
        }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("forward", &roi_pool_forward, "RoI pooling forward");
        }
    """,
        "train.py": _EXT_LOAD,
    },
    timeout=600,
)

case(
    "cpp-extension-removed-api",
    "th-header-jit-load",
    "TH/TH.h: No such file or directory",
    files={
        "roi_pool.cpp": """
        #include <torch/extension.h>
        #include <TH/TH.h>

        at::Tensor roi_pool_forward(const at::Tensor& input, const at::Tensor& rois, int pooled) {
          THArgCheck(input.dim() == 4, 1, "input must be NCHW");
          return at::zeros({rois.size(0), input.size(1), pooled, pooled}, input.options());
        }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("forward", &roi_pool_forward, "RoI pooling forward");
        }
    """,
        "train.py": _EXT_LOAD,
    },
    timeout=600,
)

case(
    "cpp-extension-removed-api",
    "thc-header-setup-py",
    "THC/THC.h: No such file or directory",
    files={
        "src/nms.cpp": """
        #include <torch/extension.h>
        #include <THC/THC.h>

        extern THCState *state;

        at::Tensor nms(const at::Tensor& boxes, float threshold) {
          return boxes;
        }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("nms", &nms, "non-maximum suppression");
        }
    """,
        "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CppExtension

        setup(
            name="nms_ext",
            ext_modules=[CppExtension("nms_ext", ["src/nms.cpp"])],
            cmdclass={"build_ext": BuildExtension},
        )
    """,
    },
    cmd=["python", "setup.py", "build_ext", "--inplace"],
    timeout=600,
)

# ---------------------------------------------------------------- dataloader-shm-exhausted

case(
    "dataloader-shm-exhausted",
    "small-dev-shm-worker-batch",
    "unable to allocate shared memory(shm)",
    """
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Frames(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, index):
            return torch.zeros(3, 224, 224)

    loader = DataLoader(Frames(), batch_size=16, num_workers=2)
    for frames in loader:
        print(frames.shape)
""",
    shm_size="1m",
)

# ------------------------------------------------------------------- cpu-only-torch-build

case(
    "cpu-only-torch-build",
    "cuda-on-cpu-build",
    "Torch not compiled with CUDA enabled",
    """
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 2).cuda()
    print(model(torch.randn(3, 4).cuda()))
""",
)

# ------------------------------------------------------------ boolean-operator-on-tensors

case(
    "boolean-operator-on-tensors",
    "and-on-masks",
    "Boolean value of Tensor with more than one value is ambiguous",
    """
    import torch

    scores = torch.rand(8)
    labels = torch.randint(0, 2, (8,))
    keep = (scores > 0.5) and (labels == 1)
    print(scores[keep])
""",
)

# ----------------------------------------------------------- chained-comparison-on-tensor

case(
    "chained-comparison-on-tensor",
    "range-check-on-probabilities",
    "Boolean value of Tensor with more than one value is ambiguous",
    """
    import torch

    probs = torch.softmax(torch.randn(4, 3), dim=1)
    if 0 <= probs <= 1:
        print("valid probabilities")
""",
)

# -------------------------------------------------------------------- view-shape-mismatch

case(
    "hard-coded-batch-size",
    "hard-coded-batch-size-last-batch",
    "is invalid for input of size",
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    BATCH_SIZE = 16
    data = TensorDataset(torch.randn(100, 3, 8, 8), torch.randint(0, 10, (100,)))
    loader = DataLoader(data, batch_size=BATCH_SIZE)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    fc = nn.Linear(4 * 8 * 8, 10)
    for images, labels in loader:
        features = conv(images).view(BATCH_SIZE, 4 * 8 * 8)
        loss = nn.functional.cross_entropy(fc(features), labels)
""",
)

# ------------------------------------------------------------------- conv-groups-mismatch

case(
    "conv-groups-mismatch",
    "depthwise-out-channels",
    "out_channels must be divisible by groups",
    """
    import torch
    import torch.nn as nn

    block = nn.Sequential(
        nn.Conv2d(32, 48, kernel_size=3, padding=1, groups=32),
        nn.BatchNorm2d(48),
        nn.ReLU(),
    )
    print(block(torch.randn(1, 32, 8, 8)).shape)
""",
)

# --------------------------------------------------------------------------------- runner


def _replacements(project: Path, home: Path) -> list[tuple[str, str]]:
    paths = sysconfig.get_paths()
    pairs = [
        (str(project), PROJECT),
        (str(home), USER_HOME),
        (paths["purelib"], SITE),
        (paths["platlib"], SITE),
        (paths["stdlib"], STDLIB),
        (paths["scripts"], BIN),
        (paths["include"], "/usr/include/python3.11"),
        (paths["data"], "/usr"),
    ]
    return sorted(set(pairs), key=lambda p: -len(p[0]))


def _run(c: Case) -> str:
    with tempfile.TemporaryDirectory(prefix="explain-") as tmp:
        tmp = Path(tmp).resolve()
        project, home = tmp / "project", tmp / "home"
        project.mkdir()
        home.mkdir()
        for rel, text in c.files.items():
            p = project / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        bindir = Path(sysconfig.get_paths()["scripts"])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TORCH", "OMP_"))}
        site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
        env.update(
            PYTHONUNBUFFERED="1",
            HOME=str(home),
            PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONPATH=os.pathsep.join(site),
        )

        def limit():
            if c.nofile:
                resource.setrlimit(
                    resource.RLIMIT_NOFILE,
                    (c.nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]),
                )

        def run(cmd, check):
            # -S + PYTHONPATH: this machine's .pth files (which pre-import e.g. `random`) stay out
            cmd = [sys.executable, "-S", *cmd[1:]] if cmd[0] == "python" else list(cmd)
            if cmd[0] == "torchrun":
                cmd[0] = str(bindir / "torchrun")
            if c.shm_size:
                mount = f'mount -t tmpfs -o size={c.shm_size} tmpfs /dev/shm && exec "$@"'
                cmd = ["unshare", "-m", "sh", "-c", mount, "sh", *cmd]
            r = subprocess.run(
                cmd,
                cwd=project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=c.timeout,
                preexec_fn=limit,
            )
            if check and r.returncode:
                raise CaseFailed(
                    f"case {c.what}: setup {cmd} failed:\n{r.stdout.decode(errors='replace')}"
                )
            return r.stdout.decode("utf-8", errors="replace")

        for cmd in c.pre:
            run(cmd, check=True)
        out = run(c.cmd, check=False)
    for old, new in _replacements(project, home):
        out = out.replace(old, new)
    out = out.replace(str(tmp), "/tmp")
    return out


# --------------------------------------------------------------------------- missing-super-init

case(
    "missing-super-init",
    "layer-before-super-init",
    "cannot assign module before Module.__init__() call",
    """
    import torch
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self, dim, classes):
            self.head = nn.Linear(dim, classes)
            super().__init__()

        def forward(self, x):
            return self.head(x)

    model = Classifier(16, 3)
    print(model(torch.randn(2, 16)).shape)
""",
)

case(
    "missing-super-init",
    "parameter-without-super-init",
    "cannot assign parameters before Module.__init__() call",
    """
    import torch
    import torch.nn as nn

    class Scale(nn.Module):
        def __init__(self, n):
            self.gain = nn.Parameter(torch.ones(n))

        def forward(self, x):
            return x * self.gain

    print(Scale(4)(torch.randn(2, 4)))
""",
)

case(
    "missing-super-init",
    "forward-without-super-init",
    "object has no attribute '_",
    """
    import torch
    import torch.nn as nn

    class Standardize(nn.Module):
        def __init__(self, mean, std):
            self.mean = mean
            self.std = std

        def forward(self, x):
            return (x - self.mean) / self.std

    norm = Standardize(0.5, 0.25)
    print(norm(torch.rand(3)))
""",
)


# --------------------------------------------------------------------------- hard-coded-batch-size

case(
    "hard-coded-batch-size",
    "cls-token-expand-batch-size",
    "Sizes of tensors must match except in dimension 1",
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    BATCH_SIZE = 32

    class PatchEncoder(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))

        def forward(self, x):
            cls = self.cls_token.expand(BATCH_SIZE, -1, -1)
            return torch.cat((cls, x), dim=1)

    data = TensorDataset(torch.randn(200, 16, 64))
    encoder = PatchEncoder(64)
    for (patches,) in DataLoader(data, batch_size=BATCH_SIZE):
        tokens = encoder(patches)
    print(tokens.shape)
""",
)

case(
    "hard-coded-batch-size",
    "stack-eval-outputs",
    "stack expects each tensor to be equal size",
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    model = nn.Linear(20, 10)
    loader = DataLoader(TensorDataset(torch.randn(1000, 20)), batch_size=32)
    outputs = []
    with torch.no_grad():
        for (x,) in loader:
            outputs.append(model(x))
    logits = torch.stack(outputs)
    print(logits.shape)
""",
)

case(
    "hard-coded-batch-size",
    "cls-token-expand-message-only",
    "Sizes of tensors must match except in dimension 1",
    """
    import torch

    cls = torch.zeros(1, 1, 64).expand(32, -1, -1)
    try:
        torch.cat((cls, torch.randn(8, 16, 64)), dim=1)
    except RuntimeError as e:
        print(f"RuntimeError: {e}")
""",
    note="the message alone, as pasted without its traceback",
)

# --------------------------------------------------------------------------- stale-object-after-reload

_RELOADED_MODEL = """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.fc = nn.Linear(4, 2)

        def reset_parameters(self):
            super(Net, self).zero_grad()
            self.fc.reset_parameters()
"""

case(
    "stale-object-after-reload",
    "super-after-importlib-reload",
    "super(type, obj): obj must be an instance or subtype of type",
    files={
        "model.py": _RELOADED_MODEL,
        "train.py": """
        import importlib

        import model

        net = model.Net()
        importlib.reload(model)  # as a notebook does after model.py was edited
        net.reset_parameters()
    """,
    },
)

case(
    "stale-object-after-reload",
    "torch-save-after-importlib-reload",
    "it's not the same object as",
    files={
        "model.py": _RELOADED_MODEL,
        "train.py": """
        import importlib

        import torch

        import model

        net = model.Net()
        importlib.reload(model)  # as a notebook does after model.py was edited
        torch.save(net, "net.pt")
    """,
    },
)

case(
    "stale-object-after-reload",
    "super-after-reload-message-only",
    "super(type, obj): obj must be an instance or subtype of type",
    files={
        "model.py": _RELOADED_MODEL,
        "train.py": """
        import importlib

        import model

        net = model.Net()
        importlib.reload(model)
        try:
            net.reset_parameters()
        except TypeError as e:
            print(f"TypeError: {e}")
    """,
    },
    note="the message alone, as pasted without its traceback",
)


class CaseFailed(Exception):
    pass


def _fixture_path(c: Case) -> Path:
    return OUT / c.expect / f"torch213-{c.what}.txt"


def generate(c: Case) -> Path:
    out = _run(c)
    missing = [m for m in c.must if m not in out]
    if missing:
        raise CaseFailed(
            f"case {c.what}: output lacks {missing!r}; not written. Output was:\n{out}"
        )
    header = [
        f"#| source: reproduced with torch 2.13.0 CPU by tests/make_explain_fixtures.py (case {c.what})",
        f"#| expect: {c.expect}",
    ]
    if c.note:
        header.append(f"#| note: {c.note}")
    path = _fixture_path(c)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(header) + "\n" + out)
    return path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for c in CASES.values():
            print(f"{c.what:40s} {_fixture_path(c).relative_to(HERE.parent)}")
        return 0
    import torch  # only to check the version the fixtures claim

    if not torch.__version__.startswith("2.13."):
        raise SystemExit(
            f"fixtures are named torch213-*: run with torch 2.13, not {torch.__version__}"
        )
    selected = [c for c in CASES.values() if not argv or c.what in argv or c.expect in argv]
    unknown = set(argv) - {c.what for c in CASES.values()} - {c.expect for c in CASES.values()}
    if unknown:
        raise SystemExit(f"unknown case(s): {', '.join(sorted(unknown))} (see --list)")
    failed = []
    for c in selected:
        t0 = time.time()
        try:
            path = generate(c)
        except (CaseFailed, subprocess.TimeoutExpired) as e:
            print(e, file=sys.stderr)
            failed.append(c.what)
            continue
        print(f"{c.what:40s} -> {path.relative_to(HERE.parent)} ({time.time() - t0:.1f}s)")
    if failed:
        print(f"FAILED ({len(failed)}): {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
