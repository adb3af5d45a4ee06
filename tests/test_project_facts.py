"""The project facts: which class names are nn.Modules across files, which environment
variables the project reads, where a project starts, and that reading them stays linear."""

from __future__ import annotations

import subprocess
import sys
import time

from torchdoctor.lint.api import check
from torchdoctor.lint.project import facts_for, project_root, python_files, read_facts


def test_module_classes_follow_bases_across_files():
    facts = read_facts(
        [
            b"import torch.nn as nn\nclass Backbone(nn.Module):\n    pass\n",
            b"from models import Backbone\nclass Net(Backbone, Mixin):\n    pass\n",
            b"class Head(torch.nn.Sequential):\n    pass\nclass Config(object):\n    pass\n",
            b"from torch.nn import Module\nclass Tiny(Module, metaclass=Meta):\n    pass\n",
            b"class Weight(nn.Parameter):\n    pass\nclass Generic(Backbone[int]):\n    pass\n",
        ]
    )
    assert facts.module_classes == {"Backbone", "Net", "Head", "Tiny", "Generic"}


def test_a_name_two_files_define_differently_is_not_a_module():
    facts = read_facts([b"class Model(nn.Module): pass\n", b"class Model(object): pass\n"])
    assert not facts.is_module_class("Model")


def test_a_project_module_named_module_is_not_torch_nn_module():
    facts = read_facts([b"class Module:\n    pass\nclass Thing(Module):\n    pass\n"])
    assert not facts.is_module_class("Thing")


def test_environment_variables_read_anywhere():
    facts = read_facts(
        [
            b'rank = int(os.environ["LOCAL_RANK"])\n',
            b'world = os.environ.get("WORLD_SIZE", 1)\nseed = os.getenv( "SEED")\n',
            b'if "MASTER_ADDR" in os.environ:\n    pass\n',
            'x = "\u4e2d"  # non-ASCII text\nos.environ.setdefault("OMP_NUM_THREADS", "1")\n'.encode(),
        ]
    )
    assert facts.env_reads == {"LOCAL_RANK", "WORLD_SIZE", "SEED", "MASTER_ADDR", "OMP_NUM_THREADS"}
    assert facts.reads_env("LOCAL_RANK") and not facts.reads_env("RANK")


def test_an_environment_variable_only_set_is_not_read():
    # NAFNet's slurm launcher sets LOCAL_RANK for its processes; nothing reads it.
    facts = read_facts(
        [b"os.environ['LOCAL_RANK'] = str(proc_id)\nok = os.environ['RANK'] == '0'\n"]
    )
    assert facts.env_reads == {"RANK"}


def test_the_digest_changes_with_the_facts_only():
    one = read_facts([b"class A(nn.Module): pass\n"])
    same = read_facts([b"x = 1\nclass A(nn.Module):\n    y = 2\n"])
    other = read_facts([b"class B(nn.Module): pass\n"])
    assert one.digest == same.digest != other.digest


def test_project_root_is_the_nearest_marker(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "train.py").write_text("")
    assert project_root(package / "train.py") == tmp_path.resolve()
    lone = tmp_path / "elsewhere"
    lone.mkdir()
    (lone / "pyproject.toml").write_text("")
    assert project_root(lone) == lone.resolve()


def test_files_skip_virtualenvs_and_hidden_directories(tmp_path):
    for name in ("models.py", "pkg/net.py", ".venv/lib/x.py", "venv/y.py", ".hidden/z.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("class Net(nn.Module): pass\n")
    found = {p.relative_to(tmp_path).as_posix() for p in python_files(tmp_path)}
    assert found == {"models.py", "pkg/net.py"}
    assert facts_for(tmp_path).is_module_class("Net")


def test_an_unclosed_class_statement_and_a_long_chain_stay_linear():
    # 20,000 classes each built on the previous one, listed last first (the worst order for a
    # fixed point recomputed in passes), and a file of unclosed `class X(` lines.
    chain = b"".join(b"class C%d(C%d):\n    pass\n" % (i + 1, i) for i in reversed(range(20_000)))
    chain = b"class C0(nn.Module):\n    pass\n" + chain
    unclosed = b"class X(\n" * 50_000
    start = time.process_time()
    facts = read_facts([chain, unclosed])
    assert "C20000" in facts.module_classes
    assert time.process_time() - start < 20  # quadratic would take minutes; linear, well under 1 s


MODELS = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n"
TRAIN = (
    "import torch\n"
    "from models import Net\n"
    "from .nets import Other\n"
    "\n"
    "model = Net()\n"
    "torch.save(model, 'model.pt')\n"
    "other = Other()\n"
    "torch.save(other, 'other.pt')\n"
)


def _project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "nets.py").write_text("from models import Net\n\n\nclass Other(Net):\n    pass\n")
    (tmp_path / "train.py").write_text(TRAIN)


def _write_project(root, files):
    """A project under `root` (a pyproject.toml marks it) holding `files`: relative path -> text."""
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _check(tmp_path, *args, stdin=None, rule="TD503"):
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "--select", rule, *args],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_model_class_from_a_sibling_module_is_a_model(tmp_path):
    _project(tmp_path)
    run = _check(tmp_path, ".")
    assert run.returncode == 1, run.stderr
    assert "train.py:6:1: TD503" in run.stdout  # from models import Net
    assert "train.py:8:1: TD503" in run.stdout  # from .nets import Other, a subclass of Net


def test_one_file_checked_alone_still_sees_its_project(tmp_path):
    _project(tmp_path)
    assert "train.py:6:1: TD503" in _check(tmp_path, "train.py").stdout
    # An editor's unsaved buffer, named by --stdin-filename, too.
    run = _check(tmp_path, "--stdin-filename", "train.py", "-", stdin=TRAIN)
    assert "train.py:6:1: TD503" in run.stdout


def test_a_class_of_another_library_with_the_same_name_is_not_the_project_s(tmp_path):
    _project(tmp_path)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom keras.models import Net\n\nmodel = Net()\ntorch.save(model, 'm.pt')\n"
    )
    run = _check(tmp_path, ".")
    assert run.returncode == 0 and "TD503" not in run.stdout


# awd-lstm-lm's `main.py`: the project module `model` is imported, then the name is rebound at the
# top level to the model it makes; the save function, run later, pickles that model.
AWD_MAIN = (
    "import torch\nimport model\n\n\n"
    "def model_save(fn):\n"
    "    with open(fn, 'wb') as f:\n"
    "        torch.save([model, optimizer], f)\n\n\n"
    "def model_load(fn):\n"
    "    global model, optimizer\n"
    "    with open(fn, 'rb') as f:\n"
    "        model, optimizer = torch.load(f)\n\n\n"
    "model = model.{made}\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=1.0)\n"
    "model_save('m.pt')\n"
)


def test_an_imported_module_rebound_to_a_model_it_makes_is_that_model(tmp_path):
    _write_project(
        tmp_path,
        {
            "model.py": MODELS.replace("Net", "RNNModel"),
            "main.py": AWD_MAIN.format(made="RNNModel()"),
        },
    )
    run = _check(tmp_path, ".")
    assert "main.py:7:9: TD503 `torch.save` pickles the whole module `model`" in run.stdout, (
        run.stdout
    )
    # Rebound to what the module's function returns, which the project does not tell: silent.
    (tmp_path / "model.py").write_text(MODELS + "\n\ndef vocabulary():\n    return {}\n")
    (tmp_path / "main.py").write_text(AWD_MAIN.format(made="vocabulary()"))
    run = _check(tmp_path, ".")
    assert run.returncode == 0 and "TD503" not in run.stdout, run.stdout


# RE-Net's baselines: `import model as model`, then at the top level, in a branch, the name is
# rebound to the model the module makes (the other branch loads a pickled one); the saves of
# the training loop below read that model.
RENET_MAIN = (
    "import torch\nimport model as model\n\n"
    "if __name__ == '__main__':\n"
    "    if RESUME:\n        model = torch.load('m.ckpt')\n"
    "    else:\n        model = model.{made}\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)\n"
    "    for epoch in range(10):\n"
    "        torch.save(model, 'm.ckpt')\n"
)


def test_an_imported_module_rebound_at_the_top_level_is_that_model_below(tmp_path):
    _write_project(
        tmp_path,
        {
            "model.py": MODELS.replace("Net", "TATransEModel"),
            "main.py": RENET_MAIN.format(made="TATransEModel(3)"),
        },
    )
    run = _check(tmp_path, ".")
    assert "main.py:11:9: TD503 `torch.save(model, ...)` pickles" in run.stdout, run.stdout
    # Rebound to what the module's function returns, which the project does not tell: silent.
    (tmp_path / "main.py").write_text(RENET_MAIN.format(made="vocabulary()"))
    run = _check(tmp_path, ".")
    assert run.returncode == 0 and "TD503" not in run.stdout, run.stdout


# A script that takes only the launcher's old `--local_rank`, and a module reading LOCAL_RANK.
OLD_OPTION_ONLY = (
    "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('--local_rank', type=int, default=0)\n"
    "torch.cuda.set_device(parser.parse_args().local_rank)\n"
)
READS_LOCAL_RANK = "import os\n\nLOCAL = int(os.environ['LOCAL_RANK'])\n"


def test_local_rank_read_in_another_module_makes_the_old_option_fine(tmp_path):
    _write_project(tmp_path, {"train.py": OLD_OPTION_ONLY})
    run = _check(tmp_path, ".", rule="TD603")
    assert "train.py:5:21: TD603" in run.stdout  # nothing reads LOCAL_RANK: torchrun breaks it
    (tmp_path / "dist.py").write_text(READS_LOCAL_RANK)
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout


def test_local_rank_read_by_another_script_does_not_count(tmp_path):
    # SpeakerVerification: the torchrun scripts read LOCAL_RANK for their own run; the older
    # script next to them still takes only `--local_rank` from the launcher.
    _write_project(
        tmp_path,
        {
            "train_old.py": OLD_OPTION_ONLY,
            "train_new.py": "import os\n\n\ndef main():\n    return int(os.environ['LOCAL_RANK'])\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
        },
    )
    assert "train_old.py:5:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    # A module of the project reading it (no `__main__` guard) is what a script may import.
    (tmp_path / "dist.py").write_text(READS_LOCAL_RANK)
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout


def test_local_rank_read_through_a_constant_of_another_module(tmp_path):
    # sockeye: `os.environ[C.DIST_ENV_LOCAL_RANK]`, the name bound in its constants module.
    _write_project(
        tmp_path,
        {
            "train.py": OLD_OPTION_ONLY,
            "utils.py": "import os\nimport constants as C\n\n\ndef local_rank():\n"
            "    return int(os.environ[C.DIST_ENV_LOCAL_RANK])\n",
        },
    )
    constants = tmp_path / "constants.py"
    constants.write_text("DIST_ENV_LOCAL_RANK = 'RANK_ON_NODE'\n")  # some other variable
    assert "train.py:5:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    constants.write_text("DIST_ENV_LOCAL_RANK = 'LOCAL_RANK'  # set by torchrun\n")
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout


def test_local_rank_copied_into_the_environment_is_no_read(tmp_path):
    # mmdetection-style tools/train.py (vfe.pytorch): the launcher's `--local_rank` is copied
    # into LOCAL_RANK when that is missing; `torch.distributed.launch` passes `--local-rank`.
    (tmp_path / "pyproject.toml").write_text("")
    script = (
        "import argparse\nimport os\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local_rank', type=int, default=0)\nargs = parser.parse_args()\n"
        "if 'LOCAL_RANK' not in os.environ:\n    os.environ['LOCAL_RANK'] = str(args.local_rank)\n"
    )
    (tmp_path / "train.py").write_text(script)
    assert "train.py:6:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    (tmp_path / "train.py").write_text(script + "rank = int(os.environ['LOCAL_RANK'])\n")
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout


def test_a_local_rank_option_nothing_reads_is_dead_weight(tmp_path):
    # RMI: `--local_rank` kept for a distributed mode "not available now"; no code reads it.
    (tmp_path / "pyproject.toml").write_text("")
    script = OLD_OPTION_ONLY.replace("torch.cuda.set_device(parser.parse_args().local_rank)\n", "")
    (tmp_path / "train.py").write_text(script + "args, unparsed = parser.parse_known_args()\n")
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout
    # KAIR: `parse_args` stops at the launcher's `--local-rank=N`, whether the rank is read or not.
    kair = "args = parser.parse_args()\nif args.dist:\n    init_dist('pytorch')\n"
    (tmp_path / "train.py").write_text(script + kair)
    assert "train.py:5:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    # deq's seg_test.py: the option copied from the training script, in one that neither reads
    # the rank nor runs one process per GPU (`nn.DataParallel`): no launcher starts it.
    (tmp_path / "train.py").write_text(
        script + "args = parser.parse_args()\nnet = torch.nn.DataParallel(net)\n"
    )
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout
    (tmp_path / "train.py").write_text(script + "args, unparsed = parser.parse_known_args()\n")
    (tmp_path / "dist.py").write_text("def setup(args):\n    return args.local_rank\n")
    assert "train.py:5:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout


def test_a_project_launching_its_processes_with_the_old_spelling_keeps_it(tmp_path):
    # ParallelWaveGAN ships its own launcher, which passes `--local_rank=N` to each process.
    _write_project(
        tmp_path,
        {
            "train.py": "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--rank', '--local_rank', type=int, default=0)\n",
            "launch.py": "import subprocess\n\ncmd = ['python', 'train.py']\n"
            "cmd.append('--local_rank')  # not the launcher's `=` form: still reported\n",
        },
    )
    assert "train.py:5:31: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    # Help text that mentions the spelling launches nothing: the buffer is read as the project is.
    (tmp_path / "train.py").write_text(
        (tmp_path / "train.py")
        .read_text()
        .replace("default=0)", "default=0, help='set as --local_rank=N')")
    )
    assert "train.py:5:31: TD603" in _check(tmp_path, "train.py", rule="TD603").stdout
    (tmp_path / "launch.py").write_text(
        "import subprocess\n\nfor rank in range(2):\n"
        "    cmd = ['python', 'train.py', '--local_rank={}'.format(rank)]\n"
    )
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout


def test_a_script_that_starts_its_processes_and_sets_their_rank_keeps_the_option(tmp_path):
    # denoising-diffusion-gan: one Process per GPU, each told `args.local_rank = rank`.
    (tmp_path / "pyproject.toml").write_text("")
    script = (
        "import argparse\nimport torch\nfrom torch.multiprocessing import Process\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local_rank', type=int, default=0)\n"
        "args = parser.parse_args()\n"
        "args.local_rank = args.local_rank % 8  # made from the option itself: still reported\n"
    )
    (tmp_path / "train.py").write_text(script)
    assert "train.py:6:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout
    (tmp_path / "train.py").write_text(
        script + "for rank in range(2):\n    args.local_rank = rank\n"
        "    Process(target=print, args=(args,)).start()\n"
    )
    assert "TD603" not in _check(tmp_path, ".", rule="TD603").stdout
    # convNet.pytorch: launched by the launcher, it only renames the rank it is given.
    (tmp_path / "train.py").write_text(script + "args.local_rank = torch.distributed.get_rank()\n")
    assert "train.py:6:21: TD603" in _check(tmp_path, ".", rule="TD603").stdout


def test_a_project_that_loads_pickled_objects_saves_whole_models_on_purpose(tmp_path):
    _project(tmp_path)
    (tmp_path / "load.py").write_text(
        "import torch\n\n\ndef load(path):\n    return torch.load(path, weights_only=False)\n"
    )
    run = _check(tmp_path, ".")
    assert run.returncode == 0 and "TD503" not in run.stdout


