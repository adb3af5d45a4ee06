"""TD205 eval-mode-missing: an evaluation loop in training mode, or recording gradients."""

from __future__ import annotations

import ast
from functools import partial
from typing import Callable, Iterator

from torchdoctor.catalog.training._after_train import (
    evaluations_after_train,
    evaluations_in_training_loop,
    trains,
)
from torchdoctor.catalog.training._uncalled import call_it, uncalled_statement
from torchdoctor.catalog.training._modes import ModeFreeModels, last_name, unwrap_self_methods
from torchdoctor.catalog.sdk import (
    file_of_tests,
    CNN_FACTORIES,
    MODE_WORDS,
    SETS_A_MODE_WORDS,
    RUNS_ITSELF,
    Clue,
    attribute_values,
    bindings,
    Context,
    FileIndex,
    holds_marker,
    Finding,
    Kind,
    Monitor,
    Pitfall,
    index,
    is_name,
    lineage,
    index_of,
    is_parameter,
    is_self_attribute,
    methods_defined_once,
    keeps_itself,
    lazy_compile,
    hands_back,
    may_be_called,
    names_assigned,
    moves_itself,
    dotted_name,
    name_words,
    names_a_model,
    parameter_free_module,
    passed_values,
    per_file,
    top_level_classes,
    passed_by_every_call,
    returned_values,
    runs_without_gradients,
    turns_recording_off,
    scope_of,
    shorten,
    top_level_functions,
    records_nothing,
)

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD205",
    name="eval-mode-missing",
    title={
        "en": "Evaluation loop without `model.eval()` or `torch.no_grad()`",
        "zh": "评估循环缺少 `model.eval()` 或 `torch.no_grad()`",
    },
    messages={
        "runtime": {
            "en": "`{model}` is evaluated (forward under no_grad/inference_mode) in training "
            "mode: {layers} behave as in training (Dropout drops, BatchNorm uses and "
            "updates batch statistics); call `model.eval()` before evaluating",
            "zh": "`{model}` 在训练模式下被评估（在 no_grad/inference_mode 下做前向）：{layers} "
            "仍按训练方式工作（Dropout 仍在丢弃，BatchNorm 使用并更新 batch 统计量）；"
            "评估前请调用 `model.eval()`",
        },
        "": {
            "en": "`{model}` runs in training mode in this evaluation loop: neither this function "
            "nor its callers call `{model}.eval()`, so Dropout stays active and BatchNorm "
            "updates its running statistics with evaluation data",
            "zh": "这个评估循环中 `{model}` 处于训练模式：本函数和它的调用者都没有调用 `{model}.eval()`，"
            "Dropout 仍然生效，BatchNorm 还会用评估数据更新 running 统计量",
        },
        "trained-before": {
            "en": "`{model}` runs in training mode in this evaluation loop: `{model}.train()` on "
            "line {line} still holds here (nothing in between calls `.eval()`), so Dropout stays "
            "active and BatchNorm updates its running statistics with evaluation data; call "
            "`{model}.eval()` before the loop and `{model}.train()` after it",
            "zh": "这个评估循环中 `{model}` 处于训练模式：第 {line} 行的 `{model}.train()` 在这里仍然生效"
            "（其间没有调用 `.eval()`），Dropout 仍然生效，BatchNorm 还会用评估数据更新 running 统计量；"
            "请在循环前调用 `{model}.eval()`，循环结束后再调用 `{model}.train()`",
        },
        "loaded": {
            "en": "`{model}` is loaded on line {line} and run here in training mode: nothing in "
            "this file calls `.eval()`, so its Dropout and BatchNorm layers behave as in "
            "training; call `{model}.eval()` after loading it",
            "zh": "`{model}` 在第 {line} 行加载，在这里以训练模式运行：本文件中没有任何地方调用 "
            "`.eval()`，所以它的 Dropout 和 BatchNorm 层仍按训练方式工作；加载后请调用 `{model}.eval()`",
        },
        "helper": {
            "en": "`{function}` (a function of this project that runs the model it is given in a "
            "loop without setting its mode) gets `{model}` in training mode here: its Dropout "
            "and BatchNorm layers behave as in training during the evaluation; call "
            "`{model}.eval()` before it and `{model}.train()` after",
            "zh": "`{function}`（本项目中的一个函数：在循环里运行传给它的模型，但不设置模式）在这里拿到的 "
            "`{model}` 处于训练模式：评估时它的 Dropout 和 BatchNorm 层仍按训练方式工作；请在调用前 "
            "`{model}.eval()`，调用后 `{model}.train()`",
        },
        "after-train": {
            "en": "`{function}()` evaluates `{model}` in training mode: `{model}.train()` on line "
            "{line} still holds here (nothing in between calls `.eval()`, nor does `{function}`), "
            "so Dropout stays active and BatchNorm updates its running statistics with evaluation "
            "data; call `{model}.eval()` before it and `{model}.train()` after",
            "zh": "`{function}()` 在训练模式下评估 `{model}`：第 {line} 行的 `{model}.train()` 在这里仍然生效"
            "（其间没有调用 `.eval()`，`{function}` 里也没有），Dropout 仍然生效，BatchNorm 会用评估数据"
            "更新 running 统计量；请在调用前执行 `{model}.eval()`，之后再 `{model}.train()`",
        },
        "evaluation-data": {
            "en": "`{model}` runs in training mode on `{data}` here, in the loop that trains it: "
            "nothing in this file calls `.eval()`, so Dropout stays active and BatchNorm updates "
            "its running statistics with that evaluation data; call `{model}.eval()` before it "
            "and `{model}.train()` after",
            "zh": "`{model}` 在这里以训练模式处理 `{data}`，而这是在训练它的循环里：本文件中没有任何地方调用 "
            "`.eval()`，Dropout 仍然生效，BatchNorm 会用这些评估数据更新 running 统计量；请在这之前调用 "
            "`{model}.eval()`，之后调用 `{model}.train()`",
        },
        "trained-loop": {
            "en": "`{model}` runs in training mode here: `{function}()` evaluates it on line "
            "{line}, in the loop that trains it, and neither that loop's function nor `{function}` "
            "calls `.eval()`, so Dropout stays active and BatchNorm updates its running statistics "
            "with evaluation data; call `{model}.eval()` before the evaluation and `{model}.train()` "
            "after it",
            "zh": "`{model}` 在这里以训练模式运行：第 {line} 行在训练它的循环里调用 `{function}()` 评估它，"
            "而这个循环所在的函数和 `{function}` 都没有调用 `.eval()`，Dropout 仍然生效，BatchNorm "
            "会用评估数据更新 running 统计量；请在评估前调用 `{model}.eval()`，评估后调用 `{model}.train()`",
        },
        "project-once": {
            "en": "`{model}` runs in training mode here: nothing in this project calls `.eval()` "
            "(nor `.train(False)`), so Dropout stays active and BatchNorm normalizes with this "
            "batch's statistics (and updates its running ones); call `{model}.eval()` first",
            "zh": "这里的 `{model}` 处于训练模式：整个项目都没有调用 `.eval()`（也没有 "
            "`.train(False)`），Dropout 仍然生效，BatchNorm 用这一批的统计量做归一化（还会更新 running "
            "统计量）；请先调用 `{model}.eval()`",
        },
        "global-once": {
            "en": "`{model}` runs in training mode here: it is built at the top of this file as "
            "`{built}` and nothing switches it to eval mode (nor hands it to code that could), so "
            "its Dropout and BatchNorm layers behave as in training (random drops, this input's "
            "statistics); call `{model}.eval()` once after building it",
            "zh": "这里的 `{model}` 处于训练模式：它在本文件顶层由 `{built}` 构建，之后没有任何代码把它切换到 "
            "eval 模式（也没有把它交给可能这样做的代码），其中的 Dropout 和 BatchNorm 层"
            "仍按训练方式工作（随机丢弃、使用这次输入的统计量）；"
            "请在构建后调用一次 `{model}.eval()`",
        },
        "project": {
            "en": "`{model}` runs in training mode in this evaluation loop: nothing in this project "
            "calls `.eval()` (nor `.train(False)`), so Dropout stays active and BatchNorm updates "
            "its running statistics with evaluation data; call `{model}.eval()` before the loop "
            "and `{model}.train()` after it",
            "zh": "这个评估循环中 `{model}` 处于训练模式：整个项目都没有调用 `.eval()`（也没有 "
            "`.train(False)`），Dropout 仍然生效，BatchNorm 还会用评估数据更新 running 统计量；"
            "请在循环前调用 `{model}.eval()`，循环结束后再调用 `{model}.train()`",
        },
        "switched": {
            "en": "`{model}.train()` inside this evaluation loop puts the model back in "
            "training mode while it evaluates: Dropout drops and BatchNorm uses and updates "
            "batch statistics on evaluation data; call `{model}.eval()` before the loop and "
            "`{model}.train()` after it",
            "zh": "这个评估循环里的 `{model}.train()` 让模型在评估过程中又回到了训练模式：Dropout 会丢弃，"
            "BatchNorm 会用评估数据的 batch 统计量并更新它；应在循环前调用 `{model}.eval()`，"
            "循环结束后再调用 `{model}.train()`",
        },
        "no-grad": {
            "en": "`{model}(...)` in this evaluation loop records an autograd graph for every "
            "batch: run the loop under `torch.no_grad()` or `torch.inference_mode()`",
            "zh": "这个评估循环中的 `{model}(...)` 每个 batch 都在记录计算图：应在 `torch.no_grad()` 或 "
            "`torch.inference_mode()` 下运行",
        },
        "volatile": {
            "en": "`{model}(...)` in this evaluation loop records an autograd graph for every "
            "batch: `volatile=True` has turned nothing off since PyTorch 0.4 (it is ignored with a "
            "warning); run the loop under `torch.no_grad()` or `torch.inference_mode()`",
            "zh": "这个评估循环中的 `{model}(...)` 每个 batch 都在记录计算图：`volatile=True` 自 "
            "PyTorch 0.4 起已不再关闭任何东西（只会被忽略并给出警告）；应在 `torch.no_grad()` 或 "
            "`torch.inference_mode()` 下运行",
        },
        "uncalled": {
            "en": "`{method}` names the method without calling it (no parentheses): this "
            "statement does nothing, so the model stays in training mode (Dropout drops, "
            "BatchNorm uses and updates batch statistics); write `{method}()`",
            "zh": "`{method}` 只是引用了这个方法而没有调用它（缺少括号）：这条语句什么也不做，模型仍处于训练模式"
            "（Dropout 仍在丢弃，BatchNorm 仍使用并更新 batch 统计量）；应写成 `{method}()`",
        },
        "both": {
            "en": "evaluation loop without `{model}.eval()` and without `torch.no_grad()`: Dropout "
            "and BatchNorm behave as in training, and every batch records an autograd graph",
            "zh": "评估循环既没有 `{model}.eval()` 也没有 `torch.no_grad()`：Dropout 和 BatchNorm 仍按训练方式工作，"
            "每个 batch 还在记录计算图",
        },
    },
    fix_title={"en": "Call it: `{method}()`", "zh": "调用它：`{method}()`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A validation, test or inference loop (a function named like `validate`/`evaluate`/`test`/
`infer`/`predict`, or a loop over a `val_loader`/`test_loader`, or `dataloaders["val"]`; a
function named `test...` is a pytest test, no evaluation, only in a file pytest collects:
`test_*.py`, `*_test.py`, one under `tests/`) that calls the model on every
batch and never trains (no `.backward()`, no `.step()`), or a loop over such a loader run
without gradients inside the training function itself (training, then `with torch.no_grad():
for x, y in val_loader:`, or over the indices of evaluation data: `for i in
range(len(X_validation)):`), when the code around it (the function, its callers in the same file,
the functions those call, and the other methods of its class):

