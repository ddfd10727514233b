"""How a generated record (``handoff_core._records``) is made from a result's JSON, and what
one does beyond holding its fields, written by hand: each record derives from ``_Record``, and
from the class of its name here when there is one."""

from __future__ import annotations

import builtins
import copy
import importlib
import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, ClassVar, Optional, TypeVar

_R = TypeVar("_R", bound="_Record")

#: An RFC 3339 time as the core writes it.
_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _time(text: str) -> datetime:
    """An RFC 3339 time as an aware ``datetime`` in UTC (to the microsecond, as Python keeps it)."""
    found = _TIME.match(text)
    if found is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    *parts, fraction, zone = found.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    offset = timezone.utc
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    year, month, day, hour, minute, second = (int(p) for p in parts)
    at = datetime(year, month, day, hour, minute, second, micros, tzinfo=offset)
    return at.astimezone(timezone.utc)


def _record(name: str) -> type[_Record]:
    """The generated record ``name``, looked up when a value is read (the records are defined
    after this module, and one may hold another defined further down)."""
    record: type[_Record] = getattr(importlib.import_module("handoff_core._records"), name)
    return record


def _one(name: str) -> Callable[[Any], Any]:
    """Reads a nested record."""
    return lambda value: _record(name)._of(value)


def _many(name: str) -> Callable[[Any], Any]:
    """Reads a list of nested records."""
    return lambda values: [_record(name)._of(value) for value in values]


class _Record:
    """A plain read-only record: one attribute per field, ``to_dict()`` its JSON, equal to
    another of its class with the same fields."""

    __slots__ = ("_json",)
    _json: dict[str, Any]
    _convert: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    _defaults: ClassVar[dict[str, Any]] = {}

    @classmethod
    def _of(cls: type[_R], data: dict[str, Any]) -> _R:
        """The record of ``data``, the result's JSON."""
        record = object.__new__(cls)
        object.__setattr__(record, "_json", data)
        for name in cls.__slots__:
            value = data.get(name, copy.deepcopy(cls._defaults.get(name)))
            convert = cls._convert.get(name)
            object.__setattr__(record, name, value if convert is None or value is None else convert(value))
        return record

    @classmethod
    def _many(cls: type[_R], data: builtins.list[dict[str, Any]]) -> builtins.list[_R]:
        return [cls._of(item) for item in data]

    @classmethod
    def _maybe(cls: type[_R], data: Optional[dict[str, Any]]) -> Optional[_R]:
        return None if data is None else cls._of(data)

    def to_dict(self) -> dict[str, Any]:
        """Every field as a ``dict``, as JSON has it (times as RFC 3339 text)."""
        return copy.deepcopy(self._json)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: {name} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: {name} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._json == other._json

    def __hash__(self) -> int:
        return hash(json.dumps(self._json, sort_keys=True))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self)._of, (self._json,))


class CheckReport:
    __slots__ = ()
    damage: Sequence[object]

    def is_clean(self) -> bool:
        """Whether the check found nothing damaged."""
        return not self.damage