def test_keras_save_weights_only_is_not_a_pickled_load(tmp_path):
    # DnCNN ships a Keras trainer beside its PyTorch one: `ModelCheckpoint(...,
    # save_weights_only=False)` says nothing of how the PyTorch code loads.
    _project(tmp_path)
    (tmp_path / "keras_train.py").write_text(
        "from keras.callbacks import ModelCheckpoint\n\n"
        "checkpoint = ModelCheckpoint('m.hdf5', save_weights_only=False)\n"
    )
    assert read_facts([(tmp_path / "keras_train.py").read_bytes()]).markers == frozenset()
    run = _check(tmp_path, ".")
    assert "TD503" in run.stdout


def test_a_model_whose_class_the_project_allows_in_safe_loads_is_saved_whole_on_purpose(
    tmp_path,
):
    # As PyTorch's own examples do: the model's classes listed for `weights_only=True` loads,
    # in a variable first. Another model, whose class no file allows, is still reported.
    _project(tmp_path)
    (tmp_path / "load.py").write_text(
        "import torch\nfrom models import Net\n\n\ndef load(path):\n"
        "    allowed = [Net, torch.nn.Linear]\n"
        "    with torch.serialization.safe_globals(allowed):\n"
        "        return torch.load(path)\n"
    )
    run = _check(tmp_path, ".")
    assert "train.py:6:1: TD503" not in run.stdout  # Net
    assert "train.py:8:1: TD503" in run.stdout  # Other, a subclass no file allows


LOADERS = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
    "\n"
    "\n"
    "def prepare(dataset):\n"
    "    train_sampler = DistributedSampler(dataset)\n"
    "    return DataLoader(dataset, sampler=train_sampler), train_sampler\n"
    "\n"
    "\n"
    "def main(dataset, train_one_epoch):\n"
    "    loader, sampler = prepare(dataset)\n"
    "    for epoch in range(10):\n"
    "        train_one_epoch(loader)\n"
)


def test_a_sampler_whose_epoch_nothing_in_the_project_sets(tmp_path):
    _write_project(tmp_path, {"train.py": LOADERS})
    run = _check(tmp_path, ".", rule="TD604")
    assert "train.py:7:21: TD604" in run.stdout and "nothing in the project" in run.stdout
    # Another module steps the epoch: fine.
    (tmp_path / "loop.py").write_text("def epoch(sampler, e):\n    sampler.set_epoch(e)\n")
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout


ONE_PASS = (
    "\n\n\ndef train(loader, model, optimizer, epochs):\n"
    "    per_epoch = len(loader.dataset) // epochs\n"
    "    for idx, (x, y) in enumerate(loader):\n"
    "        epoch = idx // per_epoch\n"
    "        loss = model(x, y)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "\n\n\ndef run(dataset, model, optimizer):\n"
    "    loader, sampler = prepare(dataset)\n"
    "{call}"
)


def test_one_pass_over_a_loader_as_long_as_every_epoch_needs_no_set_epoch(tmp_path):
    # pysot's tools/train.py: the dataset holds every epoch's samples, the loop runs once over
    # it and counts the epoch from the batch index; the sampler's order is drawn once.
    (tmp_path / "pyproject.toml").write_text("")
    factory = LOADERS.split("\n\n\ndef main")[0]
    once = "    train(loader, model, optimizer, 20)\n"
    (tmp_path / "train.py").write_text(factory + ONE_PASS.format(call=once))
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout
    # The same loop run once per epoch: the order repeats.
    repeated = "    for epoch in range(20):\n        train(loader, model, optimizer, 1)\n"
    (tmp_path / "train.py").write_text(factory + ONE_PASS.format(call=repeated))
    assert "train.py:7:21: TD604" in _check(tmp_path, ".", rule="TD604").stdout


def test_a_sampler_of_a_file_of_tests_whose_epoch_loop_is_elsewhere(tmp_path):
    # tianshou's test_env_finite.py: a finite environment reads a loader once per test.
    _write_project(tmp_path, {"tests/test_env.py": LOADERS})
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout


def test_a_library_loader_factory_is_left_to_its_callers(tmp_path):
    _write_project(tmp_path, {"loader.py": LOADERS.split("\n\n\ndef main")[0] + "\n"})
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout


def test_a_loader_factory_only_evaluation_functions_call_is_no_training_loader(tmp_path):
    # diffae's metrics.py: a subset of images for FID, shuffled or not, rendered once.
    (tmp_path / "pyproject.toml").write_text("")
    factory = LOADERS.split("\n\n\ndef main")[0].replace("train_sampler", "sampler")
    caller = (
        "\n\n\ndef {name}(dataset):\n"
        "    loader, sampler = prepare(dataset)\n"
        "    for batch in loader:\n"
        "        pass\n"
    )
    (tmp_path / "metrics.py").write_text(factory + caller.format(name="evaluate_fid"))
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout
    # Called by a function that may train too: reported.
    (tmp_path / "metrics.py").write_text(
        factory + caller.format(name="evaluate_fid") + caller.format(name="fit")
    )
    assert "metrics.py:7:15: TD604" in _check(tmp_path, ".", rule="TD604").stdout


DATA_LAYER = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
    "\n"
    "\n"
    "class Base:\n"
    "    def __init__(self):\n"
    "        self.ready = True\n"
    "\n"
    "\n"
    "class DataLayer(Base):\n"
    "    def __init__(self, dataset):\n"
    "        super().__init__()\n"
    "        sampler = DistributedSampler(dataset)\n"
    "        self.loader = DataLoader(dataset, sampler=sampler)\n"
)


def test_a_sampler_made_in_a_constructor_runs_where_its_class_is_called(tmp_path):
    # brevitas' speech data layer: built by a validation script elsewhere; `super().__init__()`
    # is no call of this constructor.
    _write_project(tmp_path, {"data_layer.py": DATA_LAYER})
    assert "TD604" not in _check(tmp_path, ".", rule="TD604").stdout
    run = "\n\ndef main(dataset):\n    layer = DataLayer(dataset)\n    for epoch in range(3):\n        fit(layer)\n"
    _write_project(tmp_path, {"data_layer.py": DATA_LAYER + run})
    assert "data_layer.py:14:19: TD604" in _check(tmp_path, ".", rule="TD604").stdout


def test_the_project_around_a_file_is_read_without_blocking_or_following_links(tmp_path):
    # A FIFO and a link to /dev/zero named like modules sit in the project of the checked file:
    # reading the project's facts must neither block on the one nor read the other forever.
    import os

    _project(tmp_path)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "huge.py").write_bytes(b"# " + b"x" * 3_000_000 + b"\n")
    run = _check(tmp_path, "train.py")  # 60 s timeout: a hang fails the test
    assert run.returncode == 1 and "train.py:6:1: TD503" in run.stdout


def test_autograd_function_classes_are_known_by_their_import():
    facts = read_facts(
        [
            b"from torch.autograd import Function\nclass RoIPool(Function):\n    pass\n",
            b"import torch\nclass PSAMask(torch.autograd.Function):\n    pass\n",
            b"from torch import autograd\nclass OIM(autograd.Function):\n    pass\n",
            b"from sympy import Function\nclass Symbolic(Function):\n    pass\n",
            b"from torch.autograd import Function\nclass Twice(Function):\n    pass\n",
            b"class Twice(object):\n    pass\n",
        ]
    )
    assert facts.autograd_functions == {"RoIPool", "PSAMask", "OIM"}


def test_an_autograd_function_instance_called_in_another_module(tmp_path, monkeypatch):
    # hszhao/semseg lib/psa: `functions.PSAMask(...)(input)`, PSAMask a legacy Function of the
    # package `functions`; ruotianluo/pytorch-faster-rcnn: `RoIPoolFunction(...)(x, rois)`.
    # (A file that never mentions torch is not checked for PyTorch pitfalls at all.)
    _write_project(
        tmp_path,
        {
            "functions/__init__.py": "from .psamask import *\n",
            "functions/psamask.py": "from torch.autograd import Function\n\n\nclass PSAMask(Function):\n"
            "    def forward(self, x):\n        return x\n",
            "functional.py": "import torch\nfrom . import functions\nfrom functions.psamask import PSAMask\n"
            "from keras.layers import Dense\n\n\n"
            "def psa_mask(x):\n    return functions.PSAMask()(x)\n\n\n"
            "def again(x):\n    return PSAMask()(x) + Dense(3)(x)\n",
        },
    )
    monkeypatch.chdir(tmp_path)  # in this process: the code under test, wherever pytest runs
    found = check("functional.py", select="TD104")
    assert [(f.line, f.column) for f in found] == [(8, 12), (12, 12)]


def test_an_autograd_function_reached_through_a_star_import(tmp_path, monkeypatch):
    # gallenszl/CFNet: `from utils import *` in main.py, the package re-exporting
    # utils/visualization.py, whose `disp_error_image_func` is a legacy Function.
    _write_project(
        tmp_path,
        {
            "utils/__init__.py": "from utils.visualization import *\n",
            "utils/visualization.py": "from torch.autograd import Variable, Function\n\n\nclass disp_error(Function):\n"
            "    def forward(self, est, gt):\n        return est - gt\n",
            "main.py": "import torch\nfrom utils import *\n\n\n"
            "def summary(est, gt):\n    return disp_error()(est, gt)\n\n\n"
            "def shadowed(est, gt, disp_error):\n    return disp_error()(est, gt)\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    found = check("main.py", select="TD104")
    assert [(f.line, f.column) for f in found] == [(6, 12)]


ACCURACY = (
    "def accuracy(output, target, topk=(1,)):\n"
    "    maxk = max(topk)\n"
    "    _, pred = output.topk(maxk, 1, True, True)\n"
    "    pred = pred.t()\n"
    "    correct = pred.eq(target.view(1, -1).expand_as(pred))\n"
    "    res = []\n"
    "    for k in topk:\n"
    "        res.append(correct[:k].view(-1).float().sum(0))\n"
    "    return res\n"
)


def test_a_top_k_helper_another_file_calls_for_five_rows_is_reported(tmp_path):
    # The ImageNet example's accuracy helper, in utils.py: `correct[:k]` of the transposed
    # predictions views as one row for k=1, and fails once train.py asks for the top 5.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\n" + ACCURACY,
            "train.py": "from utils import accuracy\n\n\ndef step(out, y):\n    return accuracy(out, y)\n",
        },
    )
    assert "TD403" not in _check(tmp_path, ".", rule="TD403").stdout  # only top-1 asked for
    (tmp_path / "rank.py").write_text("def evaluate(cmc_topk=(1, 5, 10)):\n    pass\n")
    assert "TD403" not in _check(tmp_path, ".", rule="TD403").stdout  # another parameter
    (tmp_path / "train.py").write_text(
        "from utils import accuracy\n\n\ndef step(out, y):\n"
        "    return accuracy(out, y, topk=(1, 5))\n"
    )
    assert "utils.py:11:20: TD403" in _check(tmp_path, ".", rule="TD403").stdout
    (tmp_path / "train.py").write_text(  # fast-autoaugment: the ks passed in place
        "from utils import accuracy\n\n\ndef step(out, y):\n    return accuracy(out, y, (1, 5))\n"
    )
    assert "utils.py:11:20: TD403" in _check(tmp_path, ".", rule="TD403").stdout
    # skipnet: a script with its own copy of the helper, called in that script for the top 1
    # only, while the project asks another copy for five rows: the script's calls decide.
    (tmp_path / "cifar.py").write_text(
        "import torch\n\n\n" + ACCURACY + "\n\ndef step(out, y):\n"
        "    return accuracy(out, y, topk=(1,))\n"
    )
    found = _check(tmp_path, ".", rule="TD403").stdout
    assert "utils.py:11:20: TD403" in found and "cifar.py" not in found


def test_scheduler_classes_follow_bases_across_files():
    facts = read_facts(
        [
            b"from torch.optim.lr_scheduler import _LRScheduler\n"
            b"class WarmupPolyLR(_LRScheduler):\n    pass\n",
            b"class WarmupMultiStepLR(torch.optim.lr_scheduler.MultiStepLR):\n    pass\n",
            b"from sched import WarmupPolyLR\nclass Slower(WarmupPolyLR):\n    pass\n",
            b"class Plateau(ReduceLROnPlateau):\n    pass\nclass Config(object):\n    pass\n",
        ]
    )
    assert facts.scheduler_classes == {"WarmupPolyLR", "WarmupMultiStepLR", "Slower"}
    # A project's own class named like torch's is not torch's.
    assert not read_facts(
        [b"class StepLR:\n    pass\nclass Mine(StepLR):\n    pass\n"]
    ).scheduler_classes


def test_a_scheduler_of_a_project_class_stepped_before_the_optimizer(tmp_path):
    # DABNet: `WarmupPolyLR` of utils/lr_scheduler.py, stepped before the optimizer.
    _write_project(
        tmp_path,
        {
            "utils/__init__.py": "",
            "utils/lr_scheduler.py": "from torch.optim.lr_scheduler import _LRScheduler\n\n\n"
            "class WarmupPolyLR(_LRScheduler):\n    pass\n",
            "train.py": "import torch\nfrom utils.lr_scheduler import WarmupPolyLR\n\n\n"
            "def train(model, loader, optimizer, criterion, max_iter):\n"
            "    for step, (x, y) in enumerate(loader):\n"
            "        scheduler = WarmupPolyLR(optimizer, T_max=max_iter, cur_iter=step)\n"
            "        loss = criterion(model(x), y)\n"
            "        scheduler.step()\n"
            "        optimizer.zero_grad()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
        },
    )
    run = _check(tmp_path, ".", rule="TD203")
    assert "train.py:9:9: TD203" in run.stdout, run.stdout + run.stderr
    # The same class name from another library says nothing.
    (tmp_path / "utils" / "lr_scheduler.py").write_text("class WarmupPolyLR:\n    pass\n")
    assert "TD203" not in _check(tmp_path, ".", rule="TD203").stdout


def test_a_star_import_of_a_project_module_brings_its_torch_names(tmp_path):
    # Yolo-v2-pytorch: `from src.utils import *`, where utils.py imports Variable.
    _write_project(
        tmp_path, {"src/utils.py": "import torch\nfrom torch.autograd import Variable\n"}
    )
    script = "import numpy as np\nfrom src.utils import *\n\ndata = Variable(torch.zeros(2))\n"
    (tmp_path / "test_images.py").write_text(script)
    assert "test_images.py:4:8: TD103" in _check(tmp_path, ".", rule="TD103").stdout
    # A star import of another library brings no name of the project's modules.
    (tmp_path / "test_images.py").write_text(script.replace("src.utils", "numpy"))
    assert "TD103" not in _check(tmp_path, ".", rule="TD103").stdout


def test_star_reexports_keep_only_names_of_one_origin():
    facts = read_facts(
        [
            b"from torch.autograd import Variable\nimport torch.nn.functional as F\n",
            b"from torch import nn, optim as O  # both\n",
            b"import my_ops as F\nfrom torch.nn import Module\nclass Module:\n    pass\n",
            b"def f():\n    from torch.autograd import grad\n",  # not at the top level
        ]
    )
    assert facts.star_reexports == (
        ("O", "torch.optim"),
        ("Variable", "torch.autograd.Variable"),
        ("nn", "torch.nn"),
    )


