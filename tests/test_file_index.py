"""The file index's scopes: which function, lambda, class or module each node belongs to."""

from __future__ import annotations

import ast

from torchdoctor.lint.occurrences import FileIndex

SOURCE = """\
import torch

@decorate(lambda: 1)
def outer(x, y=lambda z: z):
    a = x

    class Inner:
        size = lambda self: (lambda: self)

        def method(self):
            return [v for v in self]

    b = a
c = outer(1)
"""


def _owner(index: FileIndex, node: ast.AST) -> str:
    scope = index.scopes[index.number[node]]
    if type(scope) is ast.Module:
        return "Module"
    return type(scope).__name__ + ":" + getattr(scope, "name", str(scope.lineno))


def test_every_node_belongs_to_its_innermost_scope_and_a_scope_node_to_the_one_around_it():
    tree = ast.parse(SOURCE)
    index = FileIndex([tree], tree)
    names = {(node.id, node.lineno): node for node in ast.walk(tree) if type(node) is ast.Name}
    defs = {node.name: node for node in ast.walk(tree) if hasattr(node, "name")}
    lambdas = sorted(
        (node for node in ast.walk(tree) if type(node) is ast.Lambda),
        key=lambda node: (node.lineno, node.col_offset),
    )
    module = "Module"
    assert index.scopes[index.number[tree]] is tree
    assert _owner(index, defs["outer"]) == module
    # A function's decorators and arguments are read as its own, as its body is.
    assert _owner(index, names["decorate", 3]) == "FunctionDef:outer"
    assert _owner(index, lambdas[0].body) == "Lambda:3"
    assert _owner(index, lambdas[1]) == "FunctionDef:outer"
    assert _owner(index, names["z", 4]) == "Lambda:4"
    assert _owner(index, names["x", 5]) == "FunctionDef:outer"
    assert _owner(index, defs["Inner"]) == "FunctionDef:outer"
    assert _owner(index, lambdas[2]) == "ClassDef:Inner"
    assert _owner(index, lambdas[3]) == "Lambda:8"
    assert _owner(index, names["self", 8]) == "Lambda:8"
    assert _owner(index, defs["method"]) == "ClassDef:Inner"
    assert _owner(index, names["self", 11]) == "FunctionDef:method"
    assert _owner(index, names["a", 13]) == "FunctionDef:outer"  # after the nested class
    assert _owner(index, names["c", 14]) == module


def test_an_index_of_one_function_gives_its_root_the_scope_it_was_given():
    tree = ast.parse(SOURCE)
    function = tree.body[1]
    index = FileIndex([function], None)
    assert index.scopes[0] is None
    assert all(scope is not None for scope in index.scopes[1:])
    assert index.scopes[index.number[function.body[0]]] is function


def test_deeply_nested_scopes_are_each_read_once():
    depth = 150
    source = "f = " + "lambda: " * depth + "0\n"
    tree = ast.parse(source)
    index = FileIndex([tree], tree)
    lambdas = [node for node in ast.walk(tree) if type(node) is ast.Lambda]
    assert len(lambdas) == depth
    for outer, inner in zip(lambdas, lambdas[1:]):
        assert index.scopes[index.number[inner]] is outer
    assert index.scopes[index.number[lambdas[-1].body]] is lambdas[-1]
