"""What a prediction record and an output distribution may keep: no secret and no personal
datum, in keys as in values, however deep (issue 31, item 6).

A serving record is built from what a model's callers send and what the model answers, and
either may carry a token or a customer's e-mail. Three rules, applied on the replica's
background thread before anything is buffered for the journal:

* **keys as well as values**: an output ``{"ghp_…": 0.9}`` or a categorical output
  ``"alice@example.com"`` becomes a key of the output distribution's counts, so keys pass the
  same checks as values;
* **inside allow-listed structures**: an allow-listed field keeps its shape, but under it a
  secret-named or personal-named key (``password``, ``national_id``, ``email``) keeps only a
  keyed hash of its value, and every string is scanned — secrets become redaction markers
  (the project's one redaction policy), personal data (e-mail addresses, national ids, card
  numbers, IBANs) becomes ``[email:3f2a…]``, a keyed hash that still joins equal values;
* **keyed hashes**: every hash is an HMAC-SHA256 under the project's serving key, which the
  store keeps and gives to writers of the project only (``GET /api/v1/serving/key``, or the
  store itself for an embedded one), never to readers — so a reader holding a record cannot
  test guesses (``sha256("alice@example.com")``) against it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Mapping
from typing import Any

import re2

from flightlog.redaction.names import is_secret_name, key_words

__all__ = ["MAX_VALUE_CHARS", "Scrubber", "is_personal_name"]

MAX_VALUE_CHARS = 2048  # an allow-listed value or an output longer than this as JSON is kept as its hash
_MAX_DEPTH = 32
_TEXTS = 4096  # short strings remembered scrubbed

_PERSONAL_WORDS = frozenset(
    {"email", "emails", "mail", "ssn", "passport", "iban", "phone", "telephone", "mobile", "dob", "birthdate",
     "birthday", "nationalid", "taxid", "surname", "lastname", "firstname", "fullname"}
)  # fmt: skip
_PERSONAL_PAIRS = frozenset(
    {("national", "id"), ("tax", "id"), ("card", "number"), ("credit", "card"), ("date", "birth"),
     ("social", "security"), ("account", "number"), ("e", "mail"), ("first", "name"), ("last", "name"),
     ("full", "name"), ("street", "address"), ("home", "address"), ("ip", "address"), ("id", "number")}
)  # fmt: skip


def is_personal_name(name: str) -> bool:
    """Whether a field named ``name`` holds a personal datum (``email``, ``national_id``, ``card_number``)."""
    words = [w for w in key_words(name) if w not in ("of", "the")]  # date_of_birth: (date, birth)
    if any(w in _PERSONAL_WORDS for w in words):
        return True
    return any(pair in _PERSONAL_PAIRS for pair in zip(words, words[1:], strict=False))


def _re(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _luhn(digits: str) -> bool:
    total, double = 0, False
    for ch in reversed(digits):
        d = ord(ch) - 48
        if double:
            d = d * 2 - 9 if d > 4 else d * 2
        total, double = total + d, not double
    return total % 10 == 0


def _iban(text: str) -> bool:
    moved = text[4:] + text[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


_MARKER = _re(r"\[REDACTED(?::([A-Za-z0-9_.:-]{1,100}))?\]")
# (kind, pattern, check of the match); RE2: linear in the text, whatever a caller sends
_PERSONAL = (
    ("email", _re(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}"), None),
    ("national_id", _re(r"\b\d{3}-\d{2}-\d{4}\b"), None),
    ("card", _re(r"\b\d(?:[ -]?\d){12,18}\b"), lambda m: _luhn(m.replace(" ", "").replace("-", ""))),
    ("iban", _re(r"\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b"), _iban),
)


class Scrubber:
    """The rules above for one replica: its HMAC key, its redactor (None: the project's own is
    not available, secrets are still caught by name) and its input allow-list."""

    def __init__(self, key: bytes, redactor: Any = None, allow: frozenset[str] = frozenset()) -> None:
        self.key = key
        self.redactor = redactor
        self.allow = allow
        self._texts: dict[str, str] = {}  # short strings seen before (labels, keys repeat): scrubbed once

    # ── hashes ─────────────────────────────────────────────────────────────
    def digest(self, value: Any) -> str:
        """HMAC-SHA256 (hex) of a value's canonical JSON under the project's key."""
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
        return hmac.new(self.key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def _tag(self, kind: str, value: str) -> str:
        return f"[{kind}:{self.digest(value)[:16]}]"

    # ── text ───────────────────────────────────────────────────────────────
    def text(self, value: str) -> str:
        """A string as a record may keep it: secrets as markers, personal data as keyed tags."""
        known = self._texts.get(value)
        if known is not None:
            return known
        clean = self._scrub(value)
        if len(value) <= 256:
            if len(self._texts) >= _TEXTS:
                self._texts.clear()
            self._texts[value] = clean
        return clean

    def _scrub(self, value: str) -> str:
        if self.redactor is not None:
            redacted = self.redactor.redact(value)
            if redacted != value:
                # [REDACTED:github_token] → [github_token:x3f2a…]: the same secret tags the same
                # (counts still join), and the tag does not read as a secret's name, so a
                # distribution keyed by it keeps its counts
                tag = "x" + self.digest(value)[:12]
                redacted = _MARKER.sub(lambda m: f"[{(m.group(1) or 'secret').replace(':', '_')}:{tag}]", redacted)
            value = redacted
        for kind, pattern, check in _PERSONAL:
            if kind == "email" and "@" not in value:
                continue

            def replace(m: Any, kind: str = kind, check: Any = check) -> str:
                found = m.group(0)
                return self._tag(kind, found) if check is None or check(found) else found

            value = pattern.sub(replace, _encodable(value))
        return value

    # ── structures ─────────────────────────────────────────────────────────
    def value(self, value: Any, depth: int = 0) -> Any:
        """``value`` with its keys and strings scrubbed, recursively; under a secret- or
        personal-named key only the keyed hash of what was there."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            if depth >= _MAX_DEPTH:
                return {"hmac": self.digest(value)}
            out: dict[str, Any] = {}
            for k, v in value.items():
                name = str(k)
                if is_secret_name(name) or is_personal_name(name):
                    out[self.text(name)] = {"hmac": self.digest(v)}
                else:
                    out[self.text(name)] = self.value(v, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            if depth >= _MAX_DEPTH:
                return {"hmac": self.digest(value)}
            return [self.value(v, depth + 1) for v in value]
        return value

    def clean(self, value: Any) -> Any:
        """A value (numpy's as lists and numbers) with its keys and strings scrubbed."""
        return self.value(_jsonable(value))

    def bounded(self, value: Any, *, clean: bool = False) -> Any:
        """A scrubbed value (``clean``: already scrubbed) kept as it is when small, else as a
        marker with its keyed hash and size."""
        if not clean:
            value = self.clean(value)
        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            if isinstance(value, float) and not math.isfinite(value):
                return str(value)
            text = json.dumps(value, separators=(",", ":"), default=str)
            value = json.loads(text)
        if len(text) > MAX_VALUE_CHARS:
            return {"hmac": self.digest(value), "chars": len(text)}
        return value

    def split_inputs(self, inputs: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """(allow-listed fields, scrubbed; {other field: keyed hash}); a non-mapping input is one
        field, ``input``. A field name itself is scrubbed too (a key can be a secret)."""
        if not isinstance(inputs, Mapping):
            if inputs is None:
                return {}, {}
            inputs = {"input": inputs}
        kept: dict[str, Any] = {}
        hashed: dict[str, str] = {}
        for key, value in inputs.items():
            name = str(key)
            if name in self.allow:
                kept[name] = self.bounded(value)
            else:
                hashed[self.text(name)] = self.digest(value)
        return kept, hashed


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        try:
            return value.tolist()
        except Exception:  # noqa: BLE001 - an odd object: kept as it is, its repr when written
            return value
    return value


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text
