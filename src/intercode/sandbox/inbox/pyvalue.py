"""Strictly typed JSON for the values of an agent's function (see ``pyscore``).

``encode`` runs in the agent's process and turns plain data into JSON: ``None``, ``bool``,
``int``, ``float`` and ``str`` as themselves, a ``list`` as a JSON array, and tagged
objects ``{"t": tag, "v": ...}`` for tuple, dict, set, frozenset, complex, bytes,
bytearray, big ints, ``Fraction``, ``Decimal`` and modules. A type is plain data only if
it is exactly one of these (``type(x) is int``), or a subclass that keeps the base type's
comparisons (a namedtuple, ``class L(list): pass``), or ``OrderedDict``, ``defaultdict``
and ``Counter`` (sent as dicts; they compare with a dict as a dict does). Anything else
(a custom ``__eq__``, a generator, a value that contains itself, one deeper than
``MAX_DEPTH``, with more than ``MAX_ITEMS`` items or larger than the reply's budget) is
``opaque``: in the judge it equals nothing but itself.

``decode`` runs in the judge and builds only builtin values from that JSON; whatever the
JSON says, it can only describe a value the agent's function could have returned.
"""

import json
import sys

MAX_DEPTH = 100
MAX_ITEMS = 20000
BIG_INT_BITS = 12000  # past this, ints travel as hex (str() of them is limited)
COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__")
PLAIN = (list, tuple, dict, set, frozenset, int, float, complex, str, bytes, bytearray)
PURE_MODULES = frozenset((  # modules a test may use that only compute when imported
    "math", "cmath", "re", "itertools", "collections", "functools", "operator", "heapq",
    "bisect", "string", "statistics", "decimal", "fractions", "datetime", "array", "copy",
    "numbers", "struct", "unicodedata", "textwrap", "random"))
TAGS = {tuple: "tuple", set: "set", frozenset: "frozenset", bytes: "bytes",
        bytearray: "bytearray", complex: "complex"}


class Budget:
    """Bytes of JSON that the values of one reply may still take."""

    def __init__(self, size):
        self.left = size


class TooLarge(Exception):
    """The value is not sent: too deep, too many items, or over the budget."""


def _plain_base(value):
    """The builtin type whose comparisons ``value`` keeps, or None."""
    cls = type(value)
    if cls in PLAIN or cls is bool or value is None:
        return cls
    collections = sys.modules.get("collections")
    if collections is not None and cls in (collections.OrderedDict, collections.defaultdict,
                                           collections.Counter):
        return dict
    for base in PLAIN:
        if isinstance(value, base):
            same = all(getattr(cls, name, None) is getattr(base, name, None)
                       for name in COMPARISONS)
            return base if same else None
    return None


def _exact_class(value, module, name):
    mod = sys.modules.get(module)
    return mod is not None and type(value) is getattr(mod, name, None)


def _opaque(value, why):
    name = getattr(type(value), "__name__", "object")
    return {"t": "opaque", "type": name if type(name) is str else "object", "why": why}


class _Encoder:
    def __init__(self):
        self.items = 0
        self.path = set()

    def value(self, v, depth):
        self.items += 1
        if self.items > MAX_ITEMS:
            raise TooLarge("more than %d items" % MAX_ITEMS)
        base = _plain_base(v)
        if base is None:
            return self.other(v)
        if base in (type(None), bool, float, str):
            return base(v) if v is not None else None
        if base is int:
            v = int.__index__(v)
            return v if v.bit_length() <= BIG_INT_BITS else {"t": "int", "v": hex(v)}
        if base in (bytes, bytearray):
            return {"t": TAGS[base], "v": base(v).hex()}
        if base is complex:
            return {"t": "complex", "v": [complex.__getattribute__(v, "real"),
                                          complex.__getattribute__(v, "imag")]}
        return self.container(v, base, depth)

    def container(self, v, base, depth):
        if depth >= MAX_DEPTH:
            raise TooLarge("nested deeper than %d" % MAX_DEPTH)
        if id(v) in self.path:
            raise TooLarge("a value that contains itself")
        self.path.add(id(v))
        try:
            if base is dict:
                pairs = [[self.value(k, depth + 1), self.value(x, depth + 1)]
                         for k, x in dict.items(v)]
                return {"t": "dict", "v": pairs}
            items = [self.value(x, depth + 1) for x in base.__iter__(v)]
            return items if base is list else {"t": TAGS[base], "v": items}
        finally:
            self.path.discard(id(v))

    def other(self, v):
        if _exact_class(v, "fractions", "Fraction"):
            return {"t": "fraction", "v": [hex(v.numerator), hex(v.denominator)]}
        if _exact_class(v, "decimal", "Decimal"):
            return {"t": "decimal", "v": str(v)}
        module_type = type(sys)
        if type(v) is module_type and sys.modules.get(getattr(v, "__name__", None)) is v:
            return {"t": "module", "v": v.__name__}
        return _opaque(v, "not plain data")


