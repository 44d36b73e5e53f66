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
comparisons, comprehensions and lambdas, calls of builtins that only compute, and
attributes that do not start with ``_``. The judge runs a request of pure templates in
its interpreter itself rather than in a fork (see ``sandbox/inbox/pyscore.py``).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

__all__ = ["BUILTIN_NAMES", "PURE_BUILTINS", "SplitTest", "defined_names", "pure_template",
           "split_test"]

UNIT = "__ic_unit__"
BUILTIN_NAMES = frozenset(dir(builtins))
# builtins that only compute from their arguments (no I/O, no attribute or namespace
# access by name, no code from text, no import): what a pure template may call
PURE_BUILTINS = frozenset((
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset",
    "hash", "hex", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max",
    "min", "next", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "zip", "True", "False", "None", "Ellipsis",
    "NotImplemented",
)) | frozenset(name for name in BUILTIN_NAMES
               if isinstance(getattr(builtins, name), type)
               and issubclass(getattr(builtins, name), BaseException))
_PURE_NODES = (
    ast.Module, ast.Expr, ast.Assert, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Lambda,
    ast.IfExp, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.Compare, ast.Call, ast.FormattedValue, ast.JoinedStr,
    ast.Constant, ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple,
    ast.Slice, ast.Load, ast.Store, ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
    ast.comprehension, ast.arguments, ast.arg, ast.keyword,
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
    nodes = list(ast.walk(tree))
    # names bound inside: lambdas' parameters and comprehensions' targets, the only
    # places where something is stored (a target of names, tuples, lists, stars)
    targets = {id(n) for c in nodes if isinstance(c, ast.comprehension)
               for n in ast.walk(c.target)}
    bound = {n.arg for n in nodes if isinstance(n, ast.arg)}
    bound.update(n.id for n in nodes if isinstance(n, ast.Name) and id(n) in targets)
    for node in nodes:
        if not isinstance(node, _PURE_NODES) or (isinstance(node, ast.comprehension)
                                                 and node.is_async):
            return False
        ctx = getattr(node, "ctx", None)
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(ctx, ast.Load):
            return False
        if isinstance(ctx, ast.Store) and id(node) not in targets:
            return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return False
        if isinstance(node, ast.Name) and isinstance(ctx, ast.Load) \
                and node.id not in PURE_BUILTINS and node.id != UNIT and node.id not in bound:
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