- never switches to evaluation mode (no `.eval()`, `.train(False)` nor MONAI's `eval_mode(...)`)
  although the model is certainly in training mode (`model.train()` is called, or the model is
  built right there: from a class of the file, or of another module of the project that the
  project's facts say has Dropout or BatchNorm (a torchvision backbone counts), in its own body
or in a project class it uses,
  and not only when its `__init__` is asked for them; or one of the classes of a module of models
  picked at run time, `models.__dict__[args.arch]()` or `getattr(models, arch)()`: torchvision's,
  or a module of the project at least half of whose model classes have such a layer); a model
  built in the file only from layers that compute the same in both modes (no Dropout,
  BatchNorm or Transformer layers) is not reported for this. A model the evaluation function
  builds itself (from a class of the file, a torchvision model, or a CNN library's:
  `cnn_finetune.make_model`,
  `efficientnet_pytorch`, `segmentation_models_pytorch`) is asked of that function and what it
  calls only: the other code around it never sees that model; or
- never disables gradient recording (no `torch.no_grad()`, `torch.inference_mode()` or
  `torch.set_grad_enabled(...)`), unless the model's class, of the file or the project, runs
  its `forward` under one of them itself (a metric's feature extractor), or calls
  `torch.autograd.grad` itself (a meta-learner adapting to each task at test time, which
  `torch.no_grad()` would break); code of the file that calls the function, however many
  calls up (a script's `__main__` running `with torch.no_grad(): evaluate_all()`, which calls
  the loop's function through another), counts.

The message says which of the two is missing. To stay precise it only reports functions whose
caller is in the same file, and loops at the top level of a script; or a function that itself
switches the very model it runs to training mode before the loop and not to eval mode
between that switch and the loop (`model_train.train()`, a training loop, then a loop over
`gen_val`: bubbliiiing's `fit_one_epoch`; a `.eval()` after the loop, once every epoch has run,
comes too late), whoever calls it; the model may be the module itself, in a method of an
`nn.Module` subclass that calls `self.train()` (a model's own `fit`). The message then names
the line of that switch. A loop that only clears gradients (`zero_grad()`, no
backward, no step) trains nothing. The model may also run
through a function of the file it is handed to, which calls it (`pred, loss = apply(model,
criterion, batch)`), unless that function computes gradients (an adversarial attack), or
through a method of the project's classes that calls its own `forward` (`model.loss(image,
target)`, `model.denoise(image)`). A model
handed back by the training function (`model = train_model(model, ...)`, which returns its
parameter) is the model it was given. A model handed in as a parameter is in training mode
when every call of the function in the file passes a model that its caller has just trained
in a loop (run, `.backward()`, `.step()`) with no switch of mode in between (`lstm_train_eval`
training its tagger, then calling `eval_of_bilstm(model, ...)`), in a project at least half of
whose model classes have a mode-dependent layer.

In a project that trains a model (a `.backward(` somewhere) and where no code may switch a
model's mode (no `.eval(`, `.train(False)`, `.train(<expression>)`, `eval_mode`, `.training =` in
any of its files), every model runs in training mode: an evaluation function is then reported
whoever calls it, from any file, when its model certainly has a mode-dependent layer (built
from such a class, of the file or the project, or a torchvision model; a model handed in as a
parameter or read from a dict, when at least half of the project's model classes have such a
layer). Not for a GAN's generator or
discriminator (`netG`, `G_AB`, `critic`), nor for a parameter that every call of its function
in the file hands such a part (CoGAN's `compute_test_score(trainer.dis.classify_b, loader)`):
sampling in training mode can be the method. In such a project one batch drawn from an
evaluation loader (`test_data = next(iter(test_loader))`) and run through a model within the
next statements of its block (`encoder(test_data[0])`: the test images reconstructed after each
epoch of Wasserstein-AutoEncoders) is reported too, unless the next statements read its result
only for its shape (`torch.randn_like(z)`, `z.size(0)`).

A loop over batches made otherwise (`for i in range(n_batches)`, `for x, y in
utils.create_dataset(test)`), the innermost one that runs the model (a loop after the model's
call that reads its answers does not count), in a function named to evaluate that is no method
of a model, is reported only when evaluation mode is missing (the first of the two above), not
for gradients alone.

Also an inference script that loads a model and runs it in training mode:
`net.load_state_dict(torch.load(path))` (or a part of what `torch.load` returned) on a model the
file builds, then `net(...)` in the same function (for a model loaded at the top of the script,
in a function of the file that reads it: `def evaluate(sentence): ... net(x)`), in a file where
no text switches a model to
eval mode (`.eval(`,
`.train(False)`, `eval_mode`) or trains one (`.backward(`, `.step(`). It is reported at that
call when the model has a layer whose behaviour depends on the mode: a class of the file with
Dropout or BatchNorm, a torchvision model, or a class of another module in a project that has
such layers or that the project's facts say has one (also a class made of the parts of a
module-level torchvision model: `alexnet_model.classifier.children()`). A model handed to any
other function first (`evaluate(net, loader)`) is left
alone: that function may switch it; so is a model loaded in a pytest test of a file of tests
(`def test_save_load():`, e3nn's): it checks the round trip, run as the original was.

And a call of an evaluation function of another module of the project that keeps the mode of
the model it is given (named to evaluate, validate, test or predict, its loop calls its first
parameter, and nothing in it sets a mode or trains: `utils.evaluate_model(model, iterator)`),
where the code around the call switches a model to training mode and none to eval mode, and the
model is `self` or a model built in the file from a class of the file with Dropout or BatchNorm
(or a torchvision model), or from a class of another module in a project that has such layers:
reported at the call.

And an evaluation function of the file (named to evaluate, validate, test or predict; it runs
the model and neither sets a mode nor trains) called after `model.train()` with nothing in
between that may set a mode (`.eval()`, `.train(...)`, a function of the file that sets one):
`self.net.train()`, one epoch of training, then `self.test_epoch()`, which runs `self.net`,
even when another caller of `test_epoch` calls `.eval()` first. The call is read in the
statements after the switch, and after the loops, `with` and `try` statements around it, never
out of an `if`; the model must have a layer whose behaviour depends on the mode (a class of the
file, a torchvision model, or a project class the project's facts say has one). Reported at the
evaluation function's call.

And `model.train()` inside an evaluation loop that runs without gradients (under
`torch.no_grad()` or `torch.inference_mode()`), of a model that loop runs: the model evaluates in
training mode from that batch on. Not when the loop or the lines just above it speak of dropout,
Monte Carlo sampling or uncertainty: keeping dropout on at test time can be the point.

And a model run on data named for evaluation (`test_x`, `x_val`, `valid_images`, through
`.to(device)` or `Variable(...)`) and made before the loop that trains it, in that loop, which
also runs it on other data, in a file that never switches a model to eval mode: the tutorials'
`if step % 50 == 0: test_out = net(test_x)` accuracy check, for a model whose layers depend on
the mode (a class of the file or of the project with Dropout or BatchNorm, a torchvision model).

And an evaluation function of the file (no loop over batches, no mode set, no training) called
in the loop that trains the model it runs, where neither sets a mode: the model handed to a
function of the file that trains it (`train_step(x, y, optimizer, criterion, unet)`, then
`get_val_loss(x_val, y_val, unet)`), or trained by the loop itself (run, `.backward()` and
`.step()` there) and handed to the evaluator, or `self.model` trained so and run by a method of
the class the loop calls (sscdnet's `self.test()` every few iterations); reported at the
evaluator's run of the model, when every value the code gives the model has a layer whose
behaviour depends on the mode.

And `model.eval` written as a statement without its parentheses (of a module, or of a name
that says it holds a model): it names the method and does nothing, so the model stays in
training mode. The fix adds the `()`; it is unsafe only because it changes what the code
computes, which is the point. Not on the last line of a notebook cell, which shows the method.

## Why is this bad?
`model.train()` and `model.eval()` switch how some layers compute. In training mode Dropout
zeroes random activations, so predictions change from run to run and accuracy is too low, and
BatchNorm normalises with the statistics of the current batch and updates its running mean and
variance with the evaluation data, which pollutes the model you keep training and saving.

Without `torch.no_grad()` every forward pass keeps its activations for a backward pass that
never comes: evaluation needs several times more memory (often the "out of memory" you only
get at validation time) and runs slower.

## Symptoms
Validation accuracy that changes between two runs on the same weights and is lower than
expected; a model that gets worse after each validation pass; `torch.OutOfMemoryError: CUDA out
of memory` during validation although training fits.

## Fix safety
Only `model.eval` written without its parentheses has a fix: it adds the `()`. It is unsafe
because it changes what the code computes (the model evaluates in evaluation mode from then on),
which is the point. The other findings have no fix: where to call `model.eval()`, and where to
switch back, depends on the loop.

## Known problems
For a loop, only the file that holds it is read, so a function is reported only when its
caller is in the same file; an evaluation function of another module is known from the project's
facts, read from its text, and so are the layers of another module's classes (a class whose
layers come only from a base class of another library is not known to have them). Any
`.eval()` or `no_grad` in that surrounding code counts as handled, whichever model it applies
to, so some real mistakes are missed (but for a loop at the top level of a script or notebook,
over a model built in the file: there only the top-level code up to the loop's end, and the
functions it calls, count). A whole pickled model run without
`.eval()` (`net = torch.load(path)`, then `net(x)`) is not reported: its class, and whether it
has layers that depend on the mode, cannot be seen.
""",
        "zh": """
## What it catches
验证、测试或推理循环（函数名类似 `validate`/`evaluate`/`test`/`infer`/`predict`，或者遍历
`val_loader`/`test_loader` 或 `dataloaders["val"]` 的循环；以 `test` 开头的函数只有在 pytest 收集的文件中
（`test_*.py`、`*_test.py`、`tests/` 下的文件）才算 pytest 测试而不是评估）
对每个 batch 调用模型且不做训练（没有 `.backward()`、没有 `.step()`），
或者在训练函数内部、不记录梯度地遍历这样一个 loader 的循环（先训练，再 `with torch.no_grad(): for x, y in
val_loader:`，或者按下标遍历评估数据：`for i in range(len(X_validation)):`），
并且它周围的代码（本函数、同一文件中调用它的函数、这些函数调用的其他函数，以及同一个类的其他方法）：

- 从未切换到评估模式（没有 `.eval()`、`.train(False)`，也没有 MONAI 的 `eval_mode(...)`），
  而模型又必然处于训练模式（调用过 `model.train()`，或者模型就是在这里新建的：由本文件的类构造，
  或由项目事实表明含有 Dropout 或 BatchNorm（torchvision 骨干网络也算）
  的其他模块的类构造——层在类自身或它用到的项目类中，
  且不是只有 `__init__` 要求时才创建；或者是运行时从一个模型模块里挑出的类：
  `models.__dict__[args.arch]()` 或 `getattr(models, arch)()`，来自 torchvision，或来自项目中至少一半
  模型类带有这类层的模块）；
  如果模型在本文件中完全由两种模式下计算相同的层构成
  （没有 Dropout、BatchNorm 或 Transformer 层），这一项不报告。评估函数自己新建的模型（由本文件的类、
  torchvision 模型或 CNN 库构造：`cnn_finetune.make_model`、`efficientnet_pytorch`、
  `segmentation_models_pytorch`）只看这个函数及其调用的函数：周围的其他代码接触不到这个模型；或者
- 从未关闭梯度记录（没有 `torch.no_grad()`、`torch.inference_mode()` 或 `torch.set_grad_enabled(...)`），
  除非模型的类（本文件或项目中的）自己在 `forward` 里用了其中之一（例如评估指标里的特征提取器），
  或者自己调用了 `torch.autograd.grad`（测试时对每个任务做适应的元学习模型，`torch.no_grad()` 会让它出错）；
  本文件中调用这个函数的代码，无论隔了几层调用（脚本的 `__main__` 里 `with torch.no_grad(): evaluate_all()`，
  再经另一个函数调用到循环所在的函数），都算在内。

提示信息会说明缺的是哪一个。为了保证准确，只报告调用者也在同一文件中的函数，以及脚本顶层的循环；或者函数自己在
循环之前把它运行的那个模型切换到训练模式、而在这次切换和循环之间没有切换到评估模式（`model_train.train()`、一个训练循环，
然后是遍历 `gen_val` 的循环：bubbliiiing 的 `fit_one_epoch`；所有 epoch 跑完之后才调用的 `.eval()` 已经太晚），
无论谁调用它；模型也可以是模块自身：`nn.Module` 子类的方法里调用了 `self.train()`（模型自己的 `fit`）。
这时提示信息会给出那次切换所在的行。只清零梯度（`zero_grad()`，没有反向传播，也没有
step）的循环不算训练。
模型也可以经由本文件中接收它并调用它的函数运行（`pred, loss = apply(model, criterion, batch)`），
除非那个函数要计算梯度（例如对抗攻击）；也可以经由项目中的类里调用自身 `forward` 的方法运行
（`model.loss(image, target)`、`model.denoise(image)`）。训练函数交还的模型（`model = train_model(model, ...)`，
它返回自己的参数）就是传给它的那个模型。作为参数传入的模型，如果本文件中对该函数的每次调用传入的
都是调用者刚在循环里训练过（运行、`.backward()`、`.step()`）且其间没有切换模式的模型（`lstm_train_eval`
先训练标注器，再调用 `eval_of_bilstm(model, ...)`），并且项目中至少一半的模型类带有行为随模式变化的层，
那么它就处于训练模式。

如果项目训练模型（某处有 `.backward(`），且项目中没有任何代码可能切换模型的模式
（所有文件里都没有 `.eval(`、`.train(False)`、`.train(<表达式>)`、
`eval_mode`、`.training =`），那么每个模型都一直处于训练模式：这时评估函数无论被哪个文件调用都会报告，
前提是它的模型一定含有依赖模式的层（由含这类层的类构造，该类属于本文件或本项目，或者是 torchvision 模型；
作为参数传入或从 dict 中取出的模型，则要求项目中至少一半的模型类含有这类层）。GAN 的生成器和判别器
（`netG`、`G_AB`、`critic`）除外，本文件中每次调用都传入这类部件的参数也除外
（CoGAN 的 `compute_test_score(trainer.dis.classify_b, loader)`）：以训练模式采样可能正是方法本身。
在这样的项目里，从评估用的 loader 取出一个 batch（`test_data = next(iter(test_loader))`），并在同一代码块紧接着的
几条语句里交给模型运行（`encoder(test_data[0])`：Wasserstein-AutoEncoders 每个 epoch 之后重建测试图像），也会报告；
除非随后的语句只读取结果的形状（`torch.randn_like(z)`、`z.size(0)`）。

遍历以其他方式产生的 batch 的循环（`for i in range(n_batches)`、`for x, y in utils.create_dataset(test)`），
只看运行模型的最内层循环（模型调用之后只读取输出的循环不算），且所在函数以评估命名、又不是模型自己的方法时，
只在缺少评估模式（上面两项中的第一项）时报告，不会只因为没有关闭梯度而报告。

还包括以训练模式运行加载好的模型的推理脚本：对文件中构造的模型调用
`net.load_state_dict(torch.load(path))`（或 `torch.load` 结果中的一部分），之后在同一函数中调用 `net(...)`
（模型在脚本顶层加载时，也包括文件中读取它的函数：`def evaluate(sentence): ... net(x)`），
而文件中没有任何
切换到评估模式的文字（`.eval(`、`.train(False)`、`eval_mode`），也没有训练（`.backward(`、`.step(`）。
当模型含有行为随模式变化的层时，在这次调用处报告：本文件中带 Dropout 或 BatchNorm 的类、torchvision
模型，或项目中其他模块的类（且项目里有这类层，或项目事实表明这个类有这类层：也包括用模块级 torchvision
模型的部件构成的类，`alexnet_model.classifier.children()`）。如果模型先被交给了其他函数（`evaluate(net, loader)`），
则不报告：那个函数可能会切换模式；测试文件里 pytest 测试函数（`def test_save_load():`，e3nn 的写法）中加载的
模型也不报告：它检查的是保存再加载的往返，与原模型以同样的模式运行。

还包括调用项目中另一个模块里沿用传入模型当前模式的评估函数（以 evaluate、validate、test 或 predict 命名，
循环中调用它的第一个参数，而函数里没有任何设置模式或训练的代码：`utils.evaluate_model(model, iterator)`），
而调用处周围的代码把模型切换到训练模式、从未切换到评估模式，且模型是 `self`，或是由本文件中带 Dropout 或
BatchNorm 的类（或 torchvision 模型）构造的模型，或是项目中其他模块的类（且项目里有这类层）构造的模型：
在这次调用处报告。

还包括在 `model.train()` 之后调用本文件中的评估函数（以 evaluate、validate、test 或 predict 命名，
运行该模型，既不设置模式也不训练），而其间没有任何可能设置模式的代码（`.eval()`、`.train(...)`、
本文件中设置模式的函数）：`self.net.train()`，训练一个 epoch，然后 `self.test_epoch()` 运行 `self.net`——
即使 `test_epoch` 的另一个调用者先调用了 `.eval()`。只沿着切换之后的语句、以及包住它的循环、`with`、`try`
之后的语句往下读，不会跳出 `if`；模型必须含有行为随模式变化的层（本文件的类、torchvision 模型，
或项目事实表明含有这类层的项目类）。在评估函数的调用处报告。

还包括在不记录梯度（`torch.no_grad()` 或 `torch.inference_mode()` 之下）的评估循环里对该循环所运行的模型
调用 `model.train()`：从这个 batch 起模型就在训练模式下评估。如果循环或它上面几行提到 dropout、
蒙特卡洛采样或不确定性，则不报告：测试时保留 dropout 可能正是用意。

还包括在训练模型的循环里用名字表明是评估数据、且在循环之前就已得到的输入（`test_x`、`x_val`、`valid_images`，
也包括经过 `.to(device)` 或 `Variable(...)` 的）运行这个模型，而循环也用别的数据运行它、文件中从不把模型切换到评估模式：
教程里常见的 `if step % 50 == 0: test_out = net(test_x)` 准确率检查，且模型含有行为依赖模式的层
（本文件或项目中带 Dropout 或 BatchNorm 的类、torchvision 模型）。

还包括在训练模型的循环里调用本文件的评估函数（不遍历 batch、不设置模式、不训练）去运行这个模型，而两者都不设置模式：
模型交给本文件中训练它的函数（`train_step(x, y, optimizer, criterion, unet)`，随后
`get_val_loss(x_val, y_val, unet)`），或由循环自己训练（在循环里运行、`.backward()`、`.step()`）再交给评估函数，
或 `self.model` 这样训练后由循环调用的本类方法运行（sscdnet 每隔几次迭代调用一次 `self.test()`）；
当代码赋给模型的每个值都含有行为依赖模式的层时，在评估函数运行模型处报告。

还包括写成单独一条语句、却漏了括号的 `model.eval`（对象是模块，或名字表明它是模型）：它只是引用了这个方法，
什么也不做，模型仍处于训练模式。修复会补上 `()`；它被标为不安全，只是因为它改变了代码的计算结果，而这正是目的。
notebook 单元格的最后一行除外，那里会显示这个方法。

## Why is this bad?
`model.train()` 和 `model.eval()` 会改变部分层的计算方式。训练模式下 Dropout 会随机置零激活值，
预测结果每次都不一样、准确率偏低；BatchNorm 用当前 batch 的统计量做归一化，还会用评估数据更新
running mean 和 running var，污染之后继续训练和保存的模型。

没有 `torch.no_grad()` 时，每次前向都会为一个永远不会发生的反向传播保留激活值：评估阶段多占好几倍显存
（训练能跑、一到验证就 "out of memory" 往往就是这个原因），速度也更慢。

## Symptoms
同一份权重两次验证的准确率不一样，而且低于预期；每验证一次模型就变差一点；训练能跑，验证时却报
`torch.OutOfMemoryError: CUDA out of memory`。

## Fix safety
只有漏了括号的 `model.eval` 有修复：补上 `()`。它被标为不安全，因为它改变了代码的计算结果（模型从此在评估模式下运行），
而这正是目的。其他发现没有修复：在哪里调用 `model.eval()`、又在哪里切换回来，取决于具体的循环。

## Known problems
对于循环，只读取循环所在的文件，所以只有调用者也在同一文件中时才会报告；其他模块中的评估函数来自项目
事实（从其文本读出），其他模块中的类有哪些层也是如此（层只来自其他库的基类时，不知道它有这类层）。
周围代码里出现任何 `.eval()` 或 `no_grad`，不论作用在哪个模型上，都算已经处理，因此会漏掉一些真实的错误
（脚本或 notebook 顶层的循环例外：对在本文件中构建的模型，只算循环结束之前的顶层代码及其调用的函数）。
整个被 pickle 的模型（`net = torch.load(path)` 之后 `net(x)`）在没有 `.eval()` 时运行不会报告：
看不到它的类，也就无法知道它是否含有行为随模式变化的层。
""",
    },
    example="""
import torch
import torch.nn as nn


def evaluate(model, val_loader):
    correct = 0
    for images, labels in val_loader:
        outputs = model(images)
        correct += (outputs.argmax(1) == labels).sum().item()
    return correct


def main(train_loader, val_loader):
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for images, labels in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
    print(evaluate(model, val_loader))
""",
    use_instead="""
import torch
import torch.nn as nn


@torch.no_grad()
def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for images, labels in val_loader:
        outputs = model(images)
        correct += (outputs.argmax(1) == labels).sum().item()
    return correct


def main(train_loader, val_loader):
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for images, labels in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
    print(evaluate(model, val_loader))
""",
)

# Words that name an evaluation function or loader: `validate`, `test_loader`, `valloader`.
EVAL_WORDS = frozenset(
    """
val valid validate validation eval evaluate evaluation test testing infer inference predict
prediction
""".split()
)
# Calls that wrap an iterable without changing what it yields.
ITERABLE_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "track"})
MODEL_NAMES = frozenset({"model", "net", "network", "classifier"})
MAKER_PREFIXES = (
    "load_",
    "build_",
    "get_",
    "create_",
    "make_",
    "init_",
    "save_",
    "setup_",
    "prepare_",
    "unwrap_",
    "wrap_",
    "evaluate_",  # `evaluate_model(encoder, ...)`: runs a model, is none
    "validate_",
)
# Any call of these names means the code trains.
TRAINING_CALLS = frozenset({"backward", "step", "zero_grad"})
# Names that turn gradient recording off (`smart_inference_mode` and friends included).
NO_GRAD_WORDS = ("no_grad", "inference_mode", "set_grad_enabled")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


# Told in words: "two different predictions for the same input", or the other way round ("the
# same data input but get different feature output"), the usual question of a model evaluated
# with its dropout still on.
_DIFFERENT_OUTPUTS = lazy_compile(
    r"\b[Dd]ifferent (?:\w+ )?(?:predict\w*|outputs?|results?)\b[^\n]{0,60}\bsame (?:\w+ )?input"
    r"|\b[Ss]ame (?:\w+ )?inputs?\b[^\n]{0,60}\bdifferent (?:\w+ )?(?:predict\w*|outputs?|results?)\b"
)
# `model.eval()` named as done ("I call model.eval() but..."), not as missing ("there is no
# model.eval()", "without model.eval()"): the premise, a model left in training mode, is gone.
_EVAL_CALLED = lazy_compile(r"\.eval\(\)")
_EVAL_MISSING = lazy_compile(
    r"\b(?:[Nn]o|[Ww]ithout|[Nn]ot|[Ff]org[eo]t\w*|[Mm]issing|[Aa]dd(?:ing)?)\b[^\n.]{0,20}?\w+\.eval\(\)"
)
_DIFFERENT_OUTPUTS_CAUSE = {
    "en": "A model that gives different outputs for the same input is usually still in "
    "training mode: dropout drops different units at each call and batch norm normalises "
    "with the batch's own statistics. `model.eval()` before predicting makes it "
    "deterministic.",
    "zh": "同一输入得到不同输出的模型，通常仍处于训练模式：dropout 每次丢弃不同的单元，batch norm "
    "用当前 batch 自己的统计量做归一化。预测前调用 `model.eval()` 就会得到确定的结果。",
}


@PITFALL.error_check(types=(), words=("different",))
def different_outputs(block, report) -> Clue | None:
    if not _DIFFERENT_OUTPUTS.search(block.message):
        return None
    if report.search(_EVAL_CALLED) and not report.search(_EVAL_MISSING):
        return None
    return Clue(0.6, _DIFFERENT_OUTPUTS_CAUSE)


# Told as outputs that change with the batch: "predicting one image gives a different result
# from predicting it in a batch", "different results with different batch sizes". Batch norm in
# training mode normalises each sample with its batch's statistics.
_BATCH_DEPENDENT = lazy_compile(
    r"\b(?:results?|outputs?|predictions?) (?:is |are )?(?:very |quite |totally )?different\b"
    r"[^\n]{0,80}?\bbatch"
    r"|\b[Dd]ifferent (?:\w+ )?(?:predict\w*|outputs?|results?)\b[^\n]{0,60}?\bbatch[ _-]?sizes?\b"
    r"|\b[Bb]atch[ _-]?sizes?\b[^\n]{0,60}?\bdifferent (?:\w+ )?(?:predict\w*|outputs?|results?)\b"
    r"|\b(?:outputs?|predictions?|results?) depends? on (?:the )?batch[ _-]?sizes?\b"
)
_BATCH_DEPENDENT_CAUSE = {
    "en": "Outputs that change with the batch (an image alone against the same image in a "
    "batch, or another batch size) come from a model still in training mode: batch norm "
    "normalises each sample with the statistics of the batch it is in. `model.eval()` "
    "before predicting makes it use its running statistics.",
    "zh": "输出随 batch 而变（单张图像与同一张图像放在 batch 中、或换一个 batch size），说明模型仍处于"
    "训练模式：batch norm 用样本所在 batch 的统计量做归一化。预测前调用 `model.eval()`，"
    "它就会改用累计的统计量。",
}


@PITFALL.error_check(types=(), words=("different", "depend"))
def batch_dependent_outputs(block, report) -> Clue | None:
    if report.exceptions or not _BATCH_DEPENDENT.search(block.message):
        return None  # told of a crash, "different ... batch" is about its shapes, not outputs
    if report.search(_EVAL_CALLED) and not report.search(_EVAL_MISSING):
        return None
    return Clue(0.55, _BATCH_DEPENDENT_CAUSE)


@PITFALL.static(ast.For, ast.AsyncFor)
def check(node: ast.For, ctx: Context) -> Iterator[Finding]:
    if not ctx.imports_torch:
        return
    loader = _loader_name(node.iter, ctx)
    function = ctx.enclosing_function()
    if loader is None and not _evaluation_function(function, ctx):
        # `for i in range(len(X_validation))` in the function that trains: the batches of
        # evaluation data taken by index (lstm-autoencoder's `fit`)
        loader = _evaluation_data_counted(node.iter)
    if loader is None:
        # A loop over batches made otherwise (`for i in range(n_batches)`,
        # `utils.create_dataset(test)`) in a function named to evaluate: reported only when
        # the model is certainly in training mode, the innermost loop only.
        if (
            _evaluation_function(function, ctx)
            and not _holds_a_loop(node, ctx)
            and not _program(ctx).facts[function].switches_to_train  # type: ignore[index]
        ):
            # (One that calls `model.train()` itself keeps dropout on on purpose: PPUU's
            # uncertainty estimate.)
            yield from _once_per_call(_check_loop(node, ctx, function, "", eval_only=True), ctx)
        return
    if not _evaluation_intent(function, loader, ctx):
        return
    yield from _once_per_call(_check_loop(node, ctx, function, loader, eval_only=False), ctx)


@PITFALL.static(ast.With)
def check_inference(node: ast.With, ctx: Context) -> Iterator[Finding]:
    """`with torch.no_grad(): out = model(x)` in a function named to evaluate, with no loop in
    it or around it (one sentence translated, one image segmented), in a project where nothing
    ever sets a model's mode: the model runs in training mode (TranslatorBot's `evaluate`)."""
    if not ctx.imports_torch or not _no_mode_ever_set(ctx) or not turns_recording_off(node, ctx):
        return
    function = ctx.enclosing_function()
    if not _evaluation_function(function, ctx) or any(
        isinstance(a, (ast.For, ast.AsyncFor, ast.While)) for a in ctx.ancestors
    ):
        return
    if _holds_a_loop(node, ctx):  # type: ignore[arg-type]
        return  # the loop in it that runs the model is checked as a loop
    if _trains(ctx, function) or _dropout_on_purpose(node, ctx):  # type: ignore[arg-type]
        return
    run = _model_run(node, ctx)  # type: ignore[arg-type]
    if run is None:
        return
    call, model = run
    if _never_out_of_training(model, function, ctx):
        yield ctx.finding(PITFALL, call, "project-once", model=_short(ctx.text(model)))


@PITFALL.static(ast.Call)
def check_global_model(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`outputs = VGG16(image)` in a function named to predict (`VGG16_predict`), where the
    file's top level builds `VGG16 = models.vgg16(pretrained=True)` and uses that name for
    nothing but runs and moves (the Udacity dog-breed notebook and its many copies): no code can
    have switched it to eval mode."""
    func = call.func
    if type(func) is not ast.Name or func.id not in _unswitched_global_models(ctx):
        return
    function = ctx.enclosing_function()
    if not _evaluation_function(function, ctx) or _trains(ctx, function):  # type: ignore[arg-type]
        return
    if any(isinstance(a, (ast.For, ast.AsyncFor, ast.While)) for a in ctx.ancestors):
        return  # a loop is checked as a loop
    if _dropout_on_purpose(function, ctx):  # type: ignore[arg-type]
        return
    built = _unswitched_global_models(ctx)[func.id]
    yield ctx.finding(PITFALL, call, "global-once", model=func.id, built=_short(ctx.text(built)))


# Uses of a model's name that leave its mode alone: a run (`m(x)`) and a move (`m.cuda()`).
_MODE_KEEPING_METHODS = frozenset({"cuda", "cpu", "to", "float", "half", "double"})


@per_file
def _unswitched_global_models(ctx: Context) -> dict[str, ast.expr]:
    """The names the module's top level binds only to a torchvision model (maybe moved) and
    that the whole file uses only to run or move it, with the call that builds each."""
    built: dict[str, ast.expr] = {}
    for statement in ctx.tree.body:
        if not (
            type(statement) is ast.Assign
            and len(statement.targets) == 1
            and type(target := statement.targets[0]) is ast.Name
        ):
            continue
        made = unwrap_self_methods(statement.value)
        if type(made) is ast.Call and _mode_dependent_factory(ctx.module_qualname(made.func) or ""):
            built.setdefault(target.id, made)
    if not built:
        return {}
    found = index(ctx)
    parents = found.parents
    for node in ast.walk(ctx.tree):
        if type(node) is not ast.Name or node.id not in built:
            continue
        parent = parents.get(node)
        if type(node.ctx) is ast.Store:
            # (at the module's level, also under an `if use_cuda:`: `VGG16 = VGG16.cuda()`)
            value = (
                parent.value if type(parent) is ast.Assign and len(parent.targets) == 1 else None
            )
            at_top = found.scopes[found.number[node]] in (None, ctx.tree)  # no def, no class
            if not (at_top and value is not None and _runs_or_moves_only(value, node.id, built)):
                built.pop(node.id)
        elif type(parent) is ast.Call and parent.func is node:
            continue
        elif not (
            type(parent) is ast.Attribute
            and parent.attr in _MODE_KEEPING_METHODS
            and type(parents.get(parent)) is ast.Call
        ):
            built.pop(node.id)  # `.eval()`, `.train()`, handed on, stored: not followed
        if not built:
            return {}
    return built


def _runs_or_moves_only(value: ast.expr, name: str, built: dict[str, ast.expr]) -> bool:
    """The value of an assignment to `name`: the model it is bound to, or that model moved."""
    made = unwrap_self_methods(value)
    if made is built[name]:
        return True
    return (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in _MODE_KEEPING_METHODS
        and is_name(value.func.value, name)
    )


@PITFALL.static(ast.Call, names={"next"})
def check_one_batch(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`test_data = next(iter(test_loader))`, then `z = encoder(test_data[0])` in the same block
    (the test images reconstructed after each epoch of Wasserstein-AutoEncoders), in a project
    where nothing ever sets a model's mode: one evaluation batch run in training mode."""
    if not ctx.imports_torch or not _no_mode_ever_set(ctx):
        return
    if not (type(call.func) is ast.Name and call.func.id == "next" and len(call.args) == 1):
        return
    loader = _loader_name(call.args[0], ctx)
    if loader is None or not _evaluation_intent(None, loader, ctx):
        return
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    if not (
        type(statement) is ast.Assign and statement.value is call and len(statement.targets) == 1
    ):
        return
    target = statement.targets[0]
    if type(target) is not ast.Name:
        return
    position = ctx.statement_block()
    if position is None:
        return
    block, at = position
    function = ctx.enclosing_function()
    near = block[at + 1 : at + 1 + _BATCH_RUN_WITHIN]
    for index_near, later in enumerate(near):
        if _binds_name(later, target.id):
            return
        run = _run_of(later, target.id, ctx)
        if run is None:
            continue
        call_run, model = run
        if _only_its_shape_read(later, call_run, near[index_near + 1 :]):
            return  # `z = encoder(x)`, then `torch.randn_like(z)`: the mode changes nothing
        if _never_out_of_training(model, function, ctx) and not _dropout_on_purpose(later, ctx):  # type: ignore[arg-type]
            yield ctx.finding(PITFALL, call_run, "project-once", model=_short(ctx.text(model)))
        return


def _only_its_shape_read(statement: ast.stmt, run: ast.Call, after: list[ast.stmt]) -> bool:
    """`z_real = encoder(x)` whose result the next statements read only for its shape
    (`torch.randn_like(z_real)`, `z_real.size(0)`, `z_real.shape`): in a project that never
    sets a mode, no running statistic is ever read either (Wasserstein-AutoEncoders' WAE-GAN)."""
    if not (
        type(statement) is ast.Assign and statement.value is run and len(statement.targets) == 1
    ):
        return False
    target = statement.targets[0]
    if type(target) is not ast.Name:
        return False
    reads = 0
    for later in after:
        parents = {child: node for node in ast.walk(later) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(later):
            if type(node) is not ast.Name or node.id != target.id:
                continue
            if type(node.ctx) is not ast.Load:
                return reads > 0  # bound again: what came before is all that read it
            reads += 1
            parent = parents.get(node)
            if type(parent) is ast.Attribute and parent.attr in _SHAPE_ATTRIBUTES:
                continue
            if type(parent) is ast.Call and node in parent.args and _names_a_like(parent.func):
                continue
            return False
    return reads > 0


_SHAPE_ATTRIBUTES = frozenset({"shape", "size", "dim", "ndim", "dtype", "device"})


def _names_a_like(func: ast.AST) -> bool:
    """`torch.randn_like`, `zeros_like`...: a function that reads only the shape of its input."""
    name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
    return name.endswith("_like")


# How many statements after the batch is drawn its run is looked for (a bound, so that a
# file of many draws is not read once per draw).
_BATCH_RUN_WITHIN = 12


def _binds_name(statement: ast.stmt, name: str) -> bool:
    """`statement` binds `name` again (a new batch drawn): the one followed is gone."""
    return any(
        type(node) is ast.Name and node.id == name and type(node.ctx) is ast.Store
        for node in ast.walk(statement)
    )


def _run_of(statement: ast.stmt, name: str, ctx: Context) -> tuple[ast.Call, ast.AST] | None:
    """The first call in `statement` that runs a model on `name` (or a part of it: `batch[0]`,
    `Variable(batch[0]).cuda()`), and the model."""
    calls = sorted(
        (node for node in ast.walk(statement) if type(node) is ast.Call),
        key=lambda node: (node.lineno, node.col_offset),
    )
    for call in calls:
        model = _run_model(call.func, ctx)
        if model is None:
            continue
        if any(
            type(node) is ast.Name and node.id == name
            for arg in call.args
            for node in ast.walk(arg)
        ):
            return call, model
    return None


def _once_per_call(findings: Iterator[Finding], ctx: Context) -> Iterator[Finding]:
    """A loop over the loader and a loop in it over the steps of a batch find the same call."""
    reported = _reported_runs(ctx)
    for finding in findings:
        where = (finding.line, finding.column)
        if where not in reported:
            reported.add(where)
            yield finding


def _check_loop(
    node: ast.For, ctx: Context, function: ast.AST | None, loader: str, eval_only: bool
) -> Iterator[Finding]:
    switches = _switched_to_training(node, ctx)
    if switches:
        reported = _reported_switches(ctx)  # a loop in a loop finds the same switch again
        for switch in switches:
            if id(switch) not in reported:
                reported.add(id(switch))
                model = _short(ctx.text(switch.func.value))  # type: ignore[attr-defined]
                yield ctx.finding(PITFALL, switch, "switched", model=model)
        return
    # A function named to evaluate that clears gradients but computes none trains nothing
    # (pacrr's `test_one`, which calls `optimizer.zero_grad()` first).
    trains = _updates if eval_only else _trains
    if trains(ctx, function or node) and not (
        # A validation loop inside the training function itself (MultiBench's unimodal
        # `train`, deepspeech.pytorch's `main`): a loader named for evaluation, run without
        # gradients or by a loop that does not train.
        _evaluation_intent(None, loader, ctx)
        and (runs_without_gradients(ctx) or not _updates(ctx, node))
    ):
        return
    run = _model_run(node, ctx)
    if run is None:
        return
    call, model = run
    program = _program(ctx)
    family = program.family(function)
    trained_on = _trained_before(function, node, model, program, ctx)
    if family is None and trained_on is not None:
        family = [function]  # it sets the model's mode itself: its callers cannot undo it
    if family is None:
        # No caller in this file: whoever calls it may already have set the modes, unless
        # nothing in the project ever does (then every model runs in training mode).
        if _never_out_of_training(model, function, ctx) and not _dropout_on_purpose(node, ctx):
            yield ctx.finding(PITFALL, call, "project", model=_short(ctx.text(model)))
        return
    if _built_by(function, model, program, ctx):
        family = [function]  # no other code of the file has that model to switch
    name = last_name(model) or ""
    models = _assigned_models(family, name, program, ctx)
    if program.set_their_own_mode(models):
        return  # `forward` calls `self.eval()` itself (FAST-VQA's evaluators)
    flags = [program.flags(scope) for scope in family]
    in_training_mode = (
        any(f.switches_to_train for f in flags)
        or program.built_here(models)
        or _never_out_of_training(model, function, ctx, models)
        or _trained_by_every_caller(function, model, ctx)
    )
    eval_missing = (
        in_training_mode
        # (switched to training mode before the loop and not back: later switches come late)
        and (
            trained_on is not None
            or not any(f.switches_to_eval for f in flags)
            # a script's or notebook's own loop: what its later code does comes later
            or function is None
            and program.built_here(models)
            and _no_eval_switch_before(node, ctx, program)
        )
        and not program.mode_free(models)
    )
    no_grad_missing = (
        not any(f.disables_grad for f in flags)
        and not program.called_without_gradients(function)
        and not program.run_without_gradients(models)
        and not program.takes_gradients(models)
        and not _attacks_in(node, ctx)
    )
    if not (eval_missing or no_grad_missing) or (eval_only and not eval_missing):
        return
    variant = "both" if eval_missing and no_grad_missing else "" if eval_missing else "no-grad"
    if variant == "no-grad" and _asks_volatile(node, ctx):
        variant = "volatile"  # what the author meant to turn recording off: say why it does not
    if variant == "" and trained_on is not None:
        variant = "trained-before"  # (the function may call `.eval()` later: say where it stands)
    yield ctx.finding(PITFALL, call, variant, model=_short(ctx.text(model)), line=trained_on)


def _no_eval_switch_before(loop: ast.AST, ctx: Context, program: _Program) -> bool:
    """No code of the module's top level before the loop's end switches a model to eval mode
    (`net.eval()`, `net.train(False)`), nor calls a function of the file that does: a
    notebook's accuracy check before training (`for images, labels in test_loader:` in one
    cell, `net.eval()` cells later, after training)."""
    found = index(ctx)
    end = loop.end_lineno or loop.lineno  # type: ignore[attr-defined]
    for call in found.calls_named(ctx.tree, ["eval", "train"], local=True):
        if call.lineno > end:
            break
        if isinstance(call.func, ast.Attribute) and (
            call.func.attr == "eval"
            and not call.args
            or call.func.attr == "train"
            and not _is_true_or_absent(call)
        ):
            return False
    for call in found.calls_named(ctx.tree, program.functions.keys(), local=True):
        if call.lineno > end:
            break
        name = call.func.id if type(call.func) is ast.Name else None
        if name is not None and any(
            program.flags(function).switches_to_eval for function in program.functions[name]
        ):
            return False
    return True


# Words of what an adversarial or attribution step is called (`adversary.perturb(xs, ys)`,
# `pgd_attack(model, x, y)`, `saliency.attribute(x)`): it needs the gradients of the model.
_ATTACK_WORDS = ("attack", "adversar", "perturb", "pgd", "fgsm", "saliency", "gradcam")


def _attacks_in(loop: ast.For, ctx: Context) -> bool:
    """A call in the loop is named as an attack or an attribution: under `torch.no_grad()` it
    would fail, so recording a graph is no waste there (advertorch's robustness evaluation)."""
    for call in _body_calls(ctx, loop):
        name = (dotted_name(call.func) or "").lower()
        if any(word in name for word in _ATTACK_WORDS):
            return True
    return False


def _asks_volatile(loop: ast.For, ctx: Context) -> bool:
    """A call in the loop passes `volatile=True` (`Variable(x, volatile=True)`, a `to_var(x,
    volatile=True)` helper): PyTorch 0.3's way to record no graph, ignored since 0.4."""
    return any(
        k.arg == "volatile" and type(k.value) is ast.Constant and k.value.value is True
        for call in _body_calls(ctx, loop)
        for k in call.keywords
    )


def _trained_before(
    function: ast.AST | None, loop: ast.AST, model: ast.AST, program: _Program, ctx: Context
) -> int | None:
    """The line where `function` switches the very model the loop runs to training mode before the loop
    (`model_train.train()`, then the training loop, then the validation loop: bubbliiiing's
    `fit_one_epoch`), and sets no eval mode between that switch and the loop (one after it,
    `self.eval()` once every epoch has run, comes too late): what its callers do cannot change
    that. None when it does not, or when a function it calls may set a mode."""
    if function is None:
        return None
    if program.flags(function).switches_to_eval and not program.facts[function].switches_to_eval:
        return None  # set by a function it calls, somewhere
    text = ctx.text(model)
    calls = index_of(ctx, function).calls_named(function, ("train", "eval"), local=True)
    switched = [
        call.lineno
        for call in calls
        if isinstance(call.func, ast.Attribute)
        and call.func.attr == "train"
        and not call.args
        and not call.keywords
        and ctx.text(call.func.value) == text
        and call.lineno < loop.lineno  # type: ignore[attr-defined]
    ]
    if not switched:
        return None
    last = max(switched)
    if not program.facts[function].switches_to_eval:
        return last
    # Any switch to eval mode (of any model, `eval_mode` too) between the last switch to
    # training mode and the loop's end.
    evaluated = [
        call.lineno
        for call in calls
        if isinstance(call.func, ast.Attribute)
        and (call.func.attr == "eval" or not _is_true_or_absent(call))
    ]
    end = loop.end_lineno or loop.lineno  # type: ignore[attr-defined]
    if "eval_mode" in _source_of(ctx, function) or any(last <= line <= end for line in evaluated):
        return None  # (in the loop's own body too: `feature_embed.eval()` before each batch)
    return last


def _evaluation_function(function: ast.AST | None, ctx: Context) -> bool:
    """A function named to evaluate (`evaluate_test_set`, `run_validation_epoch`), no pytest
    test, and no method of a model (`Decoder.inference` runs its layers in the mode its user
    set)."""
    if function is None or not _words(function.name.lower()) & EVAL_WORDS:  # type: ignore[attr-defined]
        return False
    program = _program(ctx)
    owner = program.owner.get(function)
    if owner is not None and ctx.is_module_class(owner):
        return False
    return program.names_an_evaluation(function)


def _holds_a_loop(loop: ast.For, ctx: Context) -> bool:
    """A loop in the loop's body that runs the model (the innermost such loop runs the
    batches; one that only reads a batch's answers after the model ran leaves it to the
    loop around it)."""
    inner = index_of(ctx, loop).in_block(loop.body, ast.For, ast.AsyncFor, ast.While, local=True)
    return any(_runs_a_model(ctx, other) for other in inner)


@per_file
def _runs_a_model(ctx: Context, loop: ast.AST) -> bool:
    return _model_run(loop, ctx) is not None  # type: ignore[arg-type]


def _mode_dependent_factory(qualname: str) -> bool:
    """A torchvision model, or one of a CNN library built like them (BatchNorm in each)."""
    return qualname.startswith("torchvision.models.") or qualname in CNN_FACTORIES


def _built_by(function: ast.AST | None, model: ast.AST, program: _Program, ctx: Context) -> bool:
    """The model run is a name every binding of which in `function` builds a model with a
    layer whose behaviour depends on the mode (`model = make_model(arch)`, then loaded): a
    model of its own, which the other functions of the file never see."""
    return (
        function is not None
        and isinstance(model, ast.Name)
        and program.mode_dependent_here(model.id, function, ctx)
    )


@PITFALL.static(ast.Module)
def check_helpers(tree: ast.Module, ctx: Context) -> Iterator[Finding]:
    """A call of an evaluation function of another module of the project that keeps the mode of
    the model it is given (`evaluate_model(model, loader)` in `utils.py`, whose loop never sets
    one), where the code around the call puts the model in training mode and never in eval
    mode: reported at the first such call of each function in each scope."""
    evaluators = ctx.project.mode_keeping_evaluators
    if not evaluators:
        return
    own = top_level_functions(ctx)
    names = [name for name in evaluators if ctx.may_name(name) and name not in own]
    if not names:
        return
    found = index(ctx)
    program = _program(ctx)
    # A model of another module's class counts when some module of the project has such layers
    # (GACNet's `model = GACNet(...)` given to `utils.test_seg`).
    other_modules = ctx.project.has("mode-dependent layers")
    for name in sorted(names):
        reported: set[ast.AST | None] = set()
        for at in found.calls.get(name, ()):
            call = found.nodes[at]
            if type(call.func) is not ast.Name or not call.args:
                continue
            model = call.args[0]
            if type(model) is not ast.Name:
                continue
            scope = program.function_at(at)
            if scope is None or scope in reported or not program.trains_only(scope):
                continue
            if not program.mode_dependent_here(model.id, scope, ctx, other_modules):
                continue  # its class has no Dropout or BatchNorm, or cannot be seen
            reported.add(scope)
            yield ctx.finding(PITFALL, call, "helper", function=name, model=model.id)


@PITFALL.static(ast.For, ast.AsyncFor, ast.While)
def check_training_loop(loop: ast.AST, ctx: Context) -> Iterator[Finding]:
    """An evaluation function of the file called in the loop that trains the model, which runs
    it once (no loop over batches) and sets no mode (see `evaluations_in_training_loop`):
    reported at the evaluator's run of the model, once per evaluator."""
    caller = ctx.enclosing_function()
    if caller is None or not ctx.imports_torch or not _evaluates_and_trains(ctx):
        return
    program = _program(ctx)
    reported = _reported_evaluators(ctx)
    family = program.family(caller) or [caller]
    for found in evaluations_in_training_loop(loop, caller, program, index(ctx)):
        if found.run in reported or not _trained_model_mode_dependent(
            found.model, caller, family, program, ctx
        ):
            continue
        reported.add(found.run)
        yield ctx.finding(
            PITFALL,
            found.run,
            "trained-loop",
            model=found.model,
            function=found.function,
            line=found.call.lineno,
        )


# Words of a name that say it holds evaluation data (`test_x`, `x_val`, `valid_images`).
EVALUATION_DATA_WORDS = frozenset({"test", "val", "valid", "validation", "eval"})


@PITFALL.static(ast.For, ast.AsyncFor, ast.While)
def check_evaluation_data(loop: ast.AST, ctx: Context) -> Iterator[Finding]:
    """A model run on data named for evaluation (`test_out = net(test_x)`) in the loop that
    trains it, in a file that never switches a mode: the tutorials' `if step % 50 == 0:`
    accuracy check, with Dropout on and BatchNorm fed the test data. Only a model whose layers
    depend on the mode, and only when the loop also runs it on other data (the training
    forward), on data made before the loop (the test tensors loaded at the top)."""
    runs = _evaluation_data_runs(ctx).get(loop)
    if not runs or not _updates(ctx, loop):
        return
    scope = ctx.enclosing_function() or ctx.tree
    program = _program(ctx)
    calls = _body_calls(ctx, loop)
    for run, data in runs:
        model = run.func.id  # type: ignore[attr-defined]
        if _bound_in(ctx, scope, data, loop):
            continue  # a batch drawn in the loop (`test_data = next(test_iter)`): see check_one_batch
        trained_here = any(
            type(call.func) is ast.Name
            and call.func.id == model
            and call is not run
            and _evaluation_data(call) is None
            for call in calls
        )
        if trained_here and program.mode_dependent_here(model, scope, ctx, project_classes=True):
            yield ctx.finding(PITFALL, run, "evaluation-data", model=model, data=data)


def _bound_in(ctx: Context, scope: ast.AST, name: str, loop: ast.AST) -> bool:
    """`name` has a binding in `scope` inside `loop`, or none the scope can follow (a
    parameter, a global)."""
    found = bindings(ctx, scope, name)
    if not found:
        return True
    first, last = loop.lineno, loop.end_lineno or loop.lineno  # type: ignore[attr-defined]
    return any(first <= getattr(b.node, "lineno", first) <= last for b in found)


@per_file
def _evaluation_data_runs(ctx: Context) -> dict[ast.AST, list[tuple[ast.Call, str]]]:
    """The calls of a bare name on data named for evaluation, by their innermost loop; none in a
    file that switches a mode anywhere (read once per file)."""
    source = ctx.source
    if not ctx.imports_torch or any(word in source for word in SETS_A_MODE_WORDS):
        return {}
    found = index(ctx)
    runs: dict[ast.AST, list[tuple[ast.Call, str]]] = {}
    for call in found.everywhere(ast.Call):
        data = _evaluation_data(call) if type(call.func) is ast.Name else None  # type: ignore[attr-defined]
        if data is None:
            continue
        for node, _ in lineage(call, found.parents):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                runs.setdefault(node, []).append((call, data))  # type: ignore[arg-type]
                break
    return runs


def _evaluation_data(call: ast.Call) -> str | None:
    """The name of the data named for evaluation that `call` gets first, through moves and
    wrappers (`net(test_x.to(device))`, `net(Variable(x_val))`)."""
    if not call.args:
        return None
    value = call.args[0]
    while type(value) is ast.Call:
        func = value.func
        if type(func) is ast.Attribute and func.attr in ("to", "cuda", "float", "double", "cpu"):
            value = func.value
        elif type(func) is ast.Name and func.id == "Variable" and value.args:
            value = value.args[0]
        else:
            return None
    if type(value) is not ast.Name:
        return None
    return value.id if _words(value.id.lower()) & EVALUATION_DATA_WORDS else None


@per_file
def _evaluates_and_trains(ctx: Context) -> bool:
    """The file has a function named to evaluate and some text that trains (`.backward(`,
    `.step(`): read once per file, so that the loops of a model's file (most of them) ask
    nothing more."""
    source = ctx.source
    if ".backward(" not in source and ".step(" not in source:
        return False
    return any(
        isinstance(node, FUNCTIONS) and _words(node.name.lower()) & EVAL_WORDS
        for top in ctx.tree.body
        for node in (top.body if type(top) is ast.ClassDef else (top,))
    )


@per_file
def _reported_evaluators(ctx: Context) -> set[ast.AST]:
    return set()


def _trained_model_mode_dependent(
    name: str, caller: ast.AST, family: list[ast.AST], program: _Program, ctx: Context
) -> bool:
    """`name` holds a model with a mode-dependent layer: every binding of it in the training
    function builds one; for a parameter, every value the function's callers in the file assign
    to that name (`unet = UNet(...)` in `main`, a class of the project with BatchNorm); for
    `self.x`, every value the class assigns to it."""
    if name.startswith("self."):
        owner = program.owner.get(caller)
        return owner is not None and program.attribute_mode_dependent(owner, name[5:])
    if not is_parameter(caller, name):
        return program.mode_dependent_here(name, caller, ctx, project_classes=True)
    values = _assigned_models(family, name, program, ctx)
    return bool(values) and all(program.builds_mode_layers(value, name) for value in values)


def _assigned_models(family: list[ast.AST], name: str, program: _Program, ctx: Context) -> list:
    """The models the family's code assigns to `name`: `model = model.cuda() if cuda else
    model` adds nothing to what the name holds, nor does `model = train_model(model, ...)`,
    which hands it back."""
    return [
        value
        for value in program.assigned(family, name)
        if not keeps_itself(value, name) and not hands_back(ctx, value, name)
    ]


@PITFALL.static(ast.Attribute, names={"eval"})
def check_uncalled(method: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`model.eval` as a statement of its own: the method named, never called."""
    if not ctx.imports_torch or not uncalled_statement(method, ctx):
        return
    receiver = method.value
    if ctx.kind_of(receiver) is not Kind.MODULE and not names_a_model(last_name(receiver) or ""):
        return  # `expr.eval` of another library: a no-op too, but not a model's mode
    fix, shown = call_it(PITFALL, method, ctx)
    yield ctx.finding(PITFALL, method, "uncalled", fix=fix, method=shown)


@PITFALL.static(ast.Call, names={"train"})
def check_after_train(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`model.train()`, then an evaluation function of the file that runs the model in the mode
    it is given (see _after_train)."""
    if (
        not ctx.imports_torch
        or type(call.func) is not ast.Attribute
        or not _is_true_or_absent(call)
    ):
        return
    if not _may_call_an_evaluation(ctx):
        return  # no function named to evaluate can be called here
    program = _program(ctx)
    for found in evaluations_after_train(call, ctx, program):
        if program.model_mode_dependent(call.func.value, ctx):
            yield ctx.finding(
                PITFALL,
                found.call,
                "after-train",
                function=found.function,
                model=found.model,
                line=call.lineno,
            )


# What the names of evaluation functions contain.
_EVAL_STEMS = ("eval", "val", "test", "infer", "predict")


@per_file
def _may_call_an_evaluation(ctx: Context) -> bool:
    """Some name of the file says it evaluates: read once per file, not once per `.train()`."""
    return any(ctx.may_name(word) for word in _EVAL_STEMS)


@PITFALL.static(ast.Call, names={"load_state_dict"})
def check_loaded(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """A model loaded from a checkpoint (`net.load_state_dict(torch.load(path))` on a model
    built in the file) and then called in the same function, in a file that never switches any
    model to eval mode and never trains: an inference script that forgot `.eval()`."""
    if not ctx.imports_torch or not _never_switches_modes(ctx):
        return
    function = ctx.enclosing_function()
    if function is not None and function.name.startswith("test") and file_of_tests(ctx):
        return  # a pytest test of the save-and-load round trip, run as the original was
    model = _loaded_model(call, ctx)
    if model is None:
        return
    scope = function or ctx.tree
    found = index_of(ctx, scope)
    if _handed_over(ctx, scope, model):
        return  # a helper it is passed to may switch it to eval mode
    runs = [
        node
        for node in found.calls_named(scope, [model], local=True)
        if type(node.func) is ast.Name and node.func.id == model and node.lineno > call.lineno
    ]
    if (
        not runs
        and scope is ctx.tree
        and _program(ctx).mode_dependent_here(model, scope, ctx, project_classes=True)
    ):
        # Pytorch-NMT's eval.py: `def evaluate(sentence)`. Only for a model whose own class has
        # such a layer, by the project's facts: not for any class of a project that has some.
        runs = _global_runs(ctx, model)
    if runs:
        yield ctx.finding(PITFALL, runs[0], "loaded", model=model, line=call.lineno)


def _global_runs(ctx: Context, model: str) -> list[ast.Call]:
    """The calls of the module-level `model` in the file's top-level functions that do not bind
    that name themselves, in the order of the file."""
    runs = []
    for function in top_level_functions(ctx).values():
        if bindings(ctx, function, model):
            continue  # a local `model` (or a parameter) of its own
        runs += [
            node
            for node in index_of(ctx, function).calls_named(function, [model], local=True)
            if type(node.func) is ast.Name and node.func.id == model
        ]
    return sorted(runs, key=lambda node: (node.lineno, node.col_offset))


@per_file
def _never_switches_modes(ctx: Context) -> bool:
    """No text of the file switches a model to eval mode, and none trains one."""
    source = ctx.source
    return not any(word in source for word in MODE_WORDS)


def _loaded_model(call: ast.Call, ctx: Context) -> str | None:
    """The name of the model `call` loads from a checkpoint: `net` of
    `net.load_state_dict(torch.load(path))` (or of a name bound to what `torch.load` returned,
    or a part of it: `sd["netG"]`) when `net` is a model made in the file whose layers depend
    on the mode. (A whole pickled model, `net = torch.load(path)`, is not followed: its class
    cannot be told.)"""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "load_state_dict" or not call.args:
        return None
    receiver = func.value
    if type(receiver) is not ast.Name or ctx.kind_of(receiver) is not Kind.MODULE:
        return None
    if not _from_a_checkpoint(call.args[0], ctx):
        return None  # weights copied from another model (a test comparing two of them)
    return receiver.id if _mode_dependent(ctx, receiver.id) else None


def _from_a_checkpoint(value: ast.AST, ctx: Context) -> bool:
    """`torch.load(path)`, a part of it (`ckpt["state_dict"]`, `ckpt.get("model")`), or a
    name every binding of which in the function is one."""
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and ctx.method_name(value) == "get":
            value = value.func.value  # type: ignore[attr-defined]
        else:
            break
    if isinstance(value, ast.Call):
        return ctx.qualname(value.func) == "torch.load"
    if type(value) is not ast.Name:
        return False
    found = bindings(ctx, ctx.enclosing_function() or ctx.tree, value.id)
    return bool(found) and all(
        binding.value is not None
        and not binding.augmented
        and isinstance(binding.value, ast.Call)
        and ctx.qualname(binding.value.func) == "torch.load"
        for binding in found
    )


def _mode_dependent(ctx: Context, name: str) -> bool:
    """Every model `name` is made as has a layer whose behaviour depends on the mode: a class of
    the file with such a layer, a torchvision model, a class of another module of a project
    that has such layers somewhere, or one the project's facts say has one (deephash's
    `AlexNetPlusLatent`, made of a module-level AlexNet's parts)."""
    scope = ctx.enclosing_function() or ctx.tree
    others = ctx.project.has("mode-dependent layers")
    return _program(ctx).mode_dependent_here(
        name, scope, ctx, other_modules=others, project_classes=True
    )


@per_file
def _handed_over(ctx: Context, scope: ast.AST, name: str) -> bool:
    """`name` is passed to some call of the scope (`evaluate(net, loader)`, `wrap(net)`)."""
    found = index_of(ctx, scope)
    parents = found.parents
    for node in found.names_in(scope, name):
        parent = parents.get(node)
        if isinstance(parent, ast.keyword):
            return True
        if isinstance(parent, ast.Call) and node in parent.args:
            func = parent.func
            if not (type(func) is ast.Name and func.id in _LOOKING_ONLY):
                return True
    return False


# Built-ins that only look at a model (`print(net)`): they switch no mode.
_LOOKING_ONLY = frozenset({"print", "len", "str", "repr", "type", "id", "isinstance", "hasattr"})


# Names of a data loader besides `*loader*`: `dl`, `val_dl`, and the batch generators of
# bubbliiiing's many detection and classification repositories (`gen`, `gen_val`).
_GENERATOR_NAMES = frozenset({"dl", "gen", "gen_val", "gen_test", "val_gen", "test_gen"})
# Such names written as one word (bubbliiiing's YOLO ports: `for batch in genval`).
_JOINED_GENERATOR_NAMES = {"genval": "gen_val", "gentest": "gen_test"}
_GENERATOR_ENDS = ("_dl",)


def _loader_name(expr: ast.AST, ctx: Context) -> str | None:
    """The lower-case name of the data loader a loop iterates, or None when it is no loader."""
    while isinstance(expr, ast.Call) and expr.args and last_name(expr.func) in ITERABLE_WRAPPERS:
        expr = expr.args[0]
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        # `dataloaders["val"]`: the loader a dict of them holds under that key
        key = expr.slice.value
        holder = (last_name(expr.value) or "").lower()
        if isinstance(key, str) and "loader" in holder:
            return f"{key.lower()}_{holder}"
        return None
    name = (last_name(expr) or "").lower()
    if "loader" in name or name in _GENERATOR_NAMES or name.endswith(_GENERATOR_ENDS):
        return name
    if name in _JOINED_GENERATOR_NAMES:
        return _JOINED_GENERATOR_NAMES[name]
    if ctx.kind_of(expr) is Kind.LOADER:
        return name
    iterated = _iterator_of(expr, ctx)
    return None if iterated is None else _loader_name(iterated, ctx)


def _evaluation_data_counted(expr: ast.AST) -> str | None:
    """The lower-case name of the evaluation data whose items `range(len(X_val))`,
    `range(0, len(test_x), batch)` or `range(validation_iterations)` counts; None otherwise."""
    if not (
        type(expr) is ast.Call
        and type(expr.func) is ast.Name
        and expr.func.id == "range"
        and 1 <= len(expr.args) <= 3
    ):
        return None
    bound = expr.args[0] if len(expr.args) == 1 else expr.args[1]
    counted = type(bound) is ast.Call and type(bound.func) is ast.Name and bound.func.id == "len"
    if counted:
        bound = bound.args[0] if len(bound.args) == 1 else bound  # type: ignore[attr-defined]
    name = (last_name(bound) or "").lower()
    words = _words(name)
    if not words & EVAL_WORDS:
        return None
    # `range(validation_iterations)`: a count of evaluation batches, not any number named so
    # (`range(self.n_inference_subnet)`, the sub-networks of a model's loss)
    return name if counted or words & _COUNT_WORDS else None


_COUNT_WORDS = frozenset({"iterations", "iters", "batches", "steps", "samples", "size", "len"})


def _iterator_of(expr: ast.AST, ctx: Context) -> ast.AST | None:
    """`X` of a name bound once, to `iter(X)`, in its scope (`val_iter = iter(val_dataloader)`,
    then `for batch in tqdm(val_iter)`)."""
    if type(expr) is not ast.Name or not may_be_called(ctx, "iter"):
        return None  # most files: no `iter(...)` at all, and no index to build for the question
    if expr.id not in names_assigned(ctx, _calls_iter):
        return None  # read from the statements alone: again no index built
    found = bindings(ctx, scope_of(expr.id, ctx), expr.id)
    if not found or len(found) != 1:
        return None
    value = found[0].value
    if (
        isinstance(value, ast.Call)
        and type(value.func) is ast.Name
        and value.func.id == "iter"
        and len(value.args) == 1
        and not value.keywords
    ):
        return value.args[0]
    return None


def _calls_iter(value: ast.expr) -> bool:
    """`iter(X)`: what `val_iter = iter(loader)` binds (the key of `names_assigned`'s memo)."""
    return type(value) is ast.Call and type(value.func) is ast.Name and value.func.id == "iter"


def _evaluation_intent(function: ast.AST | None, loader: str, ctx: Context) -> bool:
    stem = loader.replace("dataloader", "").replace("loader", "")
    if _words(stem) & EVAL_WORDS or stem in EVAL_WORDS:
        return True
    if function is None or (function.name.startswith("test_") and file_of_tests(ctx)):
        return False  # a pytest test, not an evaluation
    return bool(_words(function.name.lower()) & EVAL_WORDS)


def _switched_to_training(loop: ast.For, ctx: Context) -> list[ast.Call]:
    """The `model.train()` calls in the body of an evaluation loop run without gradients, of a
    model that runs in that body (MultiBench's validation loop: `model.eval()` before it,
    `model.train()` in it; after the model's call, it still runs the next batches in training
    mode). Empty when the text around says it means dropout on (Monte Carlo dropout at
    test time)."""
    if not runs_without_gradients(ctx):
        return []
    calls = _body_calls(ctx, loop)
    switches = [
        call
        for call in calls
        if isinstance(call.func, ast.Attribute)
        and call.func.attr == "train"
        and _is_true_or_absent(call)
        and _is_model(call.func.value, ctx)
    ]
    if not switches:
        return []
    run = {ast.dump(call.func) for call in calls}  # what the body calls, read once
    found = [switch for switch in switches if ast.dump(switch.func.value) in run]  # type: ignore[attr-defined]
    if not found:
        return []
    return [] if _dropout_on_purpose(loop, ctx) else found


def _dropout_on_purpose(loop: ast.For, ctx: Context) -> bool:
    """The loop or the lines just above it speak of dropout at test time."""
    around = ctx.lines[max(0, loop.lineno - 3) : loop.end_lineno or loop.lineno]
    return any(word in " ".join(around).lower() for word in _DROPOUT_ON_PURPOSE)


def _never_out_of_training(
    model: ast.AST, function: ast.AST | None, ctx: Context, built: list[ast.AST] | None = None
) -> bool:
    """Nothing in the project may switch a model's mode, so `model` runs in training mode,
    and it certainly has a layer whose behaviour depends on the mode: built from a class with
    one (of the file, of the project, a torchvision model), or, handed in as a parameter (or
    read from a dict), in a project at least half of whose model classes have one. Not a GAN's
    generator or discriminator: sampling in training mode can be the method (pix2pix keeps its
    dropout as noise), and a critic's normalisation is often mode-free."""
    if not _no_mode_ever_set(ctx) or _GAN_PARTS.intersection(name_words(last_name(model) or "")):
        return False
    if _handed_a_gan_part(model, function, ctx):
        return False
    program = _program(ctx)
    made = [unwrap_self_methods(value) for value in built or ()]
    if made and all(_builds_a_known_class(value, program, ctx) for value in made):
        # What the code around the loop builds it from (`model = Plain()`) decides.
        name = last_name(model) or ""
        return all(program.builds_mode_layers(value, name) for value in made)
    if any(_builds_an_unknown_class(value, program, ctx) for value in made):
        return False  # `model = Missing()`: a class of another library, its layers not known
    if isinstance(model, ast.Attribute):
        return program.model_mode_dependent(model, ctx, project_classes=True)
    if not isinstance(model, ast.Name):
        return False
    scope = function or ctx.tree
    found = bindings(ctx, scope, model.id)
    if (
        found
        and all(isinstance(b.value, ast.Call) and not b.augmented for b in found)
        and not all(moves_itself(unwrap_self_methods(b.value), model.id) for b in found)
    ):
        return program.mode_dependent_here(model.id, scope, ctx, project_classes=True)
    # A parameter, a value of a dict or a list (`args["model"]`), or only moved here
    # (`net = net.float()`, the model from a star import): made out of sight.
    return _models_mostly_mode_dependent(ctx)


def _handed_a_gan_part(model: ast.AST, function: ast.AST | None, ctx: Context) -> bool:
    """`model` is a parameter of `function` that every call of it in the file hands a part of
    a GAN, by some word of its dotted name (CoGAN's `compute_test_score(trainer.dis.classify_b,
    loader)`): what holds for a GAN's parts holds for them."""
    if type(model) is not ast.Name or not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return False
    passed = passed_by_every_call(ctx, function, model.id)
    if not passed:
        return False
    for value in passed:
        named = dotted_name(value)
        if named is None or not any(
            _GAN_PARTS.intersection(name_words(part)) for part in named.split(".")
        ):
            return False
    return True


def _trained_by_every_caller(function: ast.AST | None, model: ast.AST, ctx: Context) -> bool:
    """`model` is a parameter of `function` that every call of it in the file hands a model the
    caller has trained in a loop before the call (`output = model(x)`, `loss.backward()`,
    `optimizer.step()`): a module trains in training mode, and stays in it (pytorch-ner's
    `lstm_train_eval`, which trains, then calls `eval_of_bilstm(model, ...)`). Only in a
    project at least half of whose model classes have a mode-dependent layer."""
    if not (isinstance(function, ast.FunctionDef) and isinstance(model, ast.Name)):
        return False
    if not is_parameter(function, model.id) or not _models_mostly_mode_dependent(ctx):
        return False
    passed = passed_values(ctx, function, model.id)
    if not passed:
        return False
    found = index(ctx)
    for call, value in passed:
        caller = found.runs_in(call)
        if type(value) is not ast.Name or caller is None or caller is ctx.tree:
            return False
        if not any(
            loop.lineno < call.lineno and _trains_model_in(ctx, loop, value.id)
            for loop in found.local(caller, ast.For)
        ):
            return False
    return True


def _trains_model_in(ctx: Context, loop: ast.For, name: str) -> bool:
    """The loop's body runs the model `name` and calls a backward and an optimizer step."""
    calls = _body_calls(ctx, loop)
    words = {last_name(call.func) for call in calls}
    return {"backward", "step"} <= words and any(
        type(call.func) is ast.Name and call.func.id == name for call in calls
    )


def _module_looked_up(func: ast.AST) -> ast.AST | None:
    """`models` of `models.__dict__[arch]` or of `getattr(models, arch)`."""
    if type(func) is ast.Subscript:
        held = func.value
        if type(held) is ast.Attribute and held.attr == "__dict__":
            return held.value
    elif type(func) is ast.Call and type(func.func) is ast.Name and func.func.id == "getattr":
        if len(func.args) == 2 and not func.keywords:
            return func.args[0]
    return None


def _models_mostly_mode_dependent(ctx: Context) -> bool:
    """At least half of the project's model classes have a layer whose behaviour depends on
    the mode (Dropout, BatchNorm)."""
    facts = ctx.project
    return 2 * len(facts.mode_layer_classes & facts.module_classes) >= len(facts.module_classes) > 0


def _builds_a_known_class(value: ast.AST, program: _Program, ctx: Context) -> bool:
    """`Net()`, `nn.Sequential(...)`, `torchvision.models.resnet18()`: a model whose layers can
    be told (a class of the file or of the project, torch's or torchvision's), not one a function
    hands back (`train(...)`, `torch.load(path)`)."""
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func) or ""
    qualname = ctx.qualname(value.func) or ""
    return (
        name in program.classes
        or ctx.project.is_module_class(name)
        or qualname.startswith(("torch.nn.", "torchvision.models."))
    )


def _builds_an_unknown_class(value: ast.AST, program: _Program, ctx: Context) -> bool:
    """A call of a class (by its capital) whose layers cannot be told."""
    name = last_name(value.func) if isinstance(value, ast.Call) else None
    return bool(name) and name[0].isupper() and not _builds_a_known_class(value, program, ctx)  # type: ignore[index]


# Words of a model's name that say it is a part of a GAN (`G_AB`, `netD`, `aD`, `critic`).
_GAN_PARTS = frozenset(
    {"g", "d", "gen", "generator", "dis", "disc", "discriminator", "critic", "netg", "netd"}
)


@per_file
def _no_mode_ever_set(ctx: Context) -> bool:
    """The project trains a model and nothing in it (this file's text as it stands included)
    may switch a model's mode: every model it evaluates runs in training mode."""
    return (
        ctx.project.known
        and ctx.project.has("trains")
        and not ctx.project.has("sets a mode")
        and not holds_marker(ctx.source.encode(), "sets a mode")
    )


# Words that say a model is put in training mode at test time on purpose.
_DROPOUT_ON_PURPOSE = ("dropout", "mc ", "mc_", "monte", "uncertain")


def _first_line(scope: ast.AST) -> tuple[int, int]:
    return getattr(scope, "lineno", 0), getattr(scope, "col_offset", 0)


@per_file
def _reported_switches(ctx: Context) -> set[int]:
    return set()


@per_file
def _reported_runs(ctx: Context) -> set[tuple[int, int]]:
    return set()


def _words(name: str) -> set[str]:
    return {word for word in name.split("_") if word}


@per_file
def _trains(ctx: Context, scope: ast.AST) -> bool:
    return any(last_name(node.func) in TRAINING_CALLS for node in _body_calls(ctx, scope))


def _updates(ctx: Context, scope: ast.AST) -> bool:
    """A backward or an optimizer step in `scope` (a `zero_grad()` alone updates nothing:
    bubbliiiing's validation loops clear the gradients they never compute)."""
    return any(last_name(node.func) in ("backward", "step") for node in _body_calls(ctx, scope))


def _model_run(loop: ast.For, ctx: Context) -> tuple[ast.Call, ast.AST] | None:
    """The first call of a model in the loop body and the model: `model(x)`, `self.net(x)`;
    else the first call of a function of the file given a model that it calls (`pred, loss =
    apply(model, criterion, batch)`, where `apply` runs `model(batch)`)."""
    calls = _body_calls(ctx, loop)
    direct = [(node, _run_model(node.func, ctx)) for node in calls]
    runs = [(node, model) for node, model in direct if model is not None]
    if runs:
        runs.sort(key=lambda run: (run[0].lineno, run[0].col_offset))
        # `softmax(model(inputs))`: the model, not the activation around it
        return next((run for run in runs if not parameter_free_module(run[1], ctx)), runs[0])
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        helper, skipped = _helper_called(call, ctx)
        if helper is None or (
            _computes_gradients(ctx, helper)
            and not _gradients_switched_off(call, helper, skipped, ctx)
        ):
            continue  # an attack's step (`_pgd_whitebox(model, X, y)`) needs its gradients
        for position, argument in enumerate(call.args):
            if type(argument) is ast.Starred:
                break  # where the rest of the arguments land is not known
            if type(argument) is ast.Name and _is_model(argument, ctx):
                if _calls_its_parameter(ctx, helper, position + skipped):
                    return call, argument
    return None


def _helper_called(call: ast.Call, ctx: Context) -> tuple[ast.AST | None, int]:
    """The function of the file a call runs, and how many of its first parameters the call
    does not fill: a top-level function by its name, or a plain method of the class around
    the call by `self.name(...)` (deep-supervised-hashing's `self.run_step(model, ...)`), whose
    `self` comes first."""
    if type(call.func) is ast.Name:
        return top_level_functions(ctx).get(call.func.id), 0
    function = ctx.enclosing_function()
    cls = _program(ctx).owner.get(function) if function is not None else None
    if cls is None or not (type(call.func) is ast.Attribute and is_self_attribute(call.func)):
        return None, 0
    method = methods_defined_once(ctx, cls).get(call.func.attr)
    return (method, 1) if method is not None and method.args.args else (None, 0)


def _gradients_switched_off(call: ast.Call, helper: ast.AST, skipped: int, ctx: Context) -> bool:
    """Every gradient word of `helper` is under `if flag:` (or in `set_grad_enabled(flag)`)
    for a parameter `flag` that the call passes as False: `run_step(model, x, train=False)`
    with `if train: loss.backward(); optimizer.step()`."""
    args = helper.args  # type: ignore[attr-defined]
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)][skipped:]
    off = {
        positional[i]
        for i, value in enumerate(call.args[: len(positional)])
        if type(value) is ast.Constant and value.value is False
    } | {k.arg for k in call.keywords if type(k.value) is ast.Constant and k.value.value is False}
    return bool(off) and _gradient_free_without(ctx, helper, frozenset(off))  # type: ignore[arg-type]


@per_file
def _gradient_free_without(ctx: Context, helper: ast.AST, off: frozenset[str]) -> bool:
    """`helper` computes no gradient once the flags `off` are False (read once per helper and
    set of flags, however many calls pass them)."""
    gated: list[ast.AST] = []
    for node in ast.walk(helper):
        if type(node) is ast.If and type(node.test) is ast.Name and node.test.id in off:
            gated.extend(node.body)
        elif type(node) is ast.Call and getattr(node.func, "attr", None) == "set_grad_enabled":
            if len(node.args) == 1 and type(node.args[0]) is ast.Name and node.args[0].id in off:
                gated.append(node)
    inside = {id(n) for statement in gated for n in ast.walk(statement)}
    return not any(id(node) not in inside and _gradient_node(node) for node in ast.walk(helper))


def _gradient_node(node: ast.AST) -> bool:
    """A node the gradient words of `_computes_gradients` come from: `x.backward()`,
    `optimizer.step()`, `autograd.grad`, `enable_grad`, `requires_grad`, `set_grad_enabled`."""
    if type(node) is ast.Attribute:
        return node.attr in _GRADIENT_ATTRIBUTES
    return type(node) is ast.Name and node.id in ("enable_grad", "set_grad_enabled")


_GRADIENT_ATTRIBUTES = frozenset(
    {
        "backward",
        "step",
        "grad",
        "enable_grad",
        "requires_grad",
        "requires_grad_",
        "set_grad_enabled",
    }
)


# Words of a function that computes gradients (an adversarial attack, a gradient penalty).
_GRADIENT_WORDS = ("backward", "autograd.grad", "enable_grad", "requires_grad", "set_grad_enabled")


@per_file
def _computes_gradients(ctx: Context, function: ast.AST) -> bool:
    text = _source_of(ctx, function)
    return any(word in text for word in _GRADIENT_WORDS) or ".step(" in text


def _source_of(ctx: Context, function: ast.AST) -> str:
    """The lines of `function`, joined by spaces (words are searched in it)."""
    start, end = function.lineno - 1, function.end_lineno or function.lineno  # type: ignore[attr-defined]
    return " ".join(ctx.lines[start:end])


@per_file
def _calls_its_parameter(ctx: Context, helper: ast.AST, position: int) -> bool:
    """`helper` calls its positional parameter number `position` (asked once per helper and
    place, whatever the number of its calls)."""
    args = helper.args  # type: ignore[attr-defined]
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    if position >= len(positional):
        return False
    parameter = positional[position]
    return any(
        type(node.func) is ast.Name and node.func.id == parameter
        for node in index_of(ctx, helper).calls_named(helper, [parameter], local=True)
    )


def _run_model(func: ast.AST, ctx: Context) -> ast.AST | None:
    """The model a call's function runs: `model` of `model(x)` and of `model.forward(x)`."""
    if _is_model(func, ctx):
        return func
    if (
        isinstance(func, ast.Attribute)
        # `model.forward(x)`, or a method of the project's that runs its model's forward
        # (`model.loss(image, target)`, `model.denoise(image)`)
        and (func.attr == "forward" or ctx.project.has(RUNS_ITSELF + func.attr))
        and _is_model(func.value, ctx)
        and not _other_framework(ctx)
    ):
        return func.value
    return None


@per_file
def _trains_itself(ctx: Context, function: ast.AST | None) -> bool:
    """`function` is a method of a module class of the file that switches the module itself to
    training mode (`self.train()`, lstm-autoencoder's `fit`): there `self(x)` runs a model."""
    if function is None or function.name == "forward":  # type: ignore[attr-defined]
        return False
    owner = _program(ctx).owner.get(function)
    return (
        owner is not None
        and ctx.is_module_class(owner)
        and any(
            type(call.func) is ast.Attribute
            and type(call.func.value) is ast.Name
            and call.func.value.id == "self"
            and _is_true_or_absent(call)
            for call in index_of(ctx, function).calls_named(function, ("train",), local=True)
        )
    )


# Libraries whose models also run by `model.forward(x)`, imported beside torch in old ports
# (sustain-seq2seq's DyNet trainer): there a `forward` may be theirs.
_OTHER_FRAMEWORKS = ("dynet", "mxnet", "chainer", "paddle")


@per_file
def _other_framework(ctx: Context) -> bool:
    return any(ctx.may_name(name) for name in _OTHER_FRAMEWORKS)


def _is_model(func: ast.AST, ctx: Context) -> bool:
    if type(func) is ast.Name and func.id == "self":
        return _trains_itself(ctx, ctx.enclosing_function())
    if (
        type(func) is ast.Name
        and func.id in top_level_functions(ctx)
        and ctx.kind_of(func) is not Kind.MODULE
    ):
        return False  # `model_test(model)`: a function of the file, named for what it is given
    name = (last_name(func) or "").lower()
    if name.startswith(MAKER_PREFIXES):  # `load_model(path)` makes a model, it does not run one
        return False
    if (
        type(func) is ast.Attribute
        and type(func.value) is ast.Name
        and func.value.id in ctx.imported
    ):
        return False  # `beir_utils.evaluate_model(...)`: a function of an imported module
    if name in MODEL_NAMES or name.endswith(("model", "_net")):
        return True
    if name.startswith("model_") and isinstance(func, (ast.Name, ast.Attribute)):
        return True  # `model_train(images)` (bubbliiiing's, the DDP-wrapped model), `model_ema(x)`
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return False
    if ctx.kind_of(func) is Kind.MODULE:
        return True
    function = ctx.enclosing_function()
    return (
        type(func) is ast.Name
        and isinstance(function, ast.FunctionDef)
        and is_parameter(function, func.id)
        and _given_models(ctx, function, func.id)
    )


@per_file
def _given_models(ctx: Context, function: ast.FunctionDef, parameter: str, hops: int = 2) -> bool:
    """Every call of `function` in the file passes `parameter` a name its caller binds only to
    new modules (`encoder = EncoderRNN(...)`, maybe moved: `encoder = encoder.cuda()`), or a
    parameter of the caller given such models in its turn (`hops` levels): the seq2seq
    tutorial's `evaluate(encoder, decoder, sentence)`, called by `evaluateRandomly(encoder,
    decoder)`."""
    passed = passed_by_every_call(ctx, function, parameter)
    if not passed:
        return False
    found = index(ctx)
    for value in passed:
        if type(value) is not ast.Name:
            return False
        scope = found.runs_in(value) or ctx.tree
        if isinstance(scope, ast.FunctionDef) and is_parameter(scope, value.id):
            if hops > 1 and scope is not function and _given_models(ctx, scope, value.id, hops - 1):
                continue
            return False
        made = [
            b.value
            for b in bindings(ctx, scope, value.id) or ()
            if not moves_itself(b.value, value.id)
        ]
        if not made or not all(_makes_a_module(v, ctx) for v in made):
            return False
    return True


def _makes_a_module(value: ast.AST | None, ctx: Context) -> bool:
    """`EncoderRNN(...)` of a module class of the file or the project, or `nn.LSTM(...)`."""
    if type(value) is not ast.Call:
        return False
    name = last_name(value.func) or ""
    own = top_level_classes(ctx).get(name)
    if own is not None:
        return ctx.is_module_class(own)
    return ctx.project.is_module_class(name) or (ctx.qualname(value.func) or "").startswith(
        "torch.nn."
    )


class _ScopeFacts:
    """What one function (or the module's top level) does with modes and gradients."""

    def __init__(self) -> None:
        self.switches_to_eval = self.switches_to_train = self.disables_grad = False
        self.names: set[str] = set()  # the names of the file's functions it refers to


class _Program:
    """The file's functions and classes, read once when a candidate loop is found. What each
    function does is read from the uses of the few names that matter (`eval`, `train`,
    `no_grad`..., the functions' own names), found in the file's index, never from every node."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.found = found = index(ctx)
        self.facts: dict[ast.AST, _ScopeFacts] = {ctx.tree: _ScopeFacts()}
        self.functions: dict[str, list[ast.AST]] = {}
        self.methods: dict[ast.ClassDef, list[ast.AST]] = {}
        self.owner: dict[ast.AST, ast.ClassDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for function in found.everywhere(*FUNCTIONS):
            self.facts[function] = _ScopeFacts()
            self.functions.setdefault(function.name, []).append(function)
            cls = found.scopes[found.number[function]]
            if isinstance(cls, ast.ClassDef):
                self.owner[function] = cls
                self.methods.setdefault(cls, []).append(function)
        # Of two classes of one name, the one a walk popping the last node first meets last.
        for cls in sorted(found.everywhere(ast.ClassDef), key=found.walk_order):
            self.classes[cls.name] = cls
        self._owners: dict[ast.AST | None, tuple] = {}  # scope -> (its function, parts to skip)
        self._read_modes_and_gradients()
        # Per function name: the scopes that refer to it (call it, perhaps).
        self.referrers: dict[str, list[ast.AST]] = {}
        for name in self.functions:
            for at in self._mentions(name):
                function = self._function_at(at)
                if function is not None and self._parameter_named(function, name, at):
                    continue  # `def lstm_main(train, dev, test)`: not the file's `test()`
                if function is not None and name not in self.facts[function].names:
                    self.facts[function].names.add(name)
                    self.referrers.setdefault(name, []).append(function)
        self._assigned: dict[str, dict[ast.AST, list[ast.AST]]] = {}
        self._reach: dict[ast.AST, set[ast.AST]] = {}
        self._flags: dict[ast.AST, _ScopeFacts] = {}
        self._without_gradients: dict[ast.AST, bool] = {}
        self._modes = ModeFreeModels(self.classes, ctx.qualname, project=ctx.project)

    def _parameter_named(self, function: ast.AST, name: str, at: int) -> bool:
        """The node numbered `at`, a mention of `name` in `function`, is its parameter's name."""
        return (
            isinstance(function, FUNCTIONS)
            and type(self.found.nodes[at]) is ast.Name
            and is_parameter(function, name)
        )

    def _read_modes_and_gradients(self) -> None:
        """Which functions switch a mode (`.eval()`, `.train()`) or turn gradients off (a
        `no_grad`-like name, `requires_grad = ...`, `.requires_grad_()`)."""
        found, names = self.found, self.ctx.names_text
        if any(word in names for word in NO_GRAD_WORDS):
            for table in (found.names, found.attributes):
                for name in [name for name in table if any(word in name for word in NO_GRAD_WORDS)]:
                    self._set(table[name], "disables_grad")
        self._set([at for at, target in self._assignments("requires_grad")], "disables_grad")
        for at in found.attributes.get("requires_grad_", ()):
            if self._called_method(at) is not None:
                self._set([at], "disables_grad")
        # MONAI's `with eval_mode(model):` does both: eval mode and no gradients.
        for table in (found.names, found.attributes):
            self._set(table.get("eval_mode", []), "switches_to_eval")
            self._set(table.get("eval_mode", []), "disables_grad")
        for at in found.attributes.get("eval", ()):
            call = self._called_method(at)
            if call is not None and not call.args:
                self._set([at], "switches_to_eval")
        for at in found.attributes.get("train", ()):
            call = self._called_method(at)
            if call is not None:
                # `.train(False)`, `.train(mode=flag)` switch to eval mode.
                self._set(
                    [at], "switches_to_train" if _is_true_or_absent(call) else "switches_to_eval"
                )

    def _set(self, numbers: list[int], flag: str) -> None:
        for at in numbers:
            facts = self._facts_at(at)
            if facts is not None:
                setattr(facts, flag, True)

    def _called_method(self, at: int) -> ast.Call | None:
        """The call of the `Attribute` node numbered `at`, when it is the function called."""
        parent = self.found.nodes[self.found.above[at]] if self.found.above[at] >= 0 else None
        if type(parent) is ast.Call and parent.func is self.found.nodes[at]:
            return parent
        return None

    def _mentions(self, name: str) -> list[int]:
        """The numbers of the `Name` and `Attribute` nodes of `name`."""
        return [*self.found.names.get(name, ()), *self.found.attributes.get(name, ())]

    def _assignments(self, name: str) -> list[tuple[int, ast.Assign]]:
        """The `Assign` statements with a target named `name` (`name = ...`, `x.name = ...`),
        with their numbers."""
        found, tree = self.found, self.ctx.tree
        return [
            (found.number[node], node)
            for attribute in (False, True)
            for node in found.assignments(tree, name, attribute)
        ]

    def _function_at(self, at: int) -> ast.AST | None:
        """The function (or module) whose facts the node numbered `at` belongs to; None for a
        node of a function's parameters or return annotation, no part of what it does."""
        scope = self.found.scopes[at]
        owner = self._owners.get(scope)
        if owner is None:
            owner = self._owners[scope] = _function_of(scope, self.found)
        function, skipped = owner
        return None if any(start <= at < end for start, end in skipped) else function

    def _facts_at(self, at: int) -> _ScopeFacts | None:
        function = self._function_at(at)
        return None if function is None else self.facts[function]

    def function_at(self, at: int) -> ast.AST | None:
        """The function (or module) whose code the node numbered `at` is part of."""
        return self._function_at(at)

    def trains_only(self, scope: ast.AST) -> bool:
        """`scope`, what it calls, its callers in the file and its class's methods switch a
        model to training mode, and none switches one to eval mode."""
        name = getattr(scope, "name", None)
        owner = self.owner.get(scope)
        family = [
            scope,
            *(self.referrers.get(name, ()) if name else ()),
            *(self.methods.get(owner, ()) if owner is not None else ()),
        ]
        flags = [self.flags(member) for member in family]
        return any(f.switches_to_train for f in flags) and not any(
            f.switches_to_eval for f in flags
        )

    def mode_dependent_here(
        self,
        name: str,
        scope: ast.AST,
        ctx: Context,
        other_modules: bool = False,
        project_classes: bool = False,
    ) -> bool:
        """`name`, read in `scope`, is a model of a class of this file with a layer whose
        behaviour depends on the mode (`self` in one of its methods, or a name every binding of
        which in the scope builds one: `Net().to(device)`, then `net = net.cuda()`), or a
        torchvision model; with `other_modules`, also a model of a class of another module;
        with `project_classes`, of one the project's facts say has such a layer."""
        if name == "self":
            owner = self.owner.get(scope)
            return owner is not None and not self._modes.class_mode_free(owner)
        found = bindings(ctx, scope, name)
        if not found or any(b.value is None or b.augmented for b in found):
            return False  # a parameter, a loop's variable...: made out of sight
        for binding in found:
            made = unwrap_self_methods(binding.value)  # `Net().to(device)` -> `Net()`
            if moves_itself(made, name):
                continue  # `net = net.cuda()`: the same model
            if not isinstance(made, ast.Call) or self.set_their_own_mode([made]):
                return False
            func = made.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                if self._modes.class_mode_free(self.classes[func.id]):
                    return False
                continue
            qualname = ctx.qualname(func) or ""
            if qualname.startswith("torch.nn."):  # `nn.Sequential(nn.Linear(...), nn.ReLU())`
                if self._modes.all_mode_free([made]):
                    return False
            elif self._modes.all_mode_free([made]):
                return False  # a class of another module of the project built of plain layers
            elif not _mode_dependent_factory(qualname) and not other_modules:
                if not (project_classes and ctx.project.has_mode_layers(last_name(func) or "")):
                    return False  # a class of another module: its layers cannot be seen
        return True

    def family(self, function: ast.AST | None) -> list[ast.AST] | None:
        """The code that decides the loop's modes: the function, its callers in the file, its
        class's methods, and whatever those call (see `flags` and `assigned`); None when no
        caller is in the file."""
        if function is None:
            return [self.ctx.tree]
        callers = self._callers(function)
        if not callers:
            return None
        return [function, *callers, *self.methods.get(self.owner.get(function), ())]

    def called_without_gradients(self, function: ast.AST | None) -> bool:
        """Some code of the file that calls `function`, directly or through other functions
        of the file, turns gradients off in its own body: PointRCNN's `__main__` runs
        `eval_single_ckpt` under `with torch.no_grad():`, which calls `eval_one_epoch`, which
        calls the function of the loop. Each function is read once per file."""
        if function is None:
            return False
        known = self._without_gradients
        stack = [(function, iter(self._callers(function)))]
        known[function] = False  # while it is read: a call cycle adds nothing
        while stack:
            scope, callers = stack[-1]
            caller = next(callers, None)
            if caller is None:
                stack.pop()
                if stack and known[scope]:
                    known[stack[-1][0]] = True
                continue
            if known.get(caller) is None:
                if self.facts[caller].disables_grad:
                    known[caller] = True
                else:
                    known[caller] = False
                    stack.append((caller, iter(self._callers(caller))))
                    continue
            if known[caller]:
                known[scope] = True
        return known[function]

    def _callers(self, function: ast.AST) -> list[ast.AST]:
        name = getattr(function, "name", None)
        return (
            [scope for scope in self.referrers.get(name, ()) if scope is not function]
            if name
            else []
        )

    def reach(self, scope: ast.AST) -> set[ast.AST]:
        """`scope` and the functions it calls by name, found once per scope."""
        found = self._reach.get(scope)
        if found is None:
            found = self._reach[scope] = {
                scope,
                *(
                    callee
                    for name in self.facts[scope].names
                    for callee in self.functions.get(name, ())
                ),
            }
        return found

    def flags(self, scope: ast.AST) -> _ScopeFacts:
        """Whether `scope` or what it calls switches to eval or train mode, or disables grad."""
        found = self._flags.get(scope)
        if found is None:
            found = self._flags[scope] = _ScopeFacts()
            for member in self.reach(scope):
                facts = self.facts[member]
                found.switches_to_eval |= facts.switches_to_eval
                found.switches_to_train |= facts.switches_to_train
                found.disables_grad |= facts.disables_grad
        return found

    def assigned(self, family: list[ast.AST], name: str) -> list[ast.AST]:
        """The values assigned to `name` in the family's code."""
        by_scope = self._assigned.get(name)
        if by_scope is None:
            by_scope = self._assigned[name] = {}
            for at, statement in self._assignments(name):
                by_scope.setdefault(self._function_at(at), []).append(statement.value)
        # The scopes the family reaches, looked up (a script of many functions assigning
        # `model` would otherwise have each loop read every one of them), in file order.
        reached = {scope for member in family for scope in self.reach(member) if scope in by_scope}
        return [value for scope in sorted(reached, key=_first_line) for value in by_scope[scope]]

    def built_here(self, models: list[ast.AST]) -> bool:
        """True when the model is only ever made by building it (a new module trains)."""
        return bool(models) and all(self._builds_module(unwrap_self_methods(v)) for v in models)

    def _builds_module(self, value: ast.AST, through_function: bool = True) -> bool:
        if not isinstance(value, ast.Call):
            return False
        looked_up = _module_looked_up(value.func)
        if looked_up is not None:
            # `models.__dict__[args.arch](...)`, `getattr(models, name)(...)`: one of the
            # classes of a module of models, picked at run time.
            qualname = self.ctx.qualname(looked_up) or ""
            if qualname == "torchvision.models":  # every one has Dropout or BatchNorm
                return True
            return self.ctx.project.is_project_module(qualname) and _models_mostly_mode_dependent(
                self.ctx
            )
        if isinstance(value.func, ast.Name) and value.func.id in self.classes:
            return self.ctx.is_module_class(self.classes[value.func.id])
        if through_function and isinstance(value.func, ast.Name):
            function = top_level_functions(self.ctx).get(value.func.id)
            if function is not None:  # `model = init_protonet(opt)`, which builds one
                returned = returned_values(self.ctx, function)
                return bool(returned) and all(
                    self._builds_module(unwrap_self_methods(v), False) for v in returned
                )
        qualname = self.ctx.qualname(value.func)
        if qualname is None or self.ctx.project.is_project_module(qualname):
            # A class of another module of the project: a new model, in training mode, when the
            # project's facts say it has Dropout or BatchNorm (vqvae's `VectorQuantizedVAE`
            # of modules.py, built in the script that evaluates it); else its mode may not
            # matter.
            name = last_name(value.func)
            return name is not None and self.ctx.project.has_mode_layers(name)
        return self.ctx.kind_of(value) is Kind.MODULE

    def sets_mode(self, function: ast.AST) -> bool:
        """`function`, or a function of the file it calls, switches a model's mode. A model's
        `forward` it runs does not count: whether the model sets its own mode is asked of the
        model's class (`set_their_own_mode`)."""
        return any(
            self.facts[member].switches_to_eval or self.facts[member].switches_to_train
            for member in self.reach(function)
            if member is function or member.name != "forward"  # type: ignore[attr-defined]
        )

    def names_an_evaluation(self, function: ast.AST) -> bool:
        """Named to evaluate (`validate`, `test_epoch`), and no pytest test (`test_x` at the top
        level, a method of a `Test...` class)."""
        if not _words(function.name.lower()) & EVAL_WORDS:  # type: ignore[attr-defined]
            return False
        owner = self.owner.get(function)
        if owner is None:
            return not (function.name.startswith("test") and file_of_tests(self.ctx))  # type: ignore[attr-defined]
        return not owner.name.startswith("Test")

    def keeps_modes(self, evaluator: ast.AST) -> bool:
        """`evaluator` runs its model in the mode it is given: it sets none, trains none, does
        not speak of keeping dropout on, and is not one the loop check reports already (no
        caller or method around switches to eval mode, and it loops over a loader)."""
        if self.sets_mode(evaluator) or trains(evaluator, self.found):
            return False
        text = _source_of(self.ctx, evaluator).lower()
        if any(word in text for word in _DROPOUT_ON_PURPOSE):
            return False
        family = self.family(evaluator) or [evaluator]
        if any(self.flags(member).switches_to_eval for member in family):
            return True
        loops = self.found.under(evaluator, ast.For, ast.AsyncFor)
        return not any(_loader_name(loop.iter, self.ctx) for loop in loops)

    def model_mode_dependent(
        self, model: ast.AST, ctx: Context, project_classes: bool = False
    ) -> bool:
        """The model `model.train()` switched has a layer whose behaviour depends on the mode:
        see `mode_dependent_here`; for `self.x`, every value the class assigns to it (of a
        class of another module: with `project_classes` only, when the project's facts say
        so)."""
        others = ctx.project.has("mode-dependent layers") and not project_classes
        scope = ctx.enclosing_function() or ctx.tree
        if type(model) is ast.Name:
            return self.mode_dependent_here(model.id, scope, ctx, others, project_classes)
        owner = self.owner.get(scope)
        if owner is None:
            return False
        return self.attribute_mode_dependent(owner, model.attr)  # type: ignore[attr-defined]

    def attribute_mode_dependent(self, owner: ast.ClassDef, attribute: str) -> bool:
        """Every value the class assigns to `self.<attribute>` builds a model with a layer
        whose behaviour depends on the mode (see `builds_mode_layers`)."""
        values = attribute_values(self.ctx, owner, attribute)
        return bool(values) and all(self.builds_mode_layers(value, attribute) for value in values)

    def builds_mode_layers(self, value: ast.AST, attribute: str) -> bool:
        """`value` is `self.<attribute>` moved (`.cuda()`), or builds a model with a layer whose
        behaviour depends on the mode."""
        if moves_itself(value, f"self.{attribute}"):
            return True
        made = unwrap_self_methods(value)
        if not isinstance(made, ast.Call) or self.set_their_own_mode([made]):
            return False
        func = made.func
        if isinstance(func, ast.Attribute) and is_self_attribute(func):
            # `self.extractor = self.__init_visual_extractor()`: what the factory method makes
            owner = self.owner.get(self.ctx.enclosing_function())  # type: ignore[arg-type]
            factory = self.ctx.factory_made(owner, func.attr) if owner is not None else ()
            return bool(factory) and all(
                self.builds_mode_layers(call, attribute) for call in factory
            )
        if isinstance(func, ast.Name) and func.id in self.classes:
            cls = self.classes[func.id]
            return self.ctx.is_module_class(cls) and not self._modes.class_mode_free(cls)
        qualname = self.ctx.qualname(func) or ""
        if _mode_dependent_factory(qualname):
            return True
        if qualname.startswith("torch.nn."):
            return not self._modes.all_mode_free([made])
        name = last_name(func)
        return name is not None and self.ctx.project.has_mode_layers(name)

    def set_their_own_mode(self, models: list[ast.AST]) -> bool:
        """Every model is built from a class whose `forward` calls `self.eval()` itself: of the
        file, or of the project (its facts)."""
        return self._every_forward(models, self._sets_own_mode, self.ctx.project.sets_own_mode)

    def run_without_gradients(self, models: list[ast.AST]) -> bool:
        """Every model is built from a class whose `forward` disables gradients itself (with
        `torch.no_grad()` or `torch.inference_mode()`): of the file, or of the project."""
        return self._every_forward(models, self._grad_free, self.ctx.project.turns_gradients_off)

    def takes_gradients(self, models: list[ast.AST]) -> bool:
        """Some model is built from a class that calls `torch.autograd.grad` itself (a
        meta-learner adapting to each task at test time), of the file or the project: under
        `torch.no_grad()` it would fail."""
        for model in models:
            value = unwrap_self_methods(model)
            if not isinstance(value, ast.Call):
                continue
            func = value.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                if "autograd.grad(" in self.ctx.text(self.classes[func.id]):
                    return True
                continue
            name = last_name(func)
            if name is not None and self.ctx.project.takes_gradients(name):
                return True
        return False

    def _every_forward(
        self,
        models: list[ast.AST],
        here: Callable[[ast.FunctionDef], bool],
        in_project: Callable[[str], bool],
    ) -> bool:
        """Every model is a call of a class whose `forward` is `here` (a class of the file), or
        whose name is `in_project` (another module's)."""
        if not models:
            return False
        for model in models:
            value = unwrap_self_methods(model)
            if not isinstance(value, ast.Call):  # `self.net` moved or loaded: not known
                return False
            func = value.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                methods = self.methods.get(self.classes[func.id], ())
                if not any(here(m) for m in methods if m.name == "forward"):
                    return False
                continue
            name = last_name(func)
            if name is None or not in_project(name):
                return False
        return True

    def _sets_own_mode(self, forward: ast.FunctionDef) -> bool:
        return any(
            is_self_attribute(node.func) for node in self.found.calls_named(forward, ["eval"])
        )

    def _grad_free(self, forward: ast.FunctionDef) -> bool:
        return records_nothing(forward, self.ctx)

    def mode_free(self, models: list[ast.AST]) -> bool:
        """True when every model built under this name has no Dropout/BatchNorm-like layer."""
        return self._modes.all_mode_free(models)


@per_file
def _program(ctx: Context) -> _Program:
    return _Program(ctx)


def _function_of(scope: ast.AST, found: FileIndex) -> tuple[ast.AST, list[tuple[int, int]]]:
    """The function (or module) whose facts the nodes of `scope` belong to (classes and lambdas
    belong to the code around them), and the spans of that function's parameters and return
    annotation, which are no part of what it does."""
    if isinstance(scope, (ast.Lambda, ast.ClassDef)):
        scope = found.runs_in(scope)  # type: ignore[assignment]
    if not isinstance(scope, FUNCTIONS):
        return scope, []
    return scope, [found.span(part) for part in (scope.args, scope.returns) if part is not None]


def _is_true_or_absent(call: ast.Call) -> bool:
    values = [*call.args, *(k.value for k in call.keywords)]
    return not values or all(isinstance(v, ast.Constant) and v.value is True for v in values)


def _body_calls(ctx: Context, scope: ast.AST) -> list[ast.Call]:
    """The calls in a function or loop body (see `FileIndex.in_block` for nested scopes)."""
    return index_of(ctx, scope).in_block(scope.body, ast.Call, local=True)


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class EvaluatedInTrainingMode(Monitor):
    """A forward of a trained model under no_grad/inference_mode (an evaluation) while its
    BatchNorm or Dropout layers are in training mode.

    Only models that an optimizer trains are judged: a momentum encoder or an EMA teacher run
    under no_grad in training mode on purpose. Before the first optimizer step it is not yet
    known which models are trained, so such forwards are kept and judged at the first step."""

    def setup(self) -> None:
        self._layers: dict[int, list] = {}
        self._pending: list[tuple] = []

    def on_forward(self, model, args, kwargs) -> None:
        import torch

        if torch.is_grad_enabled():
            return
        layers = self._layers.get(id(model))
        if layers is None:
            from torchdoctor.catalog.sdk import mode_dependent_layers

            layers = self._layers[id(model)] = mode_dependent_layers(model)
        active = [(name, layer) for name, layer in layers if layer.training]
        if not active:
            return
        event = (model, active, self.session.where(), self.session.step)
        if self.session.optimizers:
            self._judge(event)
        elif len(self._pending) < 8:
            self._pending.append(event)

    def on_step(self, optimizer) -> None:
        pending, self._pending = self._pending, []
        for event in pending:
            self._judge(event)

    def _judge(self, event) -> None:
        model, active, at, step = event
        if not any(m is model for m in self.session.trainable_models()):
            return
        shown = ", ".join(f"`{name}` ({type(layer).__name__})" for name, layer in active[:3])
        more = f" (+{len(active) - 3})" if len(active) > 3 else ""
        self.report(
            id(model),
            "runtime",
            module=active[0][0],
            at=at,
            at_step=step,
            model=type(model).__name__,
            layers=shown + more,
        )