def test_star_reexports_through_a_module_of_the_project():
    # mt_norm_parse: `env/importing.py` imports torch's names, other modules take them from it by
    # name (`from env.importing import nn`) or all at once (`from env.importing import *`).
    sources = [
        b"import torch.nn as nn\nfrom torch.nn import CrossEntropyLoss\n",
        b"from env.importing import nn, CrossEntropyLoss\n",
    ]
    facts = read_facts(sources, ["env", "model"])
    assert facts.star_reexports == (
        ("CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
        ("nn", "torch.nn"),
    )
    # Another package of that name is not the project's: a second origin.
    assert read_facts(sources, ["model"]).star_reexports == ()


def test_evaluators_that_keep_the_mode_of_their_model():
    keeps = b"def evaluate_model(model, it):\n    for x in it:\n        model(x)\n"
    sets = b"def validate(net, loader):\n    net.eval()\n    for x in loader:\n        net(x)\n"
    trains = (
        b"def test_step(model, loader):\n    for x in loader:\n        model(x).sum().backward()\n"
    )
    no_loop = b"def predict(model, x):\n    return model(x)\n"
    facts = read_facts([keeps, sets, trains, no_loop])
    assert facts.mode_keeping_evaluators == {"evaluate_model"}
    # Two definitions of one name, one of which sets the mode: not known to keep it.
    other = (
        b"def evaluate_model(model, it):\n    model.eval()\n    for x in it:\n        model(x)\n"
    )
    assert read_facts([keeps, other]).mode_keeping_evaluators == frozenset()


def test_classes_with_layers_that_depend_on_the_mode():
    blocks = (
        b"import torch.nn as nn\n\n"
        b"class Block(nn.Module):\n    def __init__(self):\n"
        b"        self.norm = nn.BatchNorm2d(8)\n\n"
        b"class Plain(nn.Module):\n    # dropout would go here\n    def __init__(self):\n"
        b"        self.fc = nn.Linear(8, 8)\n\n"
        b"class Head(nn.Dropout):\n    pass\n"
    )
    models = (
        b"from blocks import Block, Plain\n\n"
        b"class Net(nn.Module):\n    def __init__(self):\n        self.body = Block()\n\n"
        b"class Deeper(Net):\n    pass\n\n"
        b"class Linear(nn.Module):\n    def __init__(self):\n        self.body = Plain()\n"
    )
    facts = read_facts([blocks, models])
    assert facts.mode_layer_classes == {"Block", "Head", "Net", "Deeper"}
    assert facts.has_mode_layers("Net") and not facts.has_mode_layers("Linear")
    # CycleGAN's generator: instance norm, and a `batch_norm=False` flag of its own block.
    instance_norm = (
        b"class ConvBlock(nn.Module):\n    def __init__(self, n, batch_norm=True):\n"
        b"        self.bn = nn.InstanceNorm2d(n)\n\n"
        b"class Generator(nn.Module):\n    def __init__(self):\n"
        b"        self.out = ConvBlock(3, batch_norm=False)\n"
    )
    assert read_facts([instance_norm]).mode_layer_classes == frozenset()
    # MultiBench's MLP: its dropout only when asked for (`dropout=False` by default).
    optional = (
        b"class MLP(nn.Module):\n    def __init__(self, n, dropout=False, dropoutp=0.1):\n"
        b"        self.drop = nn.Dropout(dropoutp)\n"
    )
    assert read_facts([optional]).mode_layer_classes == frozenset()
    # Two classes of one name, one without such layers: not known to have them.
    other = b"class Net(nn.Module):\n    def __init__(self):\n        self.fc = nn.Linear(8, 8)\n"
    assert not read_facts([blocks, models, other]).has_mode_layers("Net")


def test_classes_built_from_a_helper_function_that_makes_such_layers():
    # Prototypical Networks' `conv_block`, a function returning a Sequential with BatchNorm.
    helper = (
        b"import torch.nn as nn\n\n\ndef conv_block(cin, cout):\n"
        b"    return nn.Sequential(nn.Conv2d(cin, cout, 3), nn.BatchNorm2d(cout))\n\n\n"
        b"def linear_block(n):\n    return nn.Sequential(nn.Linear(n, n), nn.ReLU())\n\n\n"
        b"class ProtoNet(nn.Module):\n    def __init__(self):\n"
        b"        self.encoder = nn.Sequential(conv_block(1, 64), conv_block(64, 64))\n\n\n"
        b"class Plain(nn.Module):\n    def __init__(self):\n"
        b"        self.body = linear_block(8)\n        self.other = self.my_conv_block(8)\n"
    )
    facts = read_facts([helper])
    assert facts.has_mode_layers("ProtoNet") and not facts.has_mode_layers("Plain")


def test_functions_that_build_and_return_models():
    factories = (
        b"import torch.nn as nn\nfrom torchvision import models\n\n\n"
        b"class SSD(nn.Module):\n    pass\n\n\n"
        b"def build_ssd(phase, size=300):\n    if size != 300:\n        print('unsupported')\n"
        b"        return\n    return SSD(phase)\n\n\n"
        b"def build_moved(device):\n    net = SSD('test')\n    return net.to(device)\n\n\n"
        b"def wide_resnet(num_class):\n    model = models.wide_resnet50_2(pretrained=True)\n"
        b"    model.fc = nn.Linear(2048, num_class)\n    return model\n\n\n"
        b"def load_model(path):\n    model = models.resnet18()\n    model.eval()\n    return model\n\n\n"
        b"def get_args(parser):\n    parser.add_argument('--dropout', type=float)\n"
        b"    return parser.parse_args()\n\n\n"
        b"def with_optimizer():\n    net = SSD('train')\n    return net, None\n"
    )
    facts = read_facts([factories])
    # A function whose every return hands back a new module builds one, as a class would.
    assert all(facts.is_module_class(f) for f in ("build_ssd", "build_moved", "wide_resnet"))
    assert not facts.is_module_class("get_args") and not facts.is_module_class("with_optimizer")
    # One returning a tuple: which of its items is a new module.
    assert facts.has("module-items:with_optimizer") and facts.has("module-items:with_optimizer/2#0")
    assert not facts.has("module-items:with_optimizer/2#1")
    # One naming a layer whose behaviour depends on the mode (a torchvision model) makes models
    # that need `.eval()`: not one that sets the mode itself, nor one that only names a rate.
    assert facts.has_mode_layers("wide_resnet")
    assert not facts.has_mode_layers("load_model") and not facts.has_mode_layers("get_args")


def test_a_model_made_by_a_function_of_another_module_is_saved_whole(tmp_path):
    _write_project(
        tmp_path,
        {
            "ssd.py": "import torch.nn as nn\n\n\nclass SSD(nn.Module):\n    pass\n\n\n"
            "def build_ssd(phase):\n    return SSD(phase)\n",
            "train.py": "import torch\nfrom ssd import build_ssd\n\nnet = build_ssd('train')\n"
            "torch.save(net, 'ssd.pth')\n",
        },
    )
    run = _check(tmp_path, ".")
    assert "train.py:5:1: TD503" in run.stdout, run.stdout + run.stderr


def test_a_model_returned_with_its_optimizer_by_another_module_is_saved_whole(tmp_path):
    # PyraNet's main.py: `model, optimizer = getModel(opt)`, then `torch.save(model, path)`.
    _write_project(
        tmp_path,
        {
            "nets.py": "import torch.nn as nn\n\n\nclass PyraNet(nn.Module):\n    pass\n",
            "model.py": "import torch\nfrom nets import PyraNet\n\n\ndef getModel(opt):\n"
            "    if 'hg' in opt.arch:\n        model = PyraNet()\n"
            "        optimizer = torch.optim.RMSprop(model.parameters(), lr=opt.LR)\n"
            "    return model, optimizer  # both\n\n\n"
            "def get_pair(opt):\n    first = PyraNet()\n    return first, opt\n\n\n"
            "def either(opt):\n    net = PyraNet()\n    if opt.swap:\n        return opt, net\n"
            "    return net, opt\n",
            "main.py": "import torch\nfrom model import getModel, get_pair, either\n\n\n"
            "def main(opt):\n    model, optimizer = getModel(opt)\n    model = model.cuda()\n"
            "    torch.save(model, 'model.pth')\n    torch.save(optimizer, 'optimizer.pth')\n"
            "    net, settings = get_pair(opt)\n    torch.save(settings, 'a.pth')\n"
            "    torch.save(net, 'b.pth')\n    first, second = either(opt)\n"
            "    torch.save(first, 'c.pth')\n",
        },
    )
    run = _check(tmp_path, ".")
    found = [line.split(": ")[0] for line in run.stdout.splitlines() if "TD503" in line]
    # The modules only: not the optimizer, not the other item of a pair, and not an item
    # that holds the module at some returns only.
    assert found == ["main.py:8:5", "main.py:12:5"], run.stdout + run.stderr


def test_a_parameter_named_like_the_projects_weights_is_not_taken_for_a_model(tmp_path):
    # ML-BCI: the trainer keeps `best_model = model.state_dict().copy()` and hands it on;
    # `save_results(..., best_model, ...)` in another module saves weights, not a module.
    (tmp_path / "pyproject.toml").write_text("")
    saving = (
        "import torch\n\n\ndef save_results(best_model, path):\n    torch.save(best_model, path)\n"
    )
    (tmp_path / "results.py").write_text(saving)
    (tmp_path / "trainer.py").write_text(
        "def fit(model, epochs):\n    for epoch in range(epochs):\n"
        "        best_model = model.state_dict().copy()\n    return best_model\n"
    )
    assert "TD503" not in _check(tmp_path, ".").stdout
    # Without it, the name is all there is: a model, as in darts's `save(model, path)`.
    (tmp_path / "trainer.py").write_text("def fit(model, epochs):\n    return model\n")
    assert "results.py:5:5: TD503" in _check(tmp_path, ".").stdout


def test_a_model_made_by_a_function_of_another_module_is_validated_in_training_mode(tmp_path):
    # MixMatch: the teacher made by `WideResnet50` of utilities/utils.py, wrapped in
    # DataParallel, validated through a softmax module; nothing in the project calls `.eval()`.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch.nn as nn\nimport torchvision\n\n\ndef WideResnet50(num_class):\n"
            "    model = torchvision.models.wide_resnet50_2(pretrained=True)\n"
            "    model.fc = nn.Linear(2048, num_class)\n    return model\n",
            "main.py": "import torch\nimport torch.nn as nn\nfrom utils import WideResnet50\n\n\n"
            "def validation(val_loader, model, device):\n    softmax = nn.Softmax(dim=1)\n"
            "    for inputs, targets in val_loader:\n        outputs = softmax(model(inputs.to(device)))\n"
            "        print(outputs.argmax(1))\n\n\n"
            "def main(val_loader, device):\n    ema_model = nn.DataParallel(WideResnet50(10)).to(device)\n"
            "    for epoch in range(10):\n        validation(val_loader, ema_model, device)\n",
        },
    )
    run = _check(tmp_path, ".", rule="TD205")
    assert "main.py:9:27: TD205" in run.stdout, run.stdout + run.stderr


HASHING_MODEL = (
    "import torch.nn as nn\n\n\nclass LiuDSH(nn.Module):\n    def __init__(self, code_size):\n"
    "        super().__init__()\n        self.conv = nn.Conv2d(3, code_size, 3)\n"
    "        self.bn = nn.BatchNorm2d(code_size)\n\n    def forward(self, x):\n"
    "        return self.bn(self.conv(x))\n"
)
HASHING_TRAINER = """import torch
from model import LiuDSH

model = LiuDSH(code_size=8)
optimizer = torch.optim.Adam(model.parameters())


class Trainer:
    def run_step(self, model, x, y, train: bool):
        out = model(x)
        loss = (out - y).pow(2).mean()
        if train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return out

    def train(self, train_loader, test_loader):
        for epoch in range(10):
            for x, y in train_loader:
                self.run_step(model, x, y, train=True)
            for test_x, test_y in test_loader:
                with torch.no_grad():
                    out = self.run_step(model, test_x, test_y, train=False)
"""


