"""Whether a model's mode matters: a model built in the file only from layers that compute the
same in training and evaluation mode (no Dropout, BatchNorm, Transformer...) gives the same
results either way, so a missing `.eval()` or `.train()` changes nothing. Shared by
eval-mode-missing and train-mode-not-restored."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator

from torchdoctor.catalog.sdk import MODEL_WRAPPERS, unwrap_self_methods

if TYPE_CHECKING:
    from torchdoctor.lint.project import ProjectFacts

# Names of layers whose forward depends on the mode.
MODE_DEPENDENT_WORDS = ("dropout", "batchnorm", "batch_norm", "syncbn", "transformer", "rrelu")
# Recurrent layers too where the backward depends on it: cuDNN refuses an RNN backward in
# evaluation mode ("cudnn RNN backward can only be called in training mode").
TRAINING_DEPENDENT_WORDS = (*MODE_DEPENDENT_WORDS, "lstm", "gru", "rnn")


def last_name(expr: ast.AST) -> str | None:
    """`model` -> "model", `self.net` -> "net"; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


class ModeFreeModels:
    """Reads, once per class or constructor call, whether models are built only from layers
    whose `words` say nothing about a mode. `classes`: the file's classes by name; `qualname`:
    the context's resolution of a called name."""

    def __init__(
        self,
        classes: dict[str, ast.ClassDef],
        qualname,
        words=MODE_DEPENDENT_WORDS,
        project: ProjectFacts | None = None,
    ):
        self.classes = classes
        self._qualname = qualname
        self._dependent = words
        self._project = project
        self._mode_free: dict[ast.AST, bool] = {}
        self._words: dict[ast.AST, tuple[bool, list[str]]] = {}

    def all_mode_free(self, models: list[ast.AST]) -> bool:
        """True when every value is a model built without a mode-dependent layer."""
        return bool(models) and all(self._value_mode_free(value) for value in models)

    def class_mode_free(self, cls: ast.ClassDef) -> bool:
        """True when the class (and the classes of the file it uses) has no mode-dependent
        layer."""
        found = self._mode_free.get(cls)
        if found is None:
            found = self._mode_free[cls] = self._subtree_mode_free(cls, set())
        return found

    def _value_mode_free(self, value: ast.AST) -> bool:
        found = self._mode_free.get(value)
        if found is None:  # a class is read once however many loops run its instances
            found = self._mode_free[value] = self._builds_mode_free(value, set())
        return found

    def _builds_mode_free(self, value: ast.AST, seen: set[str]) -> bool:
        value = unwrap_self_methods(value)
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Name) and value.func.id in self.classes:
            return self._subtree_mode_free(self.classes[value.func.id], seen)
        qualname = self._qualname(value.func) or ""
        if qualname.rpartition(".")[2] in MODEL_WRAPPERS and value.args:
            # `nn.DataParallel(WideResnet50(n))`: the wrapped model's layers, not the wrapper's
            return self._builds_mode_free(value.args[0], seen)
        if qualname.startswith("torch.nn."):
            return self._subtree_mode_free(value, seen)
        return self._plain_project_class(value.func, qualname)

    def _plain_project_class(self, func: ast.AST, qualname: str) -> bool:
        """`net.dehaze_net()` of `import net`: a class of another module of the project whose
        facts say it builds only layers that compute the same in either mode (its text names
        no recurrent layer either, so this holds for the training words too)."""
        name = last_name(func)
        project = self._project
        return (
            project is not None
            and name is not None
            and project.builds_only_plain_layers(name)
            and (not qualname or project.is_project_module(qualname))
        )

    def _subtree_mode_free(self, root: ast.AST, seen: set[str]) -> bool:
        """No mode-dependent layer named in `root`, nor in the local classes it uses."""
        if isinstance(root, ast.ClassDef):
            if root.name in seen:
                return True
            seen.add(root.name)
        names_mode, used = self._layer_words(root)
        return not names_mode and all(
            self._subtree_mode_free(self.classes[name], seen) for name in used
        )

    def _layer_words(self, root: ast.AST) -> tuple[bool, list[str]]:
        """Whether `root` names a mode-dependent layer, and the local classes it names; read
        once however many models are built from it."""
        found = self._words.get(root)
        if found is None:
            names_mode, used = False, []
            for node in _outside_type_tests(root):
                word = node.arg if isinstance(node, ast.keyword) else last_name(node)
                if word and any(w in word.lower() for w in self._dependent):
                    names_mode = True
                    break
                if isinstance(node, ast.Name) and node.id in self.classes:
                    used.append(node.id)
            found = self._words[root] = (names_mode, used)
        return found


def _outside_type_tests(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes under `root`, but for the arguments of `isinstance(m, nn.BatchNorm2d)` and
    `issubclass(...)` (a weight init's type test names a layer the model need not have)."""
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
        ):
            continue
        todo.extend(ast.iter_child_nodes(node))
