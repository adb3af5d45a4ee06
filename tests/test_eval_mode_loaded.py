"""eval-mode-missing on inference scripts: a model loaded from a checkpoint and run in a file
that never switches any model to eval mode (InfoGAN's generator script, Complex-YOLO's eval.py,
SC-SfMLearner's test_pose.py), and the look-alikes it must leave alone."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint.api import check

NET = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.{layer}


"""

SCRIPT = """\
net = Net().to("cpu")
net.load_state_dict(torch.load("net.pth"))
print(net)
with torch.no_grad():
    out = net(torch.randn(2, 8)){after}
"""


def found(source: str) -> list[tuple[int, str]]:
    return [
        (f.line, f.message) for f in check(source=source, filename="generate.py", select="TD205")
    ]


def found_in(path: Path) -> list[int]:
    return [f.line for f in check(path, select="TD205")]


def test_a_loaded_model_with_batchnorm_run_without_eval_is_reported():
    result = found(NET.format(layer="bn = nn.BatchNorm1d(8)") + SCRIPT.format(after=""))
    assert [line for line, _ in result] == [16]  # the call, below the load on line 13
    assert "`net` is loaded on line 13" in result[0][1]
    assert "`net.eval()`" in result[0][1]


def test_a_model_moved_after_it_is_built_is_the_same_model():
    script = SCRIPT.replace('net = Net().to("cpu")', "net = Net()\nnet = net.cuda()")
    assert [line for line, _ in found(NET.format(layer="bn = nn.BatchNorm1d(8)") + script)] == [17]


def test_a_model_without_mode_dependent_layers_is_left_alone():
    assert found(NET.format(layer="act = nn.ReLU()") + SCRIPT.format(after="")) == []


def test_eval_anywhere_in_the_file_or_training_leaves_it_alone():
    net = NET.format(layer="drop = nn.Dropout(0.5)")
    assert found(net + SCRIPT.format(after="\nnet.eval()")) == []
    assert found(net + SCRIPT.format(after="\nout.sum().backward()")) == []


def test_a_model_handed_to_a_helper_is_left_alone():
    # The helper, in another module, may switch it to eval mode.
    source = NET.format(layer="bn = nn.BatchNorm1d(8)") + SCRIPT.format(after="\nscore(net)")
    assert found(source) == []