def test_a_model_run_by_a_helper_method_whose_training_a_flag_turns_off(tmp_path):
    # deep-supervised-hashing: `self.run_step(model, ..., train=False)` in the test loop, the
    # step's backward and optimizer step under `if train:`; nothing calls `.eval()`.
    _write_project(tmp_path, {"model.py": HASHING_MODEL, "train.py": HASHING_TRAINER})
    run = _check(tmp_path, ".", rule="TD205")
    assert "train.py:24:27: TD205" in run.stdout, run.stdout + run.stderr
    assert "training mode" in run.stdout
    # A helper that trains whatever it is given (no flag turns its step off) is not an evaluation.
    (tmp_path / "train.py").write_text(
        HASHING_TRAINER.replace("        if train:\n", "        if True:\n")
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_a_model_made_by_a_factory_method_of_the_class(tmp_path):
    # Medical-Report-Generation's tester: `self.extractor = self.__init_visual_extractor()`, the
    # method defined below, making, loading and moving the model it hands back.
    tester = (
        "import torch\nfrom model import LiuDSH\n\n\nclass Sampler:\n    def __init__(self, args):\n"
        "        self.args = args\n        self.extractor = self.__init_extractor()\n\n"
        "    def test(self, loader):\n        for images in loader:\n"
        "            print(self.extractor.forward(images))\n\n"
        "    def __init_extractor(self):\n        model = LiuDSH(code_size=8)\n"
        "        model.load_state_dict(torch.load(self.args.path))\n        if self.args.cuda:\n"
        "            model = model.cuda()\n        return model\n"
    )
    trainer = (
        "from model import LiuDSH\n\n\ndef train(loader, optimizer):\n    model = LiuDSH(code_size=8)\n"
        "    for x in loader:\n        model(x).sum().backward()\n        optimizer.step()\n"
    )
    _write_project(
        tmp_path, {"model.py": HASHING_MODEL, "tester.py": tester, "trainer.py": trainer}
    )
    run = _check(tmp_path, ".", rule="TD205")
    assert "tester.py:12:19: TD205" in run.stdout, run.stdout + run.stderr
    # A method handing back something else too is no factory.
    (tmp_path / "tester.py").write_text(
        tester.replace("        return model\n", "        return model, 1\n")
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_classes_whose_forward_sets_their_own_mode():
    # FAST-VQA's evaluators: `forward(..., inference=True)` calls `self.eval()` itself.
    evaluators = (
        b"class Evaluator(nn.Module):\n    def __init__(self):\n        self.drop = nn.Dropout(0.5)\n\n"
        b"    def forward(self, x, inference=True):\n        if inference:\n            self.eval()\n"
        b"        return self.drop(x)\n\n"
        b"class Trainer(nn.Module):\n    def __init__(self):\n        self.drop = nn.Dropout(0.5)\n\n"
        b"    def forward(self, x):\n        return self.drop(x)\n\n"
        b"    def validate(self, x):\n        self.eval()\n        return self(x)\n"
    )
    facts = read_facts([evaluators])
    assert facts.sets_own_mode("Evaluator") and not facts.has_mode_layers("Evaluator")
    # `self.eval()` in another method: its forward runs in whatever mode it is given.
    assert not facts.sets_own_mode("Trainer") and facts.has_mode_layers("Trainer")


def test_a_model_of_another_module_that_sets_its_own_mode_is_not_reported(tmp_path):
    _write_project(
        tmp_path,
        {
            "models.py": "import torch\nimport torch.nn as nn\n\n\nclass Evaluator(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout(0.5)\n\n"
            "    def forward(self, x, inference=True):\n        if inference:\n            self.eval()\n"
            "            with torch.no_grad():\n                return self.drop(x)\n        return self.drop(x)\n"
        },
    )
    train = (
        "import torch\nfrom models import Evaluator\n\n\n"
        "def finetune(model, loader, optimizer):\n    model.train()\n    for x in loader:\n"
        "        model(x, inference=False).sum().backward()\n        optimizer.step()\n\n\n"
        "def validate(model, val_loader):\n    with torch.no_grad():\n"
        "        for x in val_loader:\n            print(model(x))\n\n\n"
        "def main(loader, val_loader, optimizer):\n    model = MODEL\n"
        "    finetune(model, loader, optimizer)\n    validate(model, val_loader)\n"
    )
    (tmp_path / "train.py").write_text(train.replace("MODEL", "Evaluator()"))
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    (tmp_path / "models.py").write_text(
        (tmp_path / "models.py")
        .read_text()
        .replace("            self.eval()\n", "            pass\n")
    )
    assert "train.py:15:19: TD205" in _check(tmp_path, ".", rule="TD205").stdout


TRAINER = """import torch
import torch.nn as nn


class GanTrainer(nn.Module):
    def __init__(self, gen, dis):
        super().__init__()
        self.dis = dis
        self.dis_opt = torch.optim.Adam(dis.parameters())
        self.dis_scheduler = torch.optim.lr_scheduler.StepLR(self.dis_opt, step_size=100000)

    def update_learning_rate(self):
        if self.dis_scheduler is not None:
            self.dis_scheduler.step()

    def dis_update(self, images):
        self.dis_opt.zero_grad()
        self.dis(images).mean().backward()
        self.dis_opt.step()
"""

TRAIN_GAN = """import torch
from trainer import GanTrainer


def train_gan(trainer, loader, num_gpu):
    for images in loader:
        if num_gpu > 1:
            trainer.module.update_learning_rate()
        else:
            trainer.update_learning_rate()
        trainer.dis_update(images)


def train_gan_in_order(trainer, loader):
    for images in loader:
        trainer.dis_update(images)
        trainer.update_learning_rate()


def train_gan_warming_up(trainer, loader):
    for iteration, images in enumerate(loader):
        if iteration > 0:
            trainer.update_learning_rate()
        trainer.dis_update(images)
"""


def test_methods_of_another_module_that_step_schedulers_or_train():
    facts = read_facts([TRAINER.encode()])
    assert facts.steps_schedulers_only("update_learning_rate") and facts.trains_in("dis_update")
    assert not facts.trains_in("update_learning_rate") and not facts.steps_schedulers_only(
        "__init__"
    )
    # A method of that name elsewhere that also trains: no longer known to step schedulers only.
    both = b"class Other:\n    def update_learning_rate(self):\n        self.scheduler.step()\n"
    both += b"        self.opt.step()\n"
    assert not read_facts([TRAINER.encode(), both]).steps_schedulers_only("update_learning_rate")
    # A scheduler's own `step`, and a step given the epoch (nnUNet's `lr_scheduler.step(epoch)`
    # sets that epoch's rate: none skipped), are no such method.
    own = b"class Warmup:\n    def step(self):\n        self.after_scheduler.step()\n\n"
    own += b"    def on_epoch_start(self):\n        self.lr_scheduler.step(self.current_epoch)\n"
    facts = read_facts([own])
    assert not facts.steps_schedulers_only("step") and not facts.steps_schedulers_only(
        "on_epoch_start"
    )
    # BasicSR's `update_learning_rate(current_iter)` steps only after the first iteration: the
    # first optimizer step comes before the first scheduler step.
    guarded = b"class Model:\n    def update_learning_rate(self, current_iter):\n"
    guarded += b"        if current_iter > 1:\n            for scheduler in self.schedulers:\n"
    guarded += b"                scheduler.step()\n"
    assert not read_facts([guarded]).steps_schedulers_only("update_learning_rate")
    unguarded = guarded.replace(b"if current_iter > 1:", b"if current_iter > 100:")
    assert read_facts([unguarded]).steps_schedulers_only("update_learning_rate")


def test_a_scheduler_method_before_a_training_method_is_reported(tmp_path):
    # NVlabs' UNIT, MUNIT and DG-Net: `trainer.update_learning_rate()` first in every iteration.
    _write_project(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN_GAN})
    out = _check(tmp_path, ".", rule="TD203").stdout
    assert "train.py:8:13: TD203 `trainer.module.update_learning_rate()` steps only" in out
    assert out.count("TD203") == 1  # in order, or after a warm-up condition: fine


# svoice: its Solver's own `train` steps the scheduler after the epoch's training; the model's
# `self.model.train()` at the top of each epoch is nn.Module's, not that method.
SOLVER = """import torch


class Solver:
    def __init__(self, model, optimizer, sched):
        self.model, self.optimizer, self.sched = model, optimizer, sched

    def train(self):
        for epoch in range(10):
            self.model.train()
            loss = self._run_one_epoch(epoch)
            self.sched.step()

    def _run_one_epoch(self, epoch):
        self.optimizer.zero_grad()
        loss = self.model(epoch).sum()
        loss.backward()
        self.optimizer.step()
        return loss.item()
"""


def test_a_module_switched_to_training_mode_is_no_scheduler_method(tmp_path):
    _write_project(tmp_path, {"solver.py": SOLVER})
    assert "TD203" not in _check(tmp_path, ".", rule="TD203").stdout
    # A method of the project's own that steps schedulers only, named otherwise: still reported.
    (tmp_path / "solver.py").write_text(
        SOLVER.replace(
            "def train(self)",
            "def update_lr(self):\n        self.sched.step()\n\n    def fit(self)",
        )
        .replace("self.model.train()", "self.update_lr()")
        .replace("            self.sched.step()\n", "")
    )
    assert (
        "solver.py:13:13: TD203 `self.update_lr()` steps only"
        in _check(tmp_path, ".", rule="TD203").stdout
    )


def test_a_writer_given_to_another_module_that_closes_no_writer_is_reported(tmp_path):
    # Comprehensive-Transformer-TTS: `log(train_logger, step, losses=losses)` from utils.
    _write_project(
        tmp_path,
        {
            "tools.py": "def log(logger, step, loss):\n    logger.add_scalar('loss', loss, step)\n",
            "train.py": "import torch\nfrom torch.utils.tensorboard import SummaryWriter\nfrom tools import log\n\n\n"
            "def main(losses):\n    train_logger = SummaryWriter('runs')\n"
            "    for step, loss in enumerate(losses):\n        log(train_logger, step, loss)\n",
        },
    )
    assert "train.py:7:20: TD705" in _check(tmp_path, ".", rule="TD705").stdout
    # A module of the project that closes a writer: it may be the one handed this one.
    (tmp_path / "tools.py").write_text(
        "def log(logger, step, loss):\n    logger.add_scalar('loss', loss, step)\n\n\n"
        "def finish(logger):\n    logger.close()\n"
    )
    assert "TD705" not in _check(tmp_path, ".", rule="TD705").stdout


# ddpm-torch: eval.py runs a metric module of the project whose `forward` turns gradients off.
METRIC_MODULE = """import torch
import torch.nn as nn


class InceptionStatistics(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def load(self):
        class Extractor(nn.Module):
            def forward(self, x):
                return x

        return Extractor()

    def forward(self, x):
        with torch.inference_mode():
            return self.fc(x).mean(0)
"""
EVAL_SCRIPT = """import torch
from metrics import InceptionStatistics


def eval_fid(loader):
    stats = InceptionStatistics()
    stats.eval()
    for x in loader:
        stats(x)


def main(loader):
    eval_fid(loader)
"""


def test_a_project_module_that_turns_gradients_off_itself_needs_no_no_grad(tmp_path):
    _write_project(tmp_path, {"eval.py": EVAL_SCRIPT})
    metrics = tmp_path / "metrics.py"
    metrics.write_text(METRIC_MODULE)
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    # Its nested class's `forward` comes first in the text; the class's own is the one read.
    metrics.write_text(METRIC_MODULE.replace("        with torch.inference_mode():\n    ", "    "))
    assert "eval.py:9:9: TD205" in _check(tmp_path, ".", rule="TD205").stdout


# wavegrad2: a logger plots the magnitude of a module of another file whose `forward` is
# decorated with `@torch.no_grad()`; `.numpy()` of its output works.
STFT_MODULE = """import torch
import torch.nn as nn


class STFTMag(nn.Module):
    def __init__(self, nfft=1024):
        super().__init__()
        self.register_buffer("window", torch.hann_window(nfft), False)

    # x: [B, T]
    @torch.no_grad()
    def forward(self, x):
        return torch.stft(x, 1024, window=self.window, return_complex=True).abs()
"""
LOGGER = """import torch
from stft import STFTMag


class Logger:
    def __init__(self):
        self.stftmag = STFTMag()

    def plot(self, y):
        return self.stftmag(y).numpy()
"""


def test_a_project_module_decorated_to_record_no_graph_gives_numpy_ready_outputs(tmp_path):
    _write_project(tmp_path, {"logger.py": LOGGER})
    stft = tmp_path / "stft.py"
    stft.write_text(STFT_MODULE)
    assert "TD409" not in _check(tmp_path, ".", rule="TD409").stdout
    stft.write_text(STFT_MODULE.replace("    @torch.no_grad()\n", ""))
    assert "logger.py:10:16: TD409" in _check(tmp_path, ".", rule="TD409").stdout


# meta-transfer-learning: a meta-learner adapts to each task at test time with
# `torch.autograd.grad`; its evaluation needs gradients, `torch.no_grad()` would break it.
META_LEARNER = """import torch
import torch.nn as nn
import torch.nn.functional as F


class FastAdapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Linear(8, 5)

    def forward(self, shot, shot_labels, query):
        loss = F.cross_entropy(self.base(shot), shot_labels)
        grads = torch.autograd.grad(loss, self.base.parameters())
        return F.linear(query, self.base.weight - 0.01 * grads[0])
"""
META_TRAINER = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from models import FastAdapter


class MetaTrainer:
    def __init__(self):
        self.model = FastAdapter()

    def train(self, loader, shot_labels, optimizer):
        self.model.train()
        for shot, query in loader:
            optimizer.zero_grad()
            self.model(shot, shot_labels, query).sum().backward()
            optimizer.step()
        self.model.eval()

    def eval(self, loader, shot_labels):
        self.model.eval()
        for shot, query in loader:
            print(self.model(shot, shot_labels, query))
"""


def test_a_meta_learner_taking_gradients_at_test_time_is_not_told_to_use_no_grad(tmp_path):
    _write_project(tmp_path, {"trainer.py": META_TRAINER})
    models = tmp_path / "models.py"
    models.write_text(META_LEARNER)
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    # The same class in the trainer's own file.
    (tmp_path / "trainer.py").write_text(
        META_TRAINER.replace("from models import FastAdapter\n", META_LEARNER.split("\n", 3)[3])
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    models.write_text(META_LEARNER.replace("torch.autograd.grad", "torch.ones_like"))
    (tmp_path / "trainer.py").write_text(META_TRAINER)
    assert "trainer.py:23:19: TD205" in _check(tmp_path, ".", rule="TD205").stdout


# Deep-Clustering-Mixture-of-Autoencoders: the script gets torch and DataLoader only through
# `from common import *`; its `iter(test_loader).next()` is still PyTorch code to check.
COMMON = """import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader
"""
STAR_SCRIPT = """from common import *


def first_batch(test_loader):
    dataiter = iter(test_loader)
    return dataiter.next()[0]
"""


def test_a_script_that_gets_torch_through_a_star_import_of_the_project_is_checked(tmp_path):
    _write_project(tmp_path, {"train.py": STAR_SCRIPT})
    common = tmp_path / "common.py"
    common.write_text(COMMON)
    assert "train.py:6:12: TD301" in _check(tmp_path, ".", rule="TD301").stdout
    common.write_text("import numpy as np\n")  # nothing of torch passed on: not PyTorch code
    assert "TD301" not in _check(tmp_path, ".", rule="TD301").stdout


# minimal-nmt: `train(model, optimizer, scheduler, ...)` steps a schedule of the project's own.
TRAIN_WITH_SCHEDULER = """import torch


def train(model, optimizer, scheduler, loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        scheduler.step()
        optimizer.step()
"""
OWN_SCHEDULER = """class SGDRScheduler:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self):
        for group in self.optimizer.param_groups:
            group["lr"] *= 0.99
"""


def test_a_scheduler_handed_in_may_be_one_of_the_project_s_own(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    train = tmp_path / "utils.py"
    train.write_text(TRAIN_WITH_SCHEDULER)
    assert "utils.py:8:9: TD203" in _check(tmp_path, ".", rule="TD203").stdout
    # Named as a schedule of something else (a teacher-forcing ratio), or an optimizer wrapper:
    # the name is still trusted.
    (tmp_path / "tfr.py").write_text(
        "class TFRScheduler:\n    def __init__(self, model):\n        self.model = model\n\n"
        "class ScheduledOptim:\n    def __init__(self, optimizer):\n"
        "        self.optimizer = optimizer\n"
    )
    assert "utils.py:8:9: TD203" in _check(tmp_path, ".", rule="TD203").stdout
    (tmp_path / "sgdr.py").write_text(OWN_SCHEDULER)
    assert "TD203" not in _check(tmp_path, ".", rule="TD203").stdout
    # A class of the project that is a torch scheduler leaves the name trusted.
    (tmp_path / "sgdr.py").write_text(
        "from torch.optim.lr_scheduler import _LRScheduler\n\n\n"
        "class SGDRScheduler(_LRScheduler):\n    pass\n"
    )
    assert "utils.py:8:9: TD203" in _check(tmp_path, ".", rule="TD203").stdout
    # The same in the file itself.
    (tmp_path / "sgdr.py").unlink()
    train.write_text(TRAIN_WITH_SCHEDULER + "\n\n" + OWN_SCHEDULER)
    assert "TD203" not in _check(tmp_path, ".", rule="TD203").stdout


# SRGAN-PyTorch: the trainer reads the loader its dataset module made.
DATASET_MODULE = """from torch.utils.data import DataLoader


class DatasetInterface:
    def load(self, train_dataset, batch_size):
        self.train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=True)
"""
LOADER_TRAINER = """import torch


class Trainer:
    def __init__(self, model, dataset, device):
        self.model, self.dataset, self.device = model, dataset, device

    def fit(self):
        train_loader = self.dataset.train_loader
        for batch in train_loader:
            images, labels = batch
            images.to(self.device)
            self.model(images)
"""


def test_a_loader_another_module_assigns_to_an_attribute_yields_tensors(tmp_path):
    _write_project(tmp_path, {"train.py": LOADER_TRAINER})
    dataset = tmp_path / "dataset_interface.py"
    dataset.write_text(DATASET_MODULE.replace("DataLoader(train_dataset", "make(train_dataset"))
    assert "TD001" not in _check(tmp_path, ".", rule="TD001").stdout  # not known: a loader
    dataset.write_text(DATASET_MODULE)
    assert "train.py:12:13: TD001" in _check(tmp_path, ".", rule="TD001").stdout
    # A graph library's DataLoader yields its own batches, moved by a `to` of their own.
    dataset.write_text(DATASET_MODULE.replace("torch.utils.data", "torch_geometric.loader"))
    assert "TD001" not in _check(tmp_path, ".", rule="TD001").stdout


# RNet-pytorch / siamese_resnet: `test(model, data)` of a script is an evaluation (pytest reads
# only test_*.py files), and a model whose layers come from a torchvision backbone has
# BatchNorm.
BACKBONE_MODEL = """import torch.nn as nn
from torchvision import models


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(*list(models.resnet18().children())[:-2])

    def forward(self, x):
        return self.features(x)
