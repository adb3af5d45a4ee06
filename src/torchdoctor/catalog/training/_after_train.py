"""An evaluation function of the file called right after `model.train()`, with nothing in
between switching the model back: STAR's `train()` calls `self.net.train()`, trains one epoch,
then `self.test_epoch()`, which runs `self.net` and never calls `.eval()` (its other caller,
`test()`, does, which is why a rule reading the file as a whole stays silent).

Read along the statements that follow the switch in its own block, and in the blocks of the
loops, `with` and `try` statements around it (never out of an `if`: the other branch may be the
one that runs), in source order, stopping at anything that may set a mode."""

from __future__ import annotations

import ast
from typing import Iterator, NamedTuple

from torchdoctor.catalog.sdk import Context, call_name, dotted_name, index, is_self_attribute

# Statements whose body always runs when they are reached (a loop's body at least once in the
# common case): a switch in them still holds after them.
_PASSED_THROUGH = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
# Calls in an evaluator that mean it trains.
_TRAINING_CALLS = ("backward", "step")


class EvaluatedAfterTrain(NamedTuple):
    call: ast.Call  # the evaluator's call
    function: str  # its name
    model: str  # the model, as the switch wrote it


class EvaluatedWhileTraining(NamedTuple):
    call: ast.Call  # the evaluator's call, in the training loop
    run: ast.Call  # the evaluator's first run of the model
    function: str  # the evaluator's name
    model: str  # the model's name in the loop


def evaluations_after_train(
    switch: ast.Call, ctx: Context, program
) -> Iterator[EvaluatedAfterTrain]:
    """The first call after `switch` (`R.train()`) of an evaluation function of the file that
    runs `R` in the mode it is given; `program`: eval-mode-missing's reading of the file."""
    receiver = switch.func.value  # type: ignore[attr-defined]
    model = ctx.text(receiver)
    caller = ctx.enclosing_function()
    if caller is None or not (type(receiver) is ast.Name or is_self_attribute(receiver)):
        return  # `model`, `self.net`: a name or one attribute of `self`
    found = index(ctx)
    for call in _calls_after(switch, ctx, found):
        if _may_set_a_mode(call, caller, program):
            return
        evaluator = _evaluator(call, caller, program)
        if evaluator is None:
            continue
        if _runs(evaluator, call, receiver, model, found) and program.keeps_modes(evaluator):
            yield EvaluatedAfterTrain(call, evaluator.name, model)
        return  # a function of the file that sets no mode: the first one decides


def _calls_after(switch: ast.Call, ctx: Context, found) -> Iterator[ast.Call]:
    """The calls of the caller's scope after the switch's statement, in source order: in the
    statements after it in its block, then after the loop, `with` or `try` holding it..."""
    ancestors = ctx.ancestors
    statement = ancestors[-1]
    if type(statement) is not ast.Expr or statement.value is not switch:
        return
    for owner in reversed(ancestors[:-1]):
        position = ctx.block_position(statement, owner)
        if position is None:
            return  # in an `except` handler or a `case`: no straight line to follow
        block, at = position
        yield from found.in_block(block[at + 1 :], ast.Call, local=True)
        if not isinstance(owner, _PASSED_THROUGH) or block is not owner.body:
            return
        statement = owner


def _may_set_a_mode(call: ast.Call, caller: ast.AST, program) -> bool:
    """`.eval()`, `.train(...)`, `eval_mode(...)`, or a call of a function of the file that
    sets a mode (itself or through what it calls): `self.f()` a method of the caller's class
    (any function of that name when the class has none), `obj.f()` any function of that name."""
    if call_name(call) in ("eval", "train", "eval_mode"):
        return True
    return any(program.sets_mode(function) for function in _callees(call, caller, program))


def _callees(call: ast.Call, caller: ast.AST, program) -> list[ast.AST]:
    """The functions of the file `call` may run."""
    func = call.func
    if type(func) is ast.Name:
        return [f for f in program.functions.get(func.id, ()) if f not in program.owner]
    if type(func) is not ast.Attribute:
        return []
    named = program.functions.get(func.attr, [])
    if is_self_attribute(func):
        own = [f for f in program.methods.get(program.owner.get(caller), ()) if f.name == func.attr]
        return own or named
    return named


def _evaluator(call: ast.Call, caller: ast.AST, program) -> ast.AST | None:
    """The function of the file `call` runs when it is named to evaluate (`validate(...)`,
    `self.test_epoch()`); a method only through `self`, a function only by its bare name."""
    func = call.func
    through_self = is_self_attribute(func)
    if type(func) is not ast.Name and not through_self:
        return None
    candidates = _callees(call, caller, program)
    if (
        len(candidates) != 1
        or through_self
        and candidates[0] not in program.methods.get(program.owner.get(caller), ())
    ):
        return None
    function = candidates[0]
    return function if program.names_an_evaluation(function) else None