def test_a_model_of_another_module_in_a_project_with_mode_dependent_layers(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(NET.format(layer="bn = nn.BatchNorm1d(8)"))
    script = (
        "import torch\nfrom model import Net\n\n"
        "checkpoint = torch.load('net.pth')\n"
        "net = Net().cuda()\n"
        "net.load_state_dict(checkpoint['state_dict'], strict=False)\n"
        "output = net(torch.randn(1, 8).cuda())\n"
    )
    path = tmp_path / "test_pose.py"
    path.write_text(script)
    assert found_in(path) == [7]
    (tmp_path / "model.py").write_text(NET.format(layer="act = nn.ReLU()"))
    assert found_in(path) == []  # no layer of the project depends on the mode


def test_a_class_named_transformer_is_read_from_its_definition(tmp_path: Path):
    # A practice repository's `llm/`: its own `Transformer` has no dropout, and says so in its
    # definition, not by its name.
    (tmp_path / "pyproject.toml").write_text("")
    # Another of its projects has dropout (its `gpt2/`): the project has mode-dependent layers.
    gpt2 = NET.format(layer="drop = nn.Dropout(0.1)").replace("class Net", "class GPT2")
    (tmp_path / "gpt2.py").write_text(gpt2)
    transformer = (
        "class Transformer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n"
    )
    (tmp_path / "model.py").write_text(NET.format(layer="body = Transformer()") + transformer)
    script = (  # its infer.py: the model loaded at the top, run by a function of the file
        "import torch\nfrom model import Net\n\n"
        "net = Net()\nnet.load_state_dict(torch.load('net.pth'))\n\n\n"
        "def generate(x):\n    with torch.no_grad():\n        return net(x)\n"
    )
    path = tmp_path / "infer.py"
    path.write_text(script)
    assert found_in(path) == []
    with_dropout = transformer + "        self.drop = nn.Dropout(0.1)\n"
    (tmp_path / "model.py").write_text(NET.format(layer="body = Transformer()") + with_dropout)
    assert found_in(path) == [10]


def test_weights_copied_from_another_model_and_whole_pickled_models_are_left_alone():
    # apex's SyncBatchNorm test compares two layers in training mode on purpose.
    copied = (
        "import torch\n\nmodel = torch.nn.BatchNorm1d(4)\nref = torch.nn.BatchNorm1d(4)\n"
        "ref.load_state_dict(model.state_dict())\nout = ref(torch.rand(8, 4))\n"
    )
    assert found(copied) == []
    pickled = "import torch\n\nmodel = torch.load('net.pt')\noutput = model(torch.randn(1, 8))\n"
    assert found(pickled) == []


UTILS = """\
import torch


def evaluate_model(model, iterator):
    preds = []
    for batch in iterator:
        preds.append(model(batch).argmax(1))
    return preds
"""

MODEL = """\
import torch
import torch.nn as nn
from utils import *


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.{layer}

    def run_epoch(self, train_iterator, val_iterator):
        for i, (x, y) in enumerate(train_iterator):
            self.optimizer.zero_grad()
            self.loss_op(self(x), y).backward()
            self.optimizer.step()
            if i % 100 == 0:
                accuracy = evaluate_model(self, val_iterator)
                self.train()
"""


def test_an_evaluation_helper_of_another_module_given_a_model_in_training_mode(tmp_path: Path):
    # Text-Classification-Models-Pytorch: utils.evaluate_model never switches the model's mode,
    # and each model's run_epoch calls it mid-training.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "utils.py").write_text(UTILS)
    model = tmp_path / "model.py"
    model.write_text(MODEL.format(layer="dropout = nn.Dropout(0.5)"))
    assert found_in(model) == [18]
    messages = [f.message for f in check(model, select="TD205")]
    assert "`evaluate_model`" in messages[0] and "`self.eval()`" in messages[0]
    model.write_text(MODEL.format(layer="act = nn.ReLU()"))
    assert found_in(model) == []  # no layer depends on the mode


def test_a_helper_that_sets_the_mode_or_a_caller_that_does_is_left_alone(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    model = tmp_path / "model.py"
    model.write_text(MODEL.format(layer="dropout = nn.Dropout(0.5)"))
    (tmp_path / "utils.py").write_text(
        UTILS.replace("    preds = []", "    model.eval()\n    preds = []")
    )
    assert found_in(model) == []
    (tmp_path / "utils.py").write_text(UTILS)
    caller = MODEL.format(layer="dropout = nn.Dropout(0.5)")
    model.write_text(
        caller.replace(
            "                accuracy =", "                self.eval()\n                accuracy ="
        )
    )
    assert found_in(model) == []


def test_a_torch_nn_model_is_read_for_its_layers():
    script = (
        "import torch\nimport torch.nn as nn\n\n"
        "net = nn.Sequential(nn.Linear(8, 8), nn.{layer})\n"
        "net.load_state_dict(torch.load('net.pth'))\n"
        "out = net(torch.randn(2, 8))\n"
        "# BatchNorm elsewhere in the project does not make this one depend on the mode\n"
    )
    assert [line for line, _ in found(script.format(layer="BatchNorm1d(8)"))] == [6]
    assert found(script.format(layer="ReLU()")) == []


TRAIN_NET = """\
import torch
import torch.nn.functional as F
from model import Net
from utils import evaluate_model

model = Net()
model = torch.nn.DataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for points, target in train_loader:
        optimizer.zero_grad()
        model = model.train()
        F.nll_loss(model(points), target).backward()
        optimizer.step()
    accuracy = evaluate_model(model, test_loader)
"""


def test_a_model_of_another_modules_class_given_to_an_evaluation_helper(tmp_path: Path):
    # GACNet: `test_seg(model, ...)` of utils.py gets the GACNet of model.py mid-training.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "model.py").write_text(NET.format(layer="bn = nn.BatchNorm1d(8)"))
    train = tmp_path / "train.py"
    train.write_text(TRAIN_NET)
    assert found_in(train) == [15]
    # No module of the project has a layer that depends on the mode.
    (tmp_path / "model.py").write_text(NET.format(layer="act = nn.ReLU()"))
    assert found_in(train) == []


EVALUATE = """\
import torch
from modules import {cls}


def train(loader, model, optimizer):
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def test(loader, model):
    with torch.no_grad():
        total = 0.0
        for x in loader:
            total += model(x).sum().item()
    return total


def main(train_loader, valid_loader):
    model = {cls}().to("cpu")
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(10):
        train(train_loader, model, optimizer)
        test(valid_loader, model)
"""

MODULES = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))