"""

SCRIPT_WITH_TEST = """import torch
from model import Net


def train(loader):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    return model


def test(model, data):
    for i in range(len(data)):
        print(model(data[i]))


def main(loader, data):
    model = train(loader)
    test(model, data)
"""


def test_a_script_s_test_function_evaluates_a_backbone_model(tmp_path):
    _write_project(tmp_path, {"model.py": BACKBONE_MODEL, "main.py": SCRIPT_WITH_TEST})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "main.py:17:15: TD205" in out and "without `model.eval()`" in out
    # The same function in a file pytest collects is a test, not an evaluation.
    (tmp_path / "main.py").rename(tmp_path / "test_main.py")
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    # A script of unit tests (it imports unittest) named otherwise: its `test...` are tests.
    (tmp_path / "test_main.py").rename(tmp_path / "checks.py")
    (tmp_path / "checks.py").write_text("import unittest\n" + SCRIPT_WITH_TEST)
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    (tmp_path / "checks.py").rename(tmp_path / "test_main.py")
    # A model of plain layers (no backbone): its mode does not matter.
    (tmp_path / "test_main.py").rename(tmp_path / "main.py")
    (tmp_path / "model.py").write_text(
        BACKBONE_MODEL.replace("list(models.resnet18().children())[:-2]", "[nn.Linear(4, 4)]")
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


# RFBNet: `Detect`, a legacy-style autograd Function with no backward, is run by its test
# script as a plain object (`detector.forward(out, priors)`), which works on torch 2.x.
DETECT = """from torch.autograd import Function


class Detect(Function):
    def __init__(self, num_classes):
        self.num_classes = num_classes

    def forward(self, predictions, prior):
        return predictions[: self.num_classes], prior
"""


RUN_BY_FORWARD = (
    "import torch\nfrom detection import Detect\n\n\ndef run(out, priors):\n"
    "    detector = Detect(21)\n    return detector.forward(out, priors)\n"
)


def test_a_function_without_backward_run_by_its_forward_is_a_plain_object(tmp_path):
    _write_project(tmp_path, {"detection.py": DETECT, "test_net.py": RUN_BY_FORWARD})
    out = _check(tmp_path, ".", rule="TD104").stdout
    assert "detection.py:4:1: TD104 `Detect` subclasses autograd `Function` but defines no" in out
    assert "RuntimeError" not in out and out.count("TD104") == 1
    # Called as an instance instead, the one thing that raises: both reported.
    (tmp_path / "test_net.py").write_text(RUN_BY_FORWARD.replace("detector.forward(", "detector("))
    out = _check(tmp_path, ".", rule="TD104").stdout
    assert "detection.py:4:1: TD104" in out and "test_net.py:7:12: TD104" in out
    # With a backward of its own, it is meant for autograd: the class is reported anyway.
    (tmp_path / "detection.py").write_text(
        DETECT + "\n    def backward(self, grad):\n        return grad\n"
    )
    (tmp_path / "test_net.py").write_text(RUN_BY_FORWARD)
    assert "detection.py:4:1: TD104" in _check(tmp_path, ".", rule="TD104").stdout


def test_two_projects_checked_together_keep_their_own_facts(tmp_path):
    # Project a's `update_learning_rate` steps only a scheduler; project b has a method of that
    # name that also trains. Checked in one command, each file is read with its own project's
    # facts, as it is when checked alone.
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        root.mkdir()
        (root / "pyproject.toml").write_text("")
    (a / "trainer.py").write_text(TRAINER)
    (a / "train.py").write_text(TRAIN_GAN)
    (b / "other.py").write_text(
        "class Other:\n    def update_learning_rate(self):\n        self.scheduler.step()\n"
        "        self.opt.step()\n"
    )
    out = _check(tmp_path, "a", "b", rule="TD203").stdout
    assert "train.py:8:13: TD203 `trainer.module.update_learning_rate()` steps only" in out


NO_EVAL_MODELS = """\
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))

    def forward(self, x):
        return self.body(x)
"""
NO_EVAL_UTILS = """\
import torch


def test_seg(model, loader):
    correct = 0
    for points, target in loader:
        pred = model(points)
        for j in range(len(target)):
            correct += int(pred[j].argmax() == target[j])
    return correct
"""
NO_EVAL_TRAIN = """\
import torch
from model import Classifier
from utils import test_seg


def main(train_loader, test_loader):
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in train_loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    print(test_seg(model, test_loader))
"""


def test_one_inference_in_a_project_that_never_leaves_training_mode(tmp_path):
    # TranslatorBot's `evaluate`: one input run under `no_grad`, no loop, and nothing in the
    # project ever calls `.eval()`.
    _write_project(tmp_path, {"model.py": NO_EVAL_MODELS, "train.py": NO_EVAL_TRAIN})
    predict = (
        "import torch\n\n\ndef evaluate_one(model, x):\n    with torch.no_grad():\n"
        "        scores = model(x)\n    return scores.argmax()\n"
    )
    (tmp_path / "utils.py").write_text(
        NO_EVAL_UTILS + "\n\n" + predict.replace("import torch\n\n\n", "")
    )
    out = _check(tmp_path, "utils.py", rule="TD205").stdout
    assert (
        "utils.py:15:18: TD205 `model` runs in training mode here: nothing in this project" in out
    )
    # The loop of `test_seg` is reported once, as a loop.
    assert out.count("TD205") == 2
    # Some file of the project switches a mode: its callers may well do it first.
    (tmp_path / "train.py").write_text(
        NO_EVAL_TRAIN.replace("    print(", "    model.eval()\n    print(")
    )
    assert "TD205" not in _check(tmp_path, "utils.py", rule="TD205").stdout


def test_evaluation_in_a_project_that_never_leaves_training_mode(tmp_path):
    # GACNet: `utils.test_seg(model, loader)` is called from another file, and nothing in the
    # project ever calls `.eval()`: every evaluation runs in training mode.
    _write_project(
        tmp_path, {"model.py": NO_EVAL_MODELS, "utils.py": NO_EVAL_UTILS, "train.py": NO_EVAL_TRAIN}
    )
    out = _check(tmp_path, "utils.py", rule="TD205").stdout
    assert "utils.py:7:16: TD205" in out and "nothing in this project calls `.eval()`" in out
    # Batches made otherwise (RNet's `for i in range(n)`), the answers read in a loop after.
    (tmp_path / "utils.py").write_text(
        NO_EVAL_UTILS.replace(
            "for points, target in loader:",
            "for i in range(len(loader)):\n        points, target = loader[i]",
        )
    )
    assert "utils.py:8:16: TD205" in _check(tmp_path, "utils.py", rule="TD205").stdout
    (tmp_path / "utils.py").write_text(NO_EVAL_UTILS)
    # A project that trains nothing (a library's evaluation helpers): called from out of sight.
    (tmp_path / "train.py").write_text("import torch\nfrom utils import test_seg\n")
    assert "TD205" not in _check(tmp_path, "utils.py", rule="TD205").stdout
    (tmp_path / "train.py").write_text(NO_EVAL_TRAIN)
    # Some file of the project switches a mode: its callers may well do it first.
    (tmp_path / "train.py").write_text(
        NO_EVAL_TRAIN.replace("    print(", "    model.eval()\n    print(")
    )
    assert "TD205" not in _check(tmp_path, "utils.py", rule="TD205").stdout
    # A method of a trainer named `eval`, given the model (aspect_extraction's
    # `self.eval(model, criterion, dev_loader)`), switches no mode.
    (tmp_path / "train.py").write_text(
        NO_EVAL_TRAIN.replace("    print(", "    trainer.eval(model, test_loader)\n    print(")
    )
    assert "utils.py:7:16: TD205" in _check(tmp_path, "utils.py", rule="TD205").stdout
    (tmp_path / "train.py").write_text(NO_EVAL_TRAIN)
    # A GAN's generator sampled in training mode may be the method.
    (tmp_path / "utils.py").write_text(NO_EVAL_UTILS.replace("model", "netG"))
    assert "TD205" not in _check(tmp_path, "utils.py", rule="TD205").stdout
    # Models of the project mostly without Dropout or BatchNorm: the one given is not known.
    (tmp_path / "utils.py").write_text(NO_EVAL_UTILS)
    plain = "\n\nclass Plain{n}(nn.Module):\n    def forward(self, x):\n        return x\n"
    (tmp_path / "model.py").write_text(NO_EVAL_MODELS + plain.format(n=1) + plain.format(n=2))
    assert "TD205" not in _check(tmp_path, "utils.py", rule="TD205").stdout


FORWARD_CALLED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.fc(self.drop(x))


def eval_classifier(model, data_loader):
    total = 0
    with torch.no_grad():
        for inp, target in data_loader:
            pred = model.forward(inp)
            total += (pred.argmax(-1) == target).sum().item()
    return total


def fit_classifier(train_loader, data_loader):
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in train_loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return eval_classifier(model, data_loader)
"""


def test_a_model_evaluated_by_calling_its_forward(tmp_path):
    # TextGAN's `pred = model.forward(inp)` in its evaluation loop runs the model as a call does.
    _write_project(tmp_path, {"classify.py": FORWARD_CALLED})
    assert "classify.py:20:20: TD205" in _check(tmp_path, ".", rule="TD205").stdout
    (tmp_path / "classify.py").write_text(
        FORWARD_CALLED.replace("    total = 0\n", "    model.eval()\n    total = 0\n")
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_a_model_looked_up_by_name_in_a_project_module_is_built_from_that_class(tmp_path):
    # RS-semantic-segmentation's inference script: `getattr(M, "DinkNet34")()` builds the model
    # `M.DinkNet34()` would, then loads its weights and runs it without `.eval()`.
    _write_project(
        tmp_path,
        {
            "models.py": "import torch.nn as nn\n\n\nclass DinkNet34(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.bn = nn.BatchNorm2d(3)\n\n"
            "    def forward(self, x):\n        return self.bn(x)\n"
        },
    )
    script = (
        "import torch\nimport models as M\n\n"
        'model = LOOKUP()\nmodel.load_state_dict(torch.load("best.pth"))\n'
        "for image in images:\n    print(model(image))\n"
    )
    (tmp_path / "infer.py").write_text(script.replace("LOOKUP", 'getattr(M, "DinkNet34")'))
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "infer.py:7:11: TD205" in out and "`model` is loaded on line 5" in out
    # A name only known when the script runs: what it builds cannot be told.
    (tmp_path / "infer.py").write_text(script.replace("LOOKUP", "getattr(M, arch)"))
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


SHARDED_EVALUATION = """import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loaders(train_data, val_data):
    train_sampler = DistributedSampler(train_data)
    val_sampler = DistributedSampler(val_data)
    train_loader = DataLoader(train_data, batch_size=32, sampler=train_sampler)
    val_loader = DataLoader(val_data, batch_size=32, sampler=val_sampler)
    return train_loader, val_loader
"""


def test_an_evaluation_set_sharded_between_ranks_whose_results_nothing_combines(tmp_path):
    # MobileNetV3-pytorch's ImageNet loaders: every rank scores its own shard of the
    # validation set, and no code of the project all-reduces what they count.
    _write_project(
        tmp_path,
        {
            "data.py": SHARDED_EVALUATION,
            "train.py": "import torch\nimport torch.distributed as dist\n\n\ndef test(model, loader, idx):\n"
            "    dist.barrier()\n    return torch.gather(model(loader), 1, idx)\n",
        },
    )
    out = _check(tmp_path, ".", rule="TD607").stdout
    assert "data.py:8:19: TD607 `val_sampler` splits the evaluation data `val_data`" in out
    assert out.count("TD607") == 1  # the training set is meant to be split
    # A sampler never handed to a loader, or kept in a dict, is not followed.
    (tmp_path / "data.py").write_text(
        SHARDED_EVALUATION.replace("sampler=val_sampler", "sampler=None")
        + "\n\ndef by_split(data):\n    samplers = {}\n"
        "    samplers['dev'] = DistributedSampler(data['dev'])\n    return samplers\n"
    )
    assert "TD607" not in _check(tmp_path, ".", rule="TD607").stdout
    (tmp_path / "data.py").write_text(SHARDED_EVALUATION)
    # Another module of the project reduces the ranks' counts: the shards are combined.
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\n\n\ndef test(correct):\n    dist.all_reduce(correct)\n"
    )
    assert "TD607" not in _check(tmp_path, "data.py", rule="TD607").stdout


def test_an_evaluation_set_no_caller_gives_is_not_sharded(tmp_path):
    # PVD's `get_dataloader(opt, train_dataset, test_dataset=None)`: its only caller passes
    # None, so the test sampler is never made.
    (tmp_path / "pyproject.toml").write_text("")
    loaders = SHARDED_EVALUATION.replace("val_data)", "val_data=None)", 1)
    call = "\n\ntrain_loader, _ = get_loaders(data, {})\n"
    (tmp_path / "data.py").write_text(loaders + call.format("None"))
    assert "TD607" not in _check(tmp_path, ".", rule="TD607").stdout
    (tmp_path / "data.py").write_text(loaders + call.format("val_data=None") + call.format(""))
    assert "TD607" not in _check(tmp_path, ".", rule="TD607").stdout
    # One call gives it: the sampler splits that evaluation set.
    (tmp_path / "data.py").write_text(loaders + call.format("None") + call.format("held_out"))
    assert "data.py:8:19: TD607 `val_sampler`" in _check(tmp_path, ".", rule="TD607").stdout


def test_model_parts_named_in_lower_case_carry_their_layers(tmp_path):
    # milesial's Pytorch-UNet: `UNet` builds `inconv`, `down`, `up`, whose `double_conv` has the
    # BatchNorm; with no `.eval()` anywhere, the evaluation runs the model in training mode.
    _write_project(
        tmp_path,
        {
            "parts.py": "import torch.nn as nn\n\n\nclass double_conv(nn.Module):\n    def __init__(self, i, o):\n"
            "        super(double_conv, self).__init__()\n"
            "        self.conv = nn.Sequential(nn.Conv2d(i, o, 3), nn.BatchNorm2d(o))\n\n\n"
            "class inconv(nn.Module):\n    def __init__(self, i, o):\n"
            "        super(inconv, self).__init__()\n        self.conv = double_conv(i, o)\n\n\n"
            "class outconv(nn.Module):\n    def __init__(self, i, o):\n"
            "        super(outconv, self).__init__()\n        self.conv = nn.Conv2d(i, o, 1)\n\n\n"
            "class UNet(nn.Module):\n    def __init__(self):\n        super(UNet, self).__init__()\n"
            "        self.inc = inconv(3, 8)\n        self.outc = outconv(8, 1)\n",
            "eval.py": "import torch\n\n\ndef eval_net(net, dataset):\n    tot = 0\n"
            "    for i, b in enumerate(dataset):\n        tot += net(torch.from_numpy(b[0]))[0].sum().item()\n"
            "    return tot\n",
            "train.py": "from parts import UNet\n\n\ndef train(loader, optimizer):\n    net = UNet()\n"
            "    for x in loader:\n        net(x).sum().backward()\n        optimizer.step()\n",
        },
    )
    facts = facts_for(tmp_path)
    assert {"double_conv", "inconv", "UNet"} <= facts.mode_layer_classes
    assert "outconv" not in facts.mode_layer_classes
    assert "eval.py:7:16: TD205" in _check(tmp_path, ".", rule="TD205").stdout


