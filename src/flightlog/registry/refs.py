"""Model references: ``models:/fraud@production``, ``models:/fraud/3``, ``fraud@champion``,
``fraud/3``, ``fraud:3`` or ``fraud`` (its latest version), parsed once for every surface that
takes one (the registry resolves every form the same way: one grammar)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flightlog.errors import InvalidInput
from flightlog.names import check_name_text

__all__ = ["AmbiguousModel", "FORMS", "ModelRef", "check_alias", "check_name", "parse_ref", "SCHEME"]

SCHEME = "models:/"
# fullmatch, never "^…$": "$" also matches before a final newline, and "fraud\n" is not "fraud"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_FORMS = "models:/NAME@ALIAS, models:/NAME/VERSION, NAME@ALIAS, NAME/VERSION, NAME:VERSION or NAME (its latest version)"
FORMS = _FORMS  # the forms, for messages elsewhere (attach() refusing a reference)


class AmbiguousModel(InvalidInput):
    """A model reference that several projects could mean (a 400, ``ambiguous_model``): an
    error naming them, never a silent pick. Here, where every surface that parses a reference
    (the HTTP client too) imports it, so a server's refusal comes back as this type."""

    code = "ambiguous_model"


@dataclass(frozen=True)
class ModelRef:
    name: str
    version: int | None = None
    alias: str | None = None

    def __str__(self) -> str:
        tail = f"@{self.alias}" if self.alias else f"/{self.version}" if self.version is not None else ""
        return f"{SCHEME}{self.name}{tail}"


def check_name(name: str, what: str = "model name") -> str:
    check_name_text(name, what)  # the rule every name keeps (flightlog.names), named in the refusal
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{what} {name!r} is not valid: use letters, digits, '_', '.' and '-' (up to 128, "
            "starting with a letter or digit)",
            details={"value": str(name)[:200]},
        )
    return name


def check_alias(alias: str) -> str:
    alias = alias[1:] if isinstance(alias, str) and alias.startswith("@") else alias
    check_name_text(alias, "alias")
    if not isinstance(alias, str) or not _ALIAS.fullmatch(alias):
        raise InvalidInput(
            f"alias {alias!r} is not valid: use letters, digits, '_' and '-' (up to 64, starting "
            "with a letter), e.g. production or champion",
            details={"value": str(alias)[:200]},
        )
    return alias


def parse_ref(ref: str) -> ModelRef:
    """A reference in any of its forms; InvalidInput naming the forms for anything else."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(f"a model reference is needed: {_FORMS}")
    check_name_text(ref, "model reference")
    text = ref
    if text.startswith(SCHEME):
        text = text[len(SCHEME) :]
    elif "://" in text or text.startswith("models:"):
        raise InvalidInput(f"{ref!r} is not a model reference: use {_FORMS}")
    if "@" in text:
        name, _, alias = text.partition("@")
        return ModelRef(_named(name, ref), alias=_aliased(alias, ref))
    if "/" in text or ":" in text:  # NAME/VERSION, or NAME:VERSION as serving code often writes it
        name, _, version = text.partition("/") if "/" in text else text.rpartition(":")
        if not version.isdigit() or int(version) < 1:
            raise InvalidInput(f"{ref!r}: the version must be a whole number from 1 (use {_FORMS})")
        return ModelRef(_named(name, ref), version=int(version))
    return ModelRef(_named(text, ref))


def _named(name: str, ref: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidInput(f"{ref!r} does not name a model: use {_FORMS}", details={"ref": ref[:200]})
    return name


def _aliased(alias: str, ref: str) -> str:
    if not _ALIAS.fullmatch(alias):
        raise InvalidInput(
            f"{ref!r}: {alias!r} is not an alias (letters, digits, '_' and '-', starting with a letter); use {_FORMS}",
            details={"ref": ref[:200]},
        )
    return alias
