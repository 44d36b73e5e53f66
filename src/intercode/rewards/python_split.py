"""Split an MBPP test so that the agent's process never decides it nor sees its answer.

A test such as ``assert min_cost([[1, 2], [3, 4]], 1, 1) == 8`` becomes

* units: the sub-expressions that need the agent's namespace, here
  ``min_cost([[1, 2], [3, 4]], 1, 1)``: the outermost calls of a name that is not a
  builtin (the functions under test, with the tests' inputs), and any other free name
  (``sys`` in ``sys.getsizeof(x)``, a module the agent imported, as upstream required);
* a template: the test with each unit replaced by ``__ic_unit__(k)``, here
  ``assert __ic_unit__(0) == 8``.

The units run in a fork of the agent's interpreter, which reports their values as typed
data; the template runs in a process that never ran agent code. Expected values (the
right side of the comparison, an assert's message) never leave the template.

Builtins in a test are the real ones, evaluated in the template, unless the gold itself
defines that name (MBPP task 126 tests a function called ``sum``): then, as upstream,
the agent's definition is the one under test. A call inside a lambda or comprehension
that uses the comprehension's own variables cannot be sent alone; its callee is sent
as a name (an opaque function: such a test fails). MBPP has no such test.

A template is *pure* (:func:`pure_template`) when it can change nothing outside the
values it computes: one expression or assert built of literals, operators,
comparisons, subscripts and calls, by name, of the units and of builtins that only
compute (no attribute, lambda, comprehension or f-string). The judge runs a request of
pure templates in its interpreter itself rather than in a fork (see
``sandbox/inbox/pyscore.py``).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

__all__ = ["BUILTIN_NAMES", "PURE_BUILTINS", "SplitTest", "defined_names", "pure_template",
           "split_test"]

UNIT = "__ic_unit__"
BUILTIN_NAMES = frozenset(dir(builtins))
# builtins that only compute from the plain data they are given: what a pure template
# may call (by name only)
PURE_BUILTINS = frozenset((
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "float", "frozenset",
    "hash", "int", "isinstance", "len", "list", "max", "min", "ord", "pow", "range",
    "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip",
))
_PURE_KEYWORDS = frozenset(("key", "reverse", "default", "start"))  # (no f(**mapping))
# no attribute (a generator's frame reaches the builtins, a codec lookup imports), no
# lambda or comprehension (a name bound there shadows a builtin), no f-string
_PURE_NODES = (
    ast.Module, ast.Expr, ast.Assert, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare,
    ast.Call, ast.keyword, ast.Name, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict,
    ast.Subscript, ast.Slice, ast.Load, ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)


@dataclass(frozen=True)
class SplitTest:
    """A test's template (run in the judge) and its units (run in the agent's process)."""

    template: str
    units: tuple[str, ...]
    pure: bool = False  # the template's :func:`pure_template`


def defined_names(source: str) -> frozenset[str]:
    """Names that ``source`` binds at top level (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return frozenset(names)


def pure_template(template: str) -> bool:
    """Whether running ``template`` (on reported values) can change nothing but the
    values it builds: see the module's docstring. Any doubt is ``False``."""
    try:
        tree = ast.parse(template)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    if len(tree.body) != 1:
        return False
    for node in ast.walk(tree):
        if not isinstance(node, _PURE_NODES):
            return False
        if isinstance(node, ast.Name) and node.id != UNIT and node.id not in PURE_BUILTINS:
            return False
        if isinstance(node, ast.Call) and not (
                isinstance(node.func, ast.Name)
                and all(k.arg in _PURE_KEYWORDS for k in node.keywords)
                and not (node.func.id == "str" and len(node.args) + len(node.keywords) > 1)):
            return False  # (str(b, encoding) looks a codec up: it imports, and caches)
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return False
    return True


def split_test(source: str, shadowed: frozenset[str] = frozenset()) -> SplitTest:
    """Split one test statement; ``shadowed``: builtin names the gold redefines."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return SplitTest(source, ())  # the template fails as the test itself would (in a fork)
    local = {n.id for n in ast.walk(tree)
             if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            local.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
    splitter = _Splitter(shadowed, frozenset(local))
    new = ast.fix_missing_locations(splitter.visit(tree))
    template = ast.unparse(new)
    return SplitTest(template, tuple(splitter.units), pure_template(template))


class _Splitter(ast.NodeTransformer):
    def __init__(self, shadowed: frozenset[str], local: frozenset[str]) -> None:
        self.shadowed = shadowed
        self.local = local
        self.units: list[str] = []

    def _agents(self, name: str) -> bool:
        return name not in self.local and (name in self.shadowed or name not in BUILTIN_NAMES)

    def _unit(self, node: ast.expr) -> ast.expr:
        self.units.append(ast.unparse(node))
        call = ast.Call(ast.Name(UNIT, ast.Load()), [ast.Constant(len(self.units) - 1)], [])
        return ast.copy_location(call, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Name) and self._agents(func.id) and not any(
                isinstance(n, ast.Name) and n.id in self.local for n in ast.walk(node)):
            return self._unit(node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and self._agents(node.id):
            return self._unit(node)
        return node