def test_a_method_the_project_s_scripts_run_without_gradients(tmp_path):
    # world-models: `get_action_and_transition` is reached through `rollout()`, which no code of
    # its file calls and the training and test scripts call under `torch.no_grad()`.
    _write_project(
        tmp_path,
        {
            "misc.py": "import torch\nimport torch.nn as nn\n\n\nclass Controller(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
            "    def forward(self, x):\n        return self.fc(x)\n\n\n"
            "class RolloutGenerator:\n    def __init__(self):\n        self.controller = Controller()\n\n"
            "    def get_action(self, obs):\n        action = self.controller(obs)\n"
            "        return action.squeeze().cpu().numpy()\n\n"
            "    def rollout(self, obs):\n        return self.get_action(obs)\n"
        },
    )
    script = "import torch\nfrom misc import RolloutGenerator\n\ngenerator = RolloutGenerator()\n"
    (tmp_path / "test_controller.py").write_text(
        script + "with torch.no_grad():\n    generator.rollout(torch.randn(1, 4))\n"
    )
    assert "TD409" not in _check(tmp_path, ".", rule="TD409").stdout
    (tmp_path / "test_controller.py").write_text(script + "generator.rollout(torch.randn(1, 4))\n")
    assert "misc.py:20:16: TD409" in _check(tmp_path, ".", rule="TD409").stdout


def test_a_uint8_mask_returned_to_another_file_that_masks_with_it(tmp_path):
    # tacotron2-vae: utils.get_mask_from_lengths returns a `.byte()` mask, and model.py fills
    # with `~` of it (which flips a uint8 mask's bits: every place masked).
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef get_mask_from_lengths(lengths):\n"
            "    ids = torch.arange(0, int(lengths.max()))\n"
            "    return (ids < lengths.unsqueeze(1)).byte()\n\n\n"
            "def get_bool_mask(lengths):\n    ids = torch.arange(0, int(lengths.max()))\n"
            "    mask = (ids < lengths.unsqueeze(1)).byte()\n    mask = mask.bool()\n    return mask\n\n\n"
            "def get_weights(lengths):\n    return (lengths > 0).byte()\n\n\n"
            "def get_rnn_mask(memory, lengths):\n"
            "    mask = memory.data.new(memory.size(0), memory.size(1)).byte().zero_()\n"
            "    for idx, n in enumerate(lengths):\n        mask[idx][:n] = 1\n    return ~mask\n"
        },
    )
    model = (
        "import torch\nfrom utils import get_mask_from_lengths, get_bool_mask, get_weights\n\n\n"
        "def parse_output(outputs, lengths):\n    mask = ~get_mask_from_lengths(lengths)\n"
        "    mask = mask.expand(2, mask.size(0), mask.size(1))\n    outputs.masked_fill_(mask, 0.0)\n"
        "    other = ~get_bool_mask(lengths)\n    outputs.masked_fill_(other, 0.0)\n"
        "    return outputs * get_weights(lengths)\n\n\n"
        "class Decoder:\n    def set_memory(self, memory, lengths):\n"
        "        self.mask = get_rnn_mask(memory, lengths)\n\n"
        "    def attend(self, scores):\n        return scores.masked_fill(self.mask, -1e9)\n"
    )
    (tmp_path / "model.py").write_text(model)
    run = _check(tmp_path, ".", rule="TD401")
    assert run.stdout.count("TD401") == 2 and "utils.py:6:12: TD401" in run.stdout, run.stdout
    assert "`get_mask_from_lengths()` returns" in run.stdout
    # Tacotron's `get_rnn_mask_from_lengths`, returning `~mask` to a `self.mask` masked with.
    assert "utils.py:21:12: TD401" in run.stdout and "`get_rnn_mask()` returns" in run.stdout
    # Made bool where it is called: nothing to say of the function.
    (tmp_path / "model.py").write_text(
        model.replace("get_mask_from_lengths(lengths)\n", "get_mask_from_lengths(lengths).bool()\n")
    )
    assert _check(tmp_path, ".", rule="TD401").stdout.count("TD401") == 1  # get_rnn_mask's only


def test_a_uint8_mask_returned_to_another_file_that_inverts_it_into_a_keyword(tmp_path):
    # nonparaSeq2seqVC: the decoder hands `mask=~get_mask_from_lengths(lengths)` to a method that
    # keeps it, and another module masks with it; `~` of the uint8 mask flips every bit.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef get_mask_from_lengths(lengths):\n"
            "    ids = torch.arange(0, int(lengths.max()))\n"
            "    mask = (ids < lengths.unsqueeze(1)).byte()\n    return mask\n"
        },
    )
    decoder = (
        "import torch\nfrom utils import get_mask_from_lengths\n\n\n"
        "class Decoder(torch.nn.Module):\n"
        "    def forward(self, memory, lengths):\n"
        "        self.initialize_decoder_states(memory, mask=~get_mask_from_lengths(lengths))\n"
    )
    (tmp_path / "decoder.py").write_text(decoder)
    run = _check(tmp_path, ".", rule="TD401")
    assert "utils.py:6:12: TD401" in run.stdout, run.stdout
    assert "inverts what it returns into a mask (`mask=~get_mask_from_lengths(...)`)" in run.stdout
    # Made bool before it is inverted: nothing to say.
    (tmp_path / "decoder.py").write_text(decoder.replace("(lengths))", "(lengths).bool())"))
    run = _check(tmp_path, ".", rule="TD401")
    assert run.returncode == 0 and "TD401" not in run.stdout, run.stdout


def test_a_loss_rebound_by_a_function_of_the_project_that_takes_it_out_of_the_graph(tmp_path):
    # turangojayev's BiLSTM-CRF: `loss = scalar(loss)` (utils: `return x.view(-1).data.tolist()[0]`)
    # before `loss_sum += loss` keeps a float, not the graph.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef scalar(x):\n    return x.view(-1).data.tolist()[0]\n\n\n"
            "def to_np(x):\n    if x is None:\n        return None\n    return x.data.cpu().numpy()\n\n\n"
            "def reduce_tensor(x):\n    return x.clone()\n"
        },
    )
    train = (
        "import torch\nimport utils\nfrom utils import *\n\n\n"
        "def train(model, optim, batches):\n    loss_sum = 0\n    for x, y in batches:\n"
        "        optim.zero_grad()\n        loss = torch.mean(model(x, y))\n        loss.backward()\n"
        "        optim.step()\n        loss = scalar(loss)\n        loss_sum += loss\n"
        "    return loss_sum\n"
    )
    (tmp_path / "train.py").write_text(train)
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout
    (tmp_path / "train.py").write_text(train.replace("scalar(loss)", "utils.scalar(loss)"))
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout
    # `to_np` returns an array or None; `reduce_tensor` keeps the graph (`clone`).
    (tmp_path / "train.py").write_text(train.replace("scalar(loss)", "to_np(loss)"))
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout
    (tmp_path / "train.py").write_text(train.replace("scalar(loss)", "reduce_tensor(loss)"))
    assert "train.py:14:9: TD102" in _check(tmp_path, ".", rule="TD102").stdout


def test_a_method_of_a_model_class_that_runs_its_forward_runs_the_model(tmp_path):
    # DnCNN's `model.loss(image, target)`: a method of the project's model class that calls
    # `self.forward`, evaluated here in training mode.
    (tmp_path / "pyproject.toml").write_text("")
    model = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n        self.drop = nn.Dropout(0.5)\n\n"
        "    def forward(self, x):\n        return self.drop(self.fc(x))\n\n"
        "    def loss(self, x, y):\n        return F.mse_loss(self.forward(x), y)\n"
    )
    (tmp_path / "model.py").write_text(model)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import Net\n\n\n"
        "def evaluate(model, val_loader):\n    total = 0\n    with torch.no_grad():\n"
        "        for x, y in val_loader:\n            total += model.loss(x, y).item()\n"
        "    return total\n\n\n"
        "def main(train_loader, val_loader):\n    model = Net()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for epoch in range(3):\n        model.train()\n        for x, y in train_loader:\n"
        "            optimizer.zero_grad()\n            model.loss(x, y).backward()\n"
        "            optimizer.step()\n        print(evaluate(model, val_loader))\n"
    )
    assert "train.py:9:22: TD205" in _check(tmp_path, ".", rule="TD205").stdout
    # A method that computes on what it is given only runs no model.
    (tmp_path / "model.py").write_text(model.replace("self.forward(x), y", "x, y"))
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_a_loader_made_by_a_function_of_another_module_yields_tensors(tmp_path):
    # CheXNet's `dataloader_train = get_train_dataloader(...)` (dataset_generator.py, returning
    # the DataLoader it made), then `label.cuda()` on each batch's labels: thrown away.
    (tmp_path / "pyproject.toml").write_text("")
    data = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def get_train_dataloader(dataset, batch_size):\n"
        "    data_loader_train = DataLoader(dataset, batch_size=batch_size, shuffle=True)\n"
        "    return data_loader_train\n"
    )
    (tmp_path / "dataset_generator.py").write_text(data)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom dataset_generator import *\n\n\n"
        "def train(model, dataset, optimizer, criterion):\n"
        "    dataloader_train = get_train_dataloader(dataset, 32)\n"
        "    for image, label in dataloader_train:\n        label.cuda()\n"
        "        loss = criterion(model(image.cuda()), label.cuda())\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
    )
    assert "train.py:8:9: TD001" in _check(tmp_path, ".", rule="TD001").stdout
    # One that may hand back something else (its cached batches) is not known to make a loader.
    (tmp_path / "dataset_generator.py").write_text(
        data.replace(
            "    data_loader_train =",
            "    if batch_size == 0:\n        return dataset\n    data_loader_train =",
        )
    )
    assert "TD001" not in _check(tmp_path, ".", rule="TD001").stdout


def test_a_parameter_annotated_with_a_model_class_of_the_project_holds_a_model(tmp_path):
    # DDPG-PyTorch's agent: `def __init__(self, critic: Critic, ...)`, `self.critic = critic`,
    # then `torch.save(self.critic, path)`.
    _write_project(
        tmp_path,
        {
            "src/networks.py": "import torch.nn as nn\n\n\nclass Critic(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.fc = nn.Linear(2, 1)\n\n\nclass Buffer:\n    pass\n",
            "src/ddpg.py": "import torch\nfrom src import networks\nfrom src.networks import Buffer, Critic\n\n\n"
            "class Agent:\n    def __init__(self, critic: Critic, memory: Buffer):\n"
            "        self.critic = critic\n        self.memory = memory\n\n"
            "    def save(self):\n        torch.save(self.critic, 'critic')\n"
            "        torch.save(self.memory, 'memory')\n\n\n"
            "def save_target(target: networks.Critic):\n    torch.save(target, 'target')\n",
        },
    )
    run = _check(tmp_path, ".")
    assert "ddpg.py:12:9: TD503" in run.stdout and "ddpg.py:17:5: TD503" in run.stdout, run.stdout
    assert run.stdout.count("TD503") == 2


def test_a_step_method_of_the_project_that_only_computes_clears_no_gradient(tmp_path):
    # ECG's training loop: `loss = model.training_step((data, target))`, `loss.backward()`,
    # `optimizer.step()`, and `optimizer.zero_grad()` commented out. The model's
    # `training_step` only computes the loss: nothing clears the gradients.
    (tmp_path / "pyproject.toml").write_text("")
    model = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n"
        "    def training_step(self, batch):\n        data, target = batch\n"
        "        return F.cross_entropy(self(data), target)\n"
    )
    (tmp_path / "model.py").write_text(model)
    (tmp_path / "training.py").write_text(
        "import torch\n\n\ndef fit(epochs, model, loader):\n"
        "    optimizer = torch.optim.Adam(model.parameters())\n    for epoch in range(epochs):\n"
        "        for batch in loader:\n            loss = model.training_step(batch)\n"
        "            loss.backward()\n            optimizer.step()\n            # optimizer.zero_grad()\n"
    )
    assert "training.py:7:9: TD201" in _check(tmp_path, ".", rule="TD201").stdout
    # One that may clear them (it says `grad`) keeps the loop unreported, as any unknown step.
    (tmp_path / "model.py").write_text(
        model.replace(
            "        data, target = batch\n",
            "        self.zero_grad()\n        data, target = batch\n",
        )
    )
    assert "TD201" not in _check(tmp_path, ".", rule="TD201").stdout


def test_an_evaluation_called_without_gradients_from_another_file_keeps_no_graph(tmp_path):
    # `total += criterion(model(x), y)` in utils.validate keeps every batch's graph, unless
    # whoever calls it turns recording off: train.py's `with torch.no_grad(): validate(...)`.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef validate(model, val_loader, criterion):\n    total = 0\n"
            "    for x, y in val_loader:\n        out = model(x)\n        loss = criterion(out, y)\n"
            "        total += loss\n    return total\n"
        },
    )
    train = (
        "import torch\nfrom utils import validate\n\n\ndef main(model, val_loader, criterion):\n"
    )
    (tmp_path / "train.py").write_text(
        train + "    return validate(model, val_loader, criterion)\n"
    )
    assert "utils.py:9:9: TD102" in _check(tmp_path, ".", rule="TD102").stdout
    (tmp_path / "train.py").write_text(
        train + "    with torch.no_grad():\n        return validate(model, val_loader, criterion)\n"
    )
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout


TRAIN_BATCH = """import torch
from trainer import Trainer


class MyTrainer(Trainer):
    def train_batch(self, batch):
        loss = self.loss_function(self.model(batch.inputs), batch.targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss.item()
"""


def test_a_step_in_a_function_of_a_project_that_never_clears_gradients(tmp_path):
    # Seq2seqModel: the base class's loop (another module) calls `train_batch` once per batch,
    # and no code of the project clears gradients: each step applies the sum of all batches.
    _write_project(
        tmp_path,
        {
            "trainer.py": "class Trainer:\n    def train(self, batches):\n"
            "        for batch in batches:\n            self.train_batch(batch)\n",
            "train.py": TRAIN_BATCH,
        },
    )
    out = _check(tmp_path, ".", rule="TD201").stdout
    assert "train.py:10:9: TD201 `self.optimizer.step()` applies what `.backward()` added" in out
    assert "every earlier call of `train_batch`" in out and out.count("TD201") == 1
    # A module of the project clears them (a helper named for it counts): out of sight, maybe
    # before each call.
    for clearing in ("self.optimizer.zero_grad()", "reset_grad(self.model)", "p.grad = None"):
        (tmp_path / "trainer.py").write_text(
            "class Trainer:\n    def train(self, batches):\n        for batch in batches:\n"
            f"            {clearing}\n            self.train_batch(batch)\n"
        )
        assert "TD201" not in _check(tmp_path, ".", rule="TD201").stdout, clearing
    # A framework's loop around the step may clear them.
    (tmp_path / "trainer.py").write_text("class Trainer:\n    pass\n")
    (tmp_path / "train.py").write_text("import pytorch_lightning\n" + TRAIN_BATCH)
    assert "TD201" not in _check(tmp_path, ".", rule="TD201").stdout