def encode(value, budget):
    """The typed JSON form of ``value`` (opaque when it is not plain data or too large)."""
    try:
        data = _Encoder().value(value, 0)
        size = len(json.dumps(data))
    except TooLarge as exc:
        return _opaque(value, str(exc))
    except Exception:  # the value's own code failed while it was read
        return _opaque(value, "could not be read")
    if size > budget.left:
        return _opaque(value, "larger than the reply's budget")
    budget.left -= size
    return data


# -- decode (in the judge) ---------------------------------------------------------------

class Opaque:
    """A value that is not plain data: equal only to itself."""

    __slots__ = ()

    def __repr__(self):
        return "<%s object>" % type(self).__name__


_OPAQUE_TYPES = {}


def _opaque_value(name):
    if type(name) is not str or not name.isidentifier() or len(name) > 100:
        name = "object"
    cls = _OPAQUE_TYPES.get(name)
    if cls is None:
        cls = _OPAQUE_TYPES[name] = type(name, (Opaque,), {"__slots__": ()})
    return cls()


def _module(name):
    """A module the agent's name stands for: one already loaded here or a pure one."""
    if type(name) is not str or (name not in sys.modules and name not in PURE_MODULES):
        return _opaque_value("module")
    import importlib
    try:
        return importlib.import_module(name)
    except Exception:
        return _opaque_value("module")


# tags whose decoding builds builtin data and nothing else (a module value is imported,
# an opaque type is cached, Decimal and Fraction import a module)
PLAIN_TAGS = frozenset(("tuple", "set", "frozenset", "dict", "bytes", "bytearray", "int",
                        "complex"))


def plain_data(data, depth=0):
    """Whether :func:`decode` of ``data`` builds builtin data only (and leaves nothing
    behind in this interpreter: no import, no cached type)."""
    if data is None or type(data) in (bool, int, float, str):
        return True
    if depth > MAX_DEPTH:
        return False
    if type(data) is list:
        return all(plain_data(x, depth + 1) for x in data)
    if type(data) is not dict or type(data.get("t")) is not str \
            or data["t"] not in PLAIN_TAGS:  # (a list for a tag: unhashable)
        return False
    v = data.get("v")
    if data["t"] == "dict":
        return type(v) is list and all(
            type(p) is list and all(plain_data(x, depth + 1) for x in p) for p in v)
    if data["t"] in ("tuple", "set", "frozenset"):
        return type(v) is list and all(plain_data(x, depth + 1) for x in v)
    return True  # bytes, bytearray, int, complex: a scalar (or malformed: not understood)


def decode(data, depth=0):
    """Build the builtin value that ``data`` describes (ValueError if it is malformed)."""
    if depth > MAX_DEPTH + 1:
        raise ValueError("nested too deep")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(x, depth + 1) for x in data]
    if type(data) is not dict:
        raise ValueError("not a typed value")
    tag, v = data.get("t"), data.get("v")
    if tag == "opaque":
        return _opaque_value(data.get("type"))
    if tag in ("tuple", "set", "frozenset"):
        if type(v) is not list:
            raise ValueError("not a list")
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](
            decode(x, depth + 1) for x in v)
    if tag == "dict":
        if type(v) is not list or not all(type(p) is list and len(p) == 2 for p in v):
            raise ValueError("not a list of pairs")
        return {decode(k, depth + 1): decode(x, depth + 1) for k, x in v}
    return _scalar(tag, v)


def _scalar(tag, v):
    if tag in ("bytes", "bytearray") and type(v) is str:
        return (bytes if tag == "bytes" else bytearray).fromhex(v)
    if tag == "int" and type(v) is str:
        return int(v, 16)
    if tag == "complex" and type(v) is list and len(v) == 2 \
            and all(type(x) in (int, float) for x in v):
        return complex(v[0], v[1])
    if tag == "fraction" and type(v) is list and len(v) == 2 and all(type(x) is str for x in v):
        from fractions import Fraction
        return Fraction(int(v[0], 16), int(v[1], 16))
    if tag == "decimal" and type(v) is str:
        from decimal import Decimal
        return Decimal(v)
    if tag == "module":
        return _module(v)
    raise ValueError("unknown type tag")