class Encoder(nn.Module):  # its BatchNorm is Block's
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)  # no dropout, no batch norm
"""


def test_a_new_model_of_another_modules_class_with_batchnorm_evaluated_in_training_mode(
    tmp_path: Path,
):
    # vqvae: `VectorQuantizedVAE` of modules.py (BatchNorm in its ResBlocks), built in the
    # script whose `test` runs it and which never calls `.train()` nor `.eval()`.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "modules.py").write_text(MODULES)
    script = tmp_path / "vqvae.py"
    script.write_text(EVALUATE.format(cls="Encoder"))
    assert found_in(script) == [16]
    # A class of the project without such layers, or one whose layers are not known.
    script.write_text(EVALUATE.format(cls="Plain"))
    assert found_in(script) == []
    script.write_text(EVALUATE.format(cls="Missing"))
    assert found_in(script) == []
    # `.eval()` before the evaluation: fine.
    script.write_text(
        EVALUATE.format(cls="Encoder").replace(
            "        test(", "        model.eval()\n        test("
        )
    )
    assert found_in(script) == []


def test_a_function_of_an_imported_module_named_like_a_model_is_no_model_run():
    # contriever's train.py, which never switches a mode itself: `beir_utils.evaluate_model`
    # sets the encoders' modes and gradients on its own; it is called, not run as a model.
    script = (
        "import torch\nimport beir_utils\nfrom src import inbatch\n\n\n"
        "def eval_model(opt, query_encoder, doc_encoder, tokenizer):\n"
        "    for datasetname in opt.eval_datasets:\n"
        "        metrics = beir_utils.evaluate_model(query_encoder, doc_encoder, tokenizer)\n"
        "        print(metrics)\n\n\n"
        "def eval_encoder(opt, model):\n"
        "    for batch in opt.eval_batches:\n"
        "        print(model(batch))\n\n\n"
        "def train(opt, model, query_encoder, doc_encoder, tokenizer, optimizer, loader):\n"
        "    model.train()\n"
        "    for batch in loader:\n"
        "        model(batch).backward()\n"
        "        optimizer.step()\n"
        "        eval_model(opt, query_encoder, doc_encoder, tokenizer)\n"
        "        eval_encoder(opt, model)\n"
    )
    assert [line for line, _ in found(script)] == [14]  # the model run, in training mode


def test_a_volatile_input_turns_nothing_off_and_the_message_says_so():
    # torchfcn's trainer: `Variable(data, volatile=True)` was PyTorch 0.3's no-grad; since 0.4
    # the loop records a graph per batch like any other.
    source = (
        "import torch\nfrom torch.autograd import Variable\n\n\n"
        "def validate(model, val_loader):\n    model.eval()\n    for data, target in val_loader:\n"
        "        data = Variable(data, volatile=True)\n        score = model(data)\n\n\n"
        "validate(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout()), [])\n"
    )
    ((line, message),) = found(source)
    assert line == 9 and "`volatile=True` has turned nothing off since PyTorch 0.4" in message
    plain = source.replace(", volatile=True", "")
    ((line, message),) = found(plain)
    assert line == 9 and "volatile" not in message


def test_a_loaded_model_run_by_a_function_of_the_script_that_reads_the_global():
    # Pytorch-NMT's eval.py: the encoder built and loaded at the top of the script, run by
    # `def evaluate(sentence)`; a function with a model of its own name is another model.
    script = (
        'net = Net()\nnet.load_state_dict(torch.load("net.pth"))\n\n\n'
        "def evaluate(sentence):\n    return net(sentence)\n\n\n"
        "def other(net, sentence):\n    return net(sentence)\n"
    )
    result = found(NET.format(layer="drop = nn.Dropout(0.5)") + script)
    assert [line for line, _ in result] == [17]
    assert "`net` is loaded on line 13" in result[0][1]


def test_a_global_model_of_a_class_without_such_layers_is_left_alone(tmp_path: Path):
    # wavenet-speech's notebook: WaveNet has no Dropout nor BatchNorm, though another module of
    # the project has; run by a function of the file, it is not reported.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "nets.py").write_text(
        NET.format(layer="act = nn.ReLU()").replace("class Net", "class WaveNet")
        + "\n\nclass Other(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.drop = nn.Dropout(0.1)\n"
    )
    script = (
        "import torch\nfrom nets import WaveNet\n\nwavenet = WaveNet()\n"
        'wavenet.load_state_dict(torch.load("w.pth"))\n\n\n'
        "def run_model(signal):\n    return wavenet(signal)\n"
    )
    (tmp_path / "check.py").write_text(script)
    assert found_in(tmp_path / "check.py") == []
    # The same with the dropout in WaveNet itself: reported where the function runs it.
    (tmp_path / "nets.py").write_text(
        NET.format(layer="drop = nn.Dropout(0.5)").replace("class Net", "class WaveNet")
    )
    assert found_in(tmp_path / "check.py") == [9]


def test_a_pytest_test_of_the_save_and_load_round_trip_is_left_alone():
    # e3nn's `test_save_load`: a module saved, loaded into a twin and both run in the same mode.
    round_trip = (
        NET.format(layer="drop = nn.Dropout(0.1)")
        + "def test_save_load(tmp_path):\n"
        + "    net = Net()\n"
        + "    torch.save(net.state_dict(), tmp_path / 'net.pth')\n"
        + "    twin = Net()\n"
        + "    twin.load_state_dict(torch.load(tmp_path / 'net.pth'))\n"
        + "    x = torch.randn(2, 8)\n"
        + "    assert torch.allclose(net(x), twin(x))\n"
    )

    def lines(filename: str) -> list[int]:
        return [f.line for f in check(source=round_trip, filename=filename, select="TD205")]

    assert lines("tests/test_io.py") == []
    # The same function in a script is an inference run that forgot eval(): reported.
    assert lines("generate.py") == [18]