def test_a_loss_tensor_handed_to_a_meter_of_another_module_that_sums_it(tmp_path):
    # Crack_Segmentation's `losses.update(loss)`, with the AverageMeter of `utils.py`.
    (tmp_path / "pyproject.toml").write_text("")
    meter = (
        "class AverageMeter(object):\n    def __init__(self):\n        self.sum = 0\n\n"
        "    def update(self, val, n=1):\n        self.val = val\n        self.sum += val * n\n"
    )
    (tmp_path / "utils.py").write_text(meter)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom utils import AverageMeter\n\n\ndef train(model, loader, crit, opt):\n"
        "    losses = AverageMeter()\n    for x, y in loader:\n        opt.zero_grad()\n"
        "        loss = crit(model(x), y)\n        losses.update(loss)\n        loss.backward()\n"
        "        opt.step()\n"
    )
    out = _check(tmp_path, ".", rule="TD102").stdout
    assert "train.py:10:9: TD102 `losses.update(...)` adds the loss tensor `loss`" in out
    # Another meter of the module, which takes the value out of the graph (anycost-gan's
    # DistributedMeter beside its AverageMeter).
    (tmp_path / "utils.py").write_text(
        meter + "\n\nclass DetachingMeter(object):\n    def update(self, val):\n"
        "        self.sum += val.detach().cpu()\n"
    )
    train = (tmp_path / "train.py").read_text()
    (tmp_path / "train.py").write_text(train.replace("AverageMeter", "DetachingMeter"))
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout
    # A meter that keeps the last value only holds one graph at a time.
    (tmp_path / "train.py").write_text(train)
    (tmp_path / "utils.py").write_text(meter.replace("self.sum += val * n", "self.sum = n"))
    assert "TD102" not in _check(tmp_path, ".", rule="TD102").stdout


def test_an_evaluation_of_a_model_its_caller_has_just_trained(tmp_path):
    # pytorch-ner's `lstm_train_eval`: it trains the tagger it is given, then calls
    # `eval_of_bilstm(model, ...)`; no code in between switches the model out of training mode.
    _write_project(
        tmp_path,
        {
            "models.py": "import torch.nn as nn\n\n\nclass Tagger(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.drop = nn.Dropout(0.5)\n"
        },
    )
    script = (
        "import torch\n\n\ndef eval_of_bilstm(model, dataiter):\n    preds = []\n"
        "    for batch in dataiter:\n        preds.append(model(batch.sent).argmax(1))\n"
        "    return preds\n\n\ndef lstm_train_eval(iters, model, loss_function, optimizer):\n"
        "    for batch in iters['train']:\n        loss = loss_function(model(batch.sent), batch.label)\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
        "    SWITCH\n    with torch.no_grad():\n        return eval_of_bilstm(model, iters['dev'])\n"
    )
    # Another script of the project sets eval mode: not every model runs in training mode.
    (tmp_path / "bert_eval.py").write_text("def evaluate(model):\n    model.eval()\n")
    (tmp_path / "evaluate.py").write_text(script.replace("SWITCH", "pass"))
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "evaluate.py:7:22: TD205 `model` runs in training mode in this evaluation loop" in out
    (tmp_path / "evaluate.py").write_text(script.replace("SWITCH", "model.eval()"))
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    # A project whose models mostly compute the same in both modes: not known to matter.
    (tmp_path / "evaluate.py").write_text(script.replace("SWITCH", "pass"))
    (tmp_path / "models.py").write_text(
        "import torch.nn as nn\n\n\nclass Tagger(nn.Module):\n    pass\n\n\n"
        "class Other(nn.Module):\n    pass\n"
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_a_uint8_mask_returned_in_a_tuple_that_another_module_indexes_with(tmp_path):
    # PyTorch-YOLOv3's forks: `build_targets` in utils.py makes its masks as ByteTensors and
    # returns them; models.py unpacks them and indexes the predictions with them.
    _write_project(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef build_targets(pred, cuda):\n"
            "    ByteTensor = torch.cuda.ByteTensor if cuda else torch.ByteTensor\n"
            "    obj_mask = ByteTensor(4, 3).fill_(0)\n    scores = torch.zeros(4, 3)\n"
            "    obj_mask[0, 1] = 1\n    return scores, obj_mask\n"
        },
    )
    models = (
        "from utils import build_targets\n\n\ndef loss(x, pred, cuda):\n"
        "    scores, obj_mask = build_targets(pred, cuda)\n    return x[obj_mask].sum()\n"
    )
    (tmp_path / "models.py").write_text(models)
    out = _check(tmp_path, ".", rule="TD401").stdout
    assert "utils.py:6:16: TD401 `ByteTensor(4, 3)` is a uint8 tensor that `build_targets()`" in out
    assert "(value 2 of the tuple)" in out and out.count("TD401") == 1
    # The user turns it bool first (FractureDetection's fork): nothing to report.
    (tmp_path / "models.py").write_text(
        models.replace("    return", "    obj_mask = obj_mask.bool()\n    return")
    )
    assert "TD401" not in _check(tmp_path, ".", rule="TD401").stdout


def test_a_helper_without_torch_in_a_project_that_trains_with_it(tmp_path):
    # facegen-dcgan's display.py imports no torch, and previews a batch of the DataLoader the
    # training script hands it with the Python 2 `.next()`.
    _write_project(
        tmp_path,
        {
            "display.py": "def preview(dataloader):\n    dataiter = iter(dataloader)\n"
            "    images, _ = dataiter.next()\n    return images\n",
            "train.py": NO_EVAL_TRAIN,
            "model.py": NO_EVAL_MODELS,
        },
    )
    out = _check(tmp_path, "display.py", rule="TD301").stdout
    assert "display.py:3:17: TD301" in out
    # Without a file training with torch, nothing says what the iterator is.
    (tmp_path / "train.py").write_text("import numpy\n")
    assert "TD301" not in _check(tmp_path, "display.py", rule="TD301").stdout


ATTENTION = (
    "import torch\nimport torch.nn as nn\n\n\nclass Attention(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.mask = None\n\n"
    '    def set_mask(self, mask):\n        """\n        Sets indices to be masked\n        """\n'
    "        self.mask = mask\n\n"
    "    def forward(self, attn):\n        if self.mask is not None:\n"
    "            attn.data.masked_fill_(self.mask, -float('inf'))\n        return attn\n"
)
SETTER_CALLER = (
    "import torch\nimport torch.nn as nn\nfrom attention import Attention\n\n\n"
    "class AttnRNN(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.attn = Attention()\n\n"
    "    def forward(self, x):\n"
    "        word_mask = (torch.ones_like(x) - torch.sign(x)).type(torch.ByteTensor)\n"
    "        self.attn.set_mask(word_mask)\n        return self.attn(x)\n"
)


def test_a_uint8_mask_given_to_a_setter_another_file_masks_with(tmp_path):
    # SummaRuNNer: pytorch-seq2seq's Attention keeps `set_mask(mask)` as `self.mask` and fills
    # with it in `forward`; AttnRNN gives it a ByteTensor.
    _write_project(tmp_path, {"attention.py": ATTENTION, "model.py": SETTER_CALLER})
    run = _check(tmp_path, ".", rule="TD401")
    assert "model.py:12:21: TD401" in run.stdout and "used as a mask on line 13" in run.stdout
    # A setter that keeps the value for something else than masking: nothing said.
    (tmp_path / "attention.py").write_text(
        ATTENTION.replace("masked_fill_(self.mask,", "add_(self.mask,")
    )
    assert "TD401" not in _check(tmp_path, ".", rule="TD401").stdout


COGAN_MODEL = """import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(8)

    def classify_b(self, x):
        return self.bn(x)
"""

COGAN_SCRIPT = """import torch
from model import Classifier


def compute_test_score(classifier, test_loader):
    score = 0
    for images, labels in test_loader:
        outputs = classifier(images)
        score += (outputs.argmax(1) == labels).sum()
    return score


def main(trainer, loader, test_loader):
    for x, y in loader:
        trainer.update(x, y).backward()
    return compute_test_score(trainer.{part}.classify_b, test_loader)
"""


def test_a_gan_part_handed_to_an_evaluation_by_its_dotted_name(tmp_path):
    # CoGAN's `compute_test_score(trainer.dis.classify_b, test_loader)`: a discriminator's
    # head, like a GAN's parts, is not said to need eval(); the missing no_grad still is.
    _write_project(tmp_path, {"model.py": COGAN_MODEL, "main.py": COGAN_SCRIPT.format(part="dis")})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "main.py:8:19: TD205" in out, out
    assert "records an autograd graph" in out and "eval()" not in out
    (tmp_path / "main.py").write_text(COGAN_SCRIPT.format(part="net"))
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "main.py:8:19: TD205" in out and "without `classifier.eval()`" in out, out


HAN_MODEL = """import torch
import torch.nn as nn


class SentAttNet(nn.Module):
    def __init__(self, hidden=50):
        super().__init__()
        self.sent_weight = nn.Parameter(torch.Tensor(2 * hidden, 2 * hidden))
        self.sent_bias = nn.Parameter(torch.Tensor(1, 2 * hidden))
        self.context_weight = nn.Parameter(torch.Tensor(2 * hidden, 1))
        self.scale = nn.Parameter(torch.Tensor(1))
        nn.init.ones_(self.scale)
        self._create_weights()

    def _create_weights(self, std=0.05):
        self.sent_weight.data.normal_(0.0, std)
        self.context_weight.data.normal_(0.0, std)

    def forward(self, x):
        return torch.tanh(x @ self.sent_weight + self.sent_bias) @ self.context_weight * self.scale
"""


def test_a_parameter_made_of_uninitialized_memory_that_nothing_fills(tmp_path):
    # Hierarchical-attention-networks: `_create_weights` fills the weights, not `sent_bias`.
    _write_project(
        tmp_path,
        {
            "model.py": HAN_MODEL,
            "train.py": "import torch\nfrom model import SentAttNet\n\nmodel = SentAttNet()\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        },
    )
    out = _check(tmp_path, ".", rule="TD402").stdout
    assert out.count("TD402") == 1, out
    assert "model.py:9:39: TD402" in out and "nothing fills the parameter `self.sent_bias`" in out
    # Another module of the project initializes every parameter: nothing to say.
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import SentAttNet\n\n\ndef init(m):\n    pass\n\n\n"
        "model = SentAttNet()\nmodel.apply(init)\n"
    )
    run = _check(tmp_path, ".", rule="TD402")
    assert run.returncode == 0 and "TD402" not in run.stdout, run.stdout
    # ... or its modules one by one (diffpool: `for m in self.modules(): m.weight.data = ...`).
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import SentAttNet\n\nmodel = SentAttNet()\n"
        "for m in model.modules():\n    print(m)\n"
    )
    run = _check(tmp_path, ".", rule="TD402")
    assert run.returncode == 0 and "TD402" not in run.stdout, run.stdout


WAE_SCRIPT = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def forward(self, x):
        return self.main(x)


encoder = Encoder()
optimizer = torch.optim.Adam(encoder.parameters())
train_loader = DataLoader(list(range(8)))
test_loader = DataLoader(list(range(8)))
for epoch in range(3):
    encoder.train()
    for x in train_loader:
        optimizer.zero_grad()
        encoder(x).sum().backward()
        optimizer.step()
    test_iter = iter({loader})
    test_data = next(test_iter)
    print(test_data.shape)
    z_real = encoder(test_data)
