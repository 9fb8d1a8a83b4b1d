"""Each setting's allowed values, declared beside its default: `max_parallel: int = domain(1, ge=1)`.

Hydra checks a value's type; only the config dataclass knows that a probability lies in [0, 1] or that a
seed feeds numpy. `out_of_range` walks a config object (nested dataclasses and dicts of them included)
against those declarations, so a bad value is the user's one-line error before a run starts, not an
outage or a quiet misbehaviour halfway through it. A plugin's config dataclass declares its domains with
the same `domain(...)` and is checked the same way.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

DOMAIN_KEY = "researchbench.domain"  # where `domain()` keeps the Domain in a field's metadata


@dataclass(frozen=True)
class Domain:
    """The values a field allows: a finite number within the bounds given, or one of `one_of`.
    For a list field each item must fit, and `length` (when given) is its required length."""

    ge: Optional[float] = None
    gt: Optional[float] = None
    le: Optional[float] = None
    lt: Optional[float] = None
    one_of: tuple[str, ...] = ()
    length: Optional[int] = None

    def allows(self, value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return (self.length is None or len(value) == self.length) and all(self._item_ok(v) for v in value)
        return self._item_ok(value)

    def _item_ok(self, value: Any) -> bool:
        if self.one_of:
            return value in self.one_of
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        return ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
                and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))

    def describe(self, real: bool, is_list: bool = False) -> str:
        """What is allowed, in words: of numbers when `real`, else of integers (or of strings: `one_of`)."""
        if is_list:
            size = f"{self.length} " if self.length is not None else ""
            return f"a list of {size}{self._items(real, plural=True)}"
        return self._items(real, plural=False)

    def _items(self, real: bool, plural: bool) -> str:
        if self.one_of:
            return f"{'values among' if plural else 'one of'} {', '.join(self.one_of)}"
        noun = ("numbers" if plural else "a number") if real else ("integers" if plural else "an integer")
        low = (">=", self.ge) if self.ge is not None else (">", self.gt) if self.gt is not None else None
        high = ("<=", self.le) if self.le is not None else ("<", self.lt) if self.lt is not None else None
        if low and high and low[0] == ">=" and high[0] == "<=":
            return f"{noun} from {_show(low[1])} to {_show(high[1])}"
        bounds = [f"{side[0]} {_show(side[1])}" for side in (low, high) if side is not None]
        return f"{noun} {' and '.join(bounds)}" if bounds else f"finite {noun}" if real else noun


def domain(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING,
           ge: Optional[float] = None, gt: Optional[float] = None, le: Optional[float] = None,
           lt: Optional[float] = None, one_of: tuple[str, ...] = (), length: Optional[int] = None) -> Any:
    """A dataclass field with its default and the values it allows (kept in the field's metadata)."""
    allowed = Domain(ge=ge, gt=gt, le=le, lt=lt, one_of=tuple(one_of), length=length)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={DOMAIN_KEY: allowed})


def domain_of(field: dataclasses.Field) -> Optional[Domain]:
    """The field's declared domain, or None where it declares none."""
    return field.metadata.get(DOMAIN_KEY)


def out_of_range(config: Any, prefix: str = "") -> str:
    """The first value of `config` outside its field's declared domain, as one line
    `<key>=<value> is out of range: <what is allowed>`; "" when every value fits. None always fits
    (it means "not set"); nested dataclasses and dicts of them are walked with their keys."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return ""
    for field in dataclasses.fields(config):
        key, value = f"{prefix}{field.name}", getattr(config, field.name, None)
        allowed = domain_of(field)
        if allowed is not None and value is not None and not allowed.allows(value):
            unset = " (or null)" if field.default is None else ""
            what = allowed.describe("float" in str(field.type), isinstance(value, (list, tuple)))
            return f"{key}={_show(value)} is out of range: {what}{unset}"
        nested = value.items() if isinstance(value, dict) else [(None, value)]
        for name, item in nested:
            problem = out_of_range(item, f"{key}.{name}." if name is not None else f"{key}.")
            if problem:
                return problem
    return ""


def _show(value: Any) -> str:
    """A value as the command line writes it: 3 rather than 3.0, a list as [a, b]."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)