def _runs(evaluator: ast.AST, call: ast.Call, receiver: ast.AST, model: str, found) -> bool:
    """`evaluator` calls the model: `self.net(...)` or `self.net.forward(...)` in a method, or
    the parameter the model is passed as (`validate(model, loader)` -> `model(x)`)."""
    ran = model
    if type(receiver) is ast.Name:
        parameter = _parameter_given(evaluator, call, model)
        if parameter is None:
            return False
        ran = parameter
    return _first_run(evaluator, ran, found) is not None


def _first_run(function: ast.AST, model: str, found) -> ast.Call | None:
    """The first call in `function` of `model` (`model(x)`, `model.forward(x)`)."""
    runs = (model, model + ".forward")
    for node in found.under(function, ast.Call):
        if dotted_name(node.func) in runs:
            return node
    return None


def _parameter_given(function: ast.AST, call: ast.Call, model: str) -> str | None:
    """The parameter of `function` that `call` passes `model` as (positionally or by name)."""
    parameters = [a.arg for a in function.args.posonlyargs + function.args.args]  # type: ignore[attr-defined]
    if type(call.func) is ast.Attribute and parameters[:1] == ["self"]:
        parameters = parameters[1:]
    for position, argument in enumerate(call.args):
        if type(argument) is ast.Starred:
            return None
        if type(argument) is ast.Name and argument.id == model:
            return parameters[position] if position < len(parameters) else None
    for keyword in call.keywords:
        if type(keyword.value) is ast.Name and keyword.value.id == model:
            return keyword.arg
    return None


def trains(evaluator: ast.AST, found) -> bool:
    """The function calls `.backward()` or `.step()` somewhere."""
    return bool(found.calls_named(evaluator, _TRAINING_CALLS))


def evaluations_in_training_loop(
    loop: ast.AST, caller: ast.AST, program, found
) -> Iterator[EvaluatedWhileTraining]:
    """The calls, in a loop that trains a model (a call of it, or of a function of the file that
    trains, is given it), of an evaluation function of the file that runs that model without a
    loop over batches and sets no mode, in a function that sets none either (DeepResearch's
    UNet: `val_loss = get_val_loss(x_val, y_val, unet)` once every few epochs, after
    `train_step(x, y, optimizer, criterion, unet)`): the model is evaluated in the mode it
    trains in. Every name the loop trains that the evaluator runs is handed back: which of them
    is a model with Dropout or BatchNorm is the caller's to judge."""
    if program.sets_mode(caller):
        return
    calls = found.in_block(loop.body, ast.Call, local=True)  # type: ignore[attr-defined]
    trained = _trained_names(calls, caller, program, found) | _trained_inline(calls)
    if not trained:
        return
    for call in calls:
        if _may_set_a_mode(call, caller, program):
            return
        evaluator = _evaluator(call, caller, program)
        if evaluator is None or not program.keeps_modes(evaluator):
            continue
        for model in sorted(trained):
            if model.startswith("self."):  # run by a method of the class: `self.test()`
                ran = model if is_self_attribute(call.func) else None
            else:
                ran = _parameter_given(evaluator, call, model)
            run = None if ran is None else _first_run(evaluator, ran, found)
            if run is not None:
                yield EvaluatedWhileTraining(call, run, evaluator.name, model)  # type: ignore[attr-defined]


def _trained_names(calls: list[ast.Call], caller: ast.AST, program, found) -> set[str]:
    """The names of models a loop trains: each a bare name given to a function of the file
    that calls `.backward()` or `.step()` (`train_step(x, y, optimizer, criterion, unet)`)."""
    names: set[str] = set()
    for call in calls:
        if type(call.func) is not ast.Name:
            continue
        callees = _callees(call, caller, program)
        if len(callees) != 1 or not trains(callees[0], found):
            continue
        names.update(argument.id for argument in call.args if type(argument) is ast.Name)
    return names


def _trained_inline(calls: list[ast.Call]) -> set[str]:
    """The models a loop trains itself, when it calls `.backward()` and `.step()`: each bare name
    or attribute of `self` it runs (`outputs = self.model(inputs)`), the loss functions among
    them too (whether one holds a model with Dropout or BatchNorm is the caller's to judge)."""
    if not {"backward", "step"} <= {call_name(call) for call in calls}:
        return set()
    return {
        dotted_name(call.func) or ""
        for call in calls
        if type(call.func) is ast.Name or is_self_attribute(call.func)
    } - {""}