"""


def test_one_evaluation_batch_run_in_a_project_that_never_evaluates(tmp_path):
    # Wasserstein-AutoEncoders: a test batch reconstructed after each epoch, no eval() anywhere.
    _write_project(tmp_path, {"wae.py": WAE_SCRIPT.format(loader="test_loader")})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "wae.py:28:14: TD205 `encoder` runs in training mode here" in out, out
    # A batch of the training data: a training step's batch, nothing to say.
    (tmp_path / "wae.py").write_text(WAE_SCRIPT.format(loader="train_loader"))
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    # The encoding read only for its shape (WAE-GAN's `torch.randn_like(z_real)`): nothing to say.
    (tmp_path / "wae.py").write_text(
        WAE_SCRIPT.format(loader="test_loader") + "    noise = torch.randn_like(z_real)\n"
    )
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout
    (tmp_path / "wae.py").write_text(
        WAE_SCRIPT.format(loader="test_loader") + "    print(z_real.mean())\n"
    )
    assert "wae.py:28:14: TD205" in _check(tmp_path, ".", rule="TD205").stdout
    # Some code of the project switches modes: whoever runs the batch may have.
    (tmp_path / "wae.py").write_text(WAE_SCRIPT.format(loader="test_loader"))
    (tmp_path / "evaluate.py").write_text("def evaluate(model):\n    model.eval()\n")
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


def test_legacy_flags_handed_to_a_torch_loss_through_a_project_subclass(tmp_path):
    # basic_unet_example: `TopKLoss(CrossentropyND)` in one file, `CrossentropyND(
    # torch.nn.CrossEntropyLoss)` (no `__init__` of its own) in another.
    _write_project(
        tmp_path,
        {
            "nd_loss.py": "import torch\n\n\nclass CrossentropyND(torch.nn.CrossEntropyLoss):\n"
            "    def forward(self, inp, target):\n        return super().forward(inp, target.long())\n"
        },
    )
    topk = (
        "import torch\nfrom nd_loss import CrossentropyND\n\n\nclass TopKLoss(CrossentropyND):\n"
        "    def __init__(self, weight=None, ignore_index=-100, k=10):\n"
        "        self.k = k\n"
        "        super(TopKLoss, self).__init__(weight, False, ignore_index, reduce=False)\n"
    )
    (tmp_path / "topk.py").write_text(topk)
    out = _check(tmp_path, ".", rule="TD802").stdout
    assert "topk.py:8:69: TD802 legacy loss flags `reduce=False`" in out, out
    # A base of the project's with its own `__init__`: its arguments are its own.
    (tmp_path / "nd_loss.py").write_text(
        "import torch\n\n\nclass CrossentropyND(torch.nn.CrossEntropyLoss):\n"
        "    def __init__(self, weight, flag, ignore_index, reduce=None):\n"
        "        super().__init__(weight, ignore_index=ignore_index)\n"
    )
    run = _check(tmp_path, ".", rule="TD802")
    assert run.returncode == 0 and "TD802" not in run.stdout, run.stdout


def test_a_loop_variable_handed_back_by_a_helper_of_another_module(tmp_path):
    # neuralprophet: `ax = set_y_as_percent(ax)` in a loop, the helper in plot_utils changes
    # the axis in place and returns it: nothing is lost.
    _write_project(
        tmp_path,
        {
            "plot_utils.py": "def set_y_as_percent(ax):\n"
            '    """Relabel."""\n'
            "    ax.set_yticklabels([f'{y:.4g}%' for y in ax.get_yticks()])\n"
            "    return ax\n\n\n"
            "def scaled(values, factor=2):\n    return [v * factor for v in values]\n"
        },
    )
    plot = (
        "from plot_utils import set_y_as_percent, scaled\n\n\n"
        "def plot(axes, series):\n"
        "    for ax in axes:\n        ax = set_y_as_percent(ax)\n"
        "    for values in series:\n        values = scaled(values)\n"
    )
    (tmp_path / "plot.py").write_text(plot)
    out = _check(tmp_path, ".", rule="TD411").stdout
    assert "plot.py:6:" not in out, out
    # A helper that makes a new value: the loop's items keep their old one.
    assert "plot.py:8:9: TD411 Assigning to the loop variable `values`" in out, out
    # Nor is a function of the same name but not of the project's modules handed back.
    (tmp_path / "plot.py").write_text(plot.replace("from plot_utils", "from matplotlib_utils"))
    assert "plot.py:6:9: TD411" in _check(tmp_path, ".", rule="TD411").stdout


def test_volatile_handed_to_a_variable_helper_of_another_module(tmp_path):
    # pytorch-rdpg's `to_tensor(state1, volatile=True)`, with `to_tensor` in util.py wrapping
    # `Variable(..., volatile=volatile)`: the flag does nothing since 0.4.
    helper = (
        "import torch\nfrom torch.autograd import Variable\n\n\n"
        "def to_tensor(ndarray, volatile=False, requires_grad=False):\n"
        "    return Variable(torch.from_numpy(ndarray), volatile=volatile, requires_grad=requires_grad)\n"
    )
    agent = (
        "import torch\nfrom util import *\n\n\n"
        "def target_value(critic, state):\n    return critic(to_tensor(state, volatile=True))\n"
    )
    _write_project(tmp_path, {"util.py": helper, "agent.py": agent})
    run = _check(tmp_path, ".", rule="TD103")
    assert "agent.py:6:19: TD103" in run.stdout, run.stdout
    # A helper that hands the flag to something else than `Variable` is none of these.
    (tmp_path / "util.py").write_text(helper.replace("return Variable(", "return Wrapper("))
    assert "agent.py" not in _check(tmp_path, ".", rule="TD103").stdout


def test_a_method_the_project_defines_makes_an_unknown_receiver_unsure(tmp_path):
    # brevitas: `src.permute(new_indexes)` on its own wrapper objects, whose `permute()` reorders
    # a module's weights in place.
    script = (
        "import torch\n\n"
        "def permute_region(region, new_indexes):\n"
        "    for src in region.srcs.values():\n"
        "        src.permute(new_indexes)\n"
    )
    _write_project(tmp_path, {"permute.py": script})
    assert "permute.py:5:9: TD001" in _check(tmp_path, ".", rule="TD001").stdout
    # openfold's `Rigid.unsqueeze` returns a new object: dropped, it is as lost as a tensor's
    returning = (
        "class Rigid:\n    def permute(self, indexes):\n        return Rigid(self.rots[indexes])\n"
    )
    _write_project(tmp_path, {"rigid.py": returning})
    assert "permute.py:5:9: TD001" in _check(tmp_path, ".", rule="TD001").stdout
    wrapper = "class SourceWrapper:\n    def permute(self, indexes):\n        self.weight = self.weight[indexes]\n"
    _write_project(tmp_path, {"wrappers.py": wrapper})
    assert "TD001" not in _check(tmp_path, ".", rule="TD001").stdout


def test_a_dropped_array_result_is_called_an_array(tmp_path):
    script = "import numpy as np\nimport torch\n\nvalues = np.array([[0.0], [1.0]])\nvalues.reshape(1, 2)\n"
    _write_project(tmp_path, {"tree.py": script})
    found = _check(tmp_path, ".", rule="TD001").stdout
    assert "tree.py:5:1: TD001 `values.reshape(1, 2)` returns a new array" in found, found


def test_a_script_calling_its_own_accuracy_helper_with_the_default_topk(tmp_path):
    # bayesian-torch's examples: the imagenet scripts pass topk=(1, 5); the cifar ones, each with
    # its own copy of the helper, leave the default (1,): one row, whose view works.
    main = "\nif __name__ == '__main__':\n    main()\n"
    imagenet = (
        "import torch\n\n" + ACCURACY + "\ndef main():\n    accuracy(out, y, topk=(1, 5))\n" + main
    )
    cifar = "import torch\n\n" + ACCURACY + "\ndef main():\n    accuracy(out, y)\n" + main
    _write_project(tmp_path, {"imagenet.py": imagenet, "cifar.py": cifar})
    found = _check(tmp_path, ".", rule="TD403").stdout
    assert "imagenet.py:10:" in found and "cifar.py" not in found, found
    # a helper some file imports may be called with more rows from there
    _write_project(tmp_path, {"evaluate.py": "from cifar import accuracy\n"})
    assert "cifar.py:10:" in _check(tmp_path, ".", rule="TD403").stdout
    # early-bird-tickets' main.py: a script that parses its command line at the top level.
    parsing = (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        "args = parser.parse_args()\n\n"
        + ACCURACY
        + "\n\ndef test(out, y):\n    return accuracy(out, y)\n"
    )
    _write_project(tmp_path, {"main.py": parsing})
    assert "main.py" not in _check(tmp_path, ".", rule="TD403").stdout


def test_an_uninitialized_input_of_a_test_that_checks_no_values(tmp_path):
    # pytorch_memlab: memory-report tests feed `torch.Tensor(512, 1024)` through a layer and
    # never look at the values; a test comparing values would be flaky on it.
    memory = (
        "import torch\n\n\n"
        "def test_reporter():\n"
        "    linear = torch.nn.Linear(1024, 1024)\n"
        "    inp = torch.Tensor(512, 1024)\n"
        "    out = linear(inp * (inp + 3)).mean()\n"
        "    out.backward()\n"
    )
    values = memory.replace("def test_reporter", "def test_values") + "    assert out.item() < 1\n"
    _write_project(tmp_path, {"tests/test_memory.py": memory, "tests/test_values.py": values})
    found = _check(tmp_path, ".", rule="TD402").stdout
    assert "test_values.py:6:11: TD402" in found and "test_memory.py" not in found, found


def test_classes_built_only_of_layers_that_compute_the_same_in_either_mode():
    blocks = (
        b"import torch\nimport torch.nn as nn\nfrom torch.nn import Conv2d\n\n"
        b"class Plain(nn.Module):\n    def __init__(self):\n        super(Plain, self).__init__()\n"
        b"        self.conv = Conv2d(3, 3, 1)\n        self.fc = nn.Linear(8, 8)\n"
        b"        self.apply(init_weights)\n\n    def forward(self, x):\n"
        b"        return self.helper(torch.cat([x, x], 1))\n\n"
        b"class Stack(nn.Module):\n    def __init__(self):\n"
        b"        self.body = nn.Sequential(*[Plain() for _ in range(3)])\n\n"
        b"class Normed(nn.Module):\n    def __init__(self):\n        self.norm = nn.BatchNorm2d(8)\n\n"
        b"class OnNormed(nn.Module):\n    def __init__(self):\n        self.body = Normed()\n\n"
        b"class Recurrent(nn.Module):\n    def __init__(self):\n        self.rnn = nn.LSTM(8, 8)\n\n"
        b"class Backbone(nn.Module):\n    def __init__(self):\n"
        b"        self.body = timm.create_model('resnet18')\n\n"
        b"class Built(nn.Module):\n    def __init__(self):\n        self.body = self.make_body()\n\n"
        b"class Helped(nn.Module):\n    def __init__(self):\n        self.body = conv_bn(3, 8)\n\n"
        b"class Library(BaseModel):\n    pass\n\n"
        b"class Subclass(Plain):\n    pass\n\n"
        b"class Extended(Plain):\n    def __init__(self):\n        self.extra = make_extra()\n"
    )
    facts = read_facts([blocks])
    assert facts.plain_layer_classes == {"Plain", "Stack", "Subclass"}
    assert facts.builds_only_plain_layers("Stack") and not facts.builds_only_plain_layers(
        "OnNormed"
    )
    # Two classes of one name, one with BatchNorm: not known to be plain.
    other = (
        b"class Plain(nn.Module):\n    def __init__(self):\n        self.bn = nn.BatchNorm1d(8)\n"
    )
    assert read_facts([blocks, other]).plain_layer_classes == frozenset()
    # A tab-indented class: its `__init__` ends at the next method, not at the class's end.
    tabbed = (
        b"class Dehaze(nn.Module):\n\n\tdef __init__(self):\n\t\tself.relu = nn.ReLU(inplace=True)\n"
        b"\t\tself.conv = nn.Conv2d(3, 3, 1)\n\n\tdef forward(self, x):\n"
        b"\t\treturn self.relu(self.conv(x)) * x\n"
    )
    assert read_facts([tabbed]).plain_layer_classes == {"Dehaze"}


# PyTorch-Image-Dehazing: AOD-Net, in net.py, has only convolutions and ReLUs; a weight
# initializer of train.py names BatchNorm for the models it might be given.
DEHAZE_NET = """import torch
import torch.nn as nn


class dehaze_net(nn.Module):
    def __init__(self):
        super(dehaze_net, self).__init__()
        self.relu = nn.ReLU(inplace=True)
        self.e_conv1 = nn.Conv2d(3, 3, 1, 1, 0, bias=True)

    def forward(self, x):
        return self.relu(self.e_conv1(x))
"""
DEHAZE_TRAIN = """import torch
import net


def weights_init(m):
    if m.__class__.__name__.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)


def train(train_loader, val_loader, optimizer, criterion):
    dehaze_net = net.dehaze_net().cuda()
    dehaze_net.apply(weights_init)
    dehaze_net.train()
    for epoch in range(10):
        for img_orig, img_haze in train_loader:
            loss = criterion(dehaze_net(img_haze), img_orig)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        for img_orig, img_haze in val_loader:
            clean_image = dehaze_net(img_haze)
"""
DEHAZE_RUN = """import torch
import net


def dehaze_image(image):
    dehaze_net = net.dehaze_net().cuda()
    dehaze_net.load_state_dict(torch.load('snapshots/dehazer.pth'))
    return dehaze_net(image)
"""


def test_a_model_of_another_module_built_of_plain_layers_needs_no_eval(tmp_path):
    _write_project(
        tmp_path, {"net.py": DEHAZE_NET, "train.py": DEHAZE_TRAIN, "dehaze.py": DEHAZE_RUN}
    )
    out = _check(tmp_path, ".", rule="TD205").stdout
    # The evaluation loop still records a graph per batch: only that is said.
    assert "train.py:21:27: TD205" in out and "records an autograd graph" in out, out
    assert "without `dehaze_net.eval()`" not in out and "dehaze.py" not in out, out
    # With a BatchNorm in the model, both are reported again.
    (tmp_path / "net.py").write_text(
        DEHAZE_NET.replace("nn.ReLU(inplace=True)", "nn.BatchNorm2d(3)")
    )
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "without `dehaze_net.eval()`" in out and "dehaze.py:8:12: TD205" in out, out


# CDP's DALI pipeline: its own CIFAR iterator class aliases `next = __next__` for Python 2.
OWN_ITERATOR = """import torch


class CifarInputIter(object):
    def __iter__(self):
        return self

    def __next__(self):
        return torch.zeros(2), torch.zeros(2)

    next = __next__


class Pipe(object):
    def __init__(self):
        self.iterator = iter(CifarInputIter())

    def iter_setup(self):
        images, labels = self.iterator.next()
        return images
"""


def test_a_file_whose_own_iterator_class_aliases_next_is_not_told_to_drop_it(tmp_path):
    _write_project(tmp_path, {"data_iter.py": OWN_ITERATOR})
    assert "TD301" not in _check(tmp_path, ".", rule="TD301").stdout
    (tmp_path / "data_iter.py").write_text(OWN_ITERATOR.replace("    next = __next__\n", ""))
    assert "data_iter.py:18:26: TD301" in _check(tmp_path, ".", rule="TD301").stdout


# EEGNet-pytorch: the tutorials' accuracy check on the test tensors every few steps, with a
# model of another file that has BatchNorm and Dropout.
EEG_MODEL = """import torch.nn as nn


class EEGNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(self.bn(self.conv(x)))
"""
EEG_TRAIN = """import torch
from model import EEGNet

eeg_net = EEGNet()
optimizer = torch.optim.Adam(eeg_net.parameters())
test_x, test_y = torch.load("test.pt")
for epoch in range(10):
    for step, (b_x, b_y) in enumerate(dataloader):
        loss = loss_func(eeg_net(b_x), b_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            test_out = eeg_net(test_x.to(DEVICE))
            print(accuracy(test_out, test_y))
"""


def test_a_model_run_on_test_data_in_the_loop_that_trains_it(tmp_path):
    _write_project(tmp_path, {"model.py": EEG_MODEL, "train.py": EEG_TRAIN})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "train.py:14:24: TD205 `eeg_net` runs in training mode on `test_x` here" in out, out
    # Switched to eval mode somewhere in the file: its author minds the modes.
    switched = EEG_TRAIN.replace(
        "            test_out", "            eeg_net.eval()\n            test_out"
    )
    _write_project(tmp_path, {"train.py": switched})
    assert (
        "TD205 `eeg_net` runs in training mode on" not in _check(tmp_path, ".", rule="TD205").stdout
    )
    # A model without mode-dependent layers computes the same either way.
    plain = EEG_MODEL.replace("nn.BatchNorm2d(8)", "nn.ReLU()").replace(
        "nn.Dropout(0.25)", "nn.ReLU()"
    )
    _write_project(tmp_path, {"model.py": plain, "train.py": EEG_TRAIN})
    assert "TD205" not in _check(tmp_path, ".", rule="TD205").stdout


# CVND_Exercises: a notebook's accuracy check before training, `net.eval()` only cells later.
BEFORE_TRAINING = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(p=0.4)

    def forward(self, x):
        return self.drop(self.fc(x))


net = Net()
correct = 0
for images, labels in test_loader:
    outputs = net(images)
    correct += (outputs.argmax(1) == labels).sum()
{later}
net.eval()
for images, labels in test_loader:
    outputs = net(images)
"""


def test_a_top_level_evaluation_before_the_switch_to_eval_mode(tmp_path):
    _write_project(tmp_path, {"notebook.py": BEFORE_TRAINING.format(later="")})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert "notebook.py:18:15: TD205 evaluation loop without `net.eval()`" in out, out
    assert "notebook.py:23:15: TD205 `net(...)` in this evaluation loop records" in out, out
    # A function called before the loop that switches the mode: the loop runs after it.
    switching = "def evaluate_mode():\n    net.eval()\n\n\nevaluate_mode()\n"
    source = BEFORE_TRAINING.format(later="").replace("net = Net()\n", "net = Net()\n" + switching)
    _write_project(tmp_path, {"notebook.py": source})
    assert "without `net.eval()`" not in _check(tmp_path, ".", rule="TD205").stdout


# pytorch_deephash: a class made of the parts of a module-level torchvision AlexNet, loaded and
# run by an evaluation script that never calls `.eval()`.
DEEPHASH_NET = """import torch.nn as nn
from torchvision import models

alexnet_model = models.alexnet(pretrained=True)


class AlexNetPlusLatent(nn.Module):
    def __init__(self, bits):
        super().__init__()
        self.remain = nn.Sequential(*list(alexnet_model.classifier.children())[:-1])
        self.latent = nn.Linear(4096, bits)

    def forward(self, x):
        return self.latent(self.remain(x))


class Head(nn.Module):
    def __init__(self, bits):
        super().__init__()
        self.fc = nn.Linear(bits, 10)
"""
DEEPHASH_EVALUATE = """import torch
from net import AlexNetPlusLatent


def binary_output(dataloader):
    net = AlexNetPlusLatent(48)
    net.load_state_dict(torch.load('./model/best.pth'))
    with torch.no_grad():
        for inputs, targets in dataloader:
            outputs = net(inputs)
    return outputs
"""


def test_a_class_made_of_a_module_level_model_s_parts_has_its_layers(tmp_path):
    facts = read_facts([DEEPHASH_NET.encode()])
    assert facts.has_mode_layers("AlexNetPlusLatent") and not facts.has_mode_layers("Head")
    assert facts.builds_only_plain_layers("Head")
    _write_project(tmp_path, {"net.py": DEEPHASH_NET, "evaluate.py": DEEPHASH_EVALUATE})
    out = _check(tmp_path, ".", rule="TD205").stdout
    assert (
        "evaluate.py:10:23: TD205 `net` is loaded on line 7 and run here in training mode" in out
    ), out
