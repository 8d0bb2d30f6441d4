"""Editing a run after the fact — name, tags, description — through the same idempotent ingest
as every writer, so it works on every backend. Shared by ``Client.edit_run`` and the API's
``POST /runs/{run}/edit``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.names import check_run_name
from flightlog.store.base import MetadataStore, ingest_one

__all__ = ["edit_run", "DESCRIPTION_TAG", "MAX_DESCRIPTION"]

#: the tag that holds a run's description (MLflow keeps it in a tag too, mlflow.note.content)
DESCRIPTION_TAG = "description"
MAX_DESCRIPTION = 10_000
MAX_TAG = 1000


def edit_run(
    store: MetadataStore,
    run_id: str,
    *,
    origin: str,
    name: str | None = None,
    description: str | None = None,
    tags: Mapping[str, Any] | None = None,
    remove_tags: Sequence[str] = (),
) -> None:
    """Rename, set and remove tags, set (or, with ``""``, remove) the description."""
    if name is None and description is None and not tags and not remove_tags:
        raise InvalidInput("nothing to change: give a name, a description, tags to set or tags to remove")
    changes: dict[str, Any] = {str(k): None for k in remove_tags}
    changes.update({str(k): str(v) for k, v in (tags or {}).items()})
    if description is not None:
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
            raise InvalidInput(f"a description is text of at most {MAX_DESCRIPTION} characters")
        changes[DESCRIPTION_TAG] = description.strip() or None
    for key, value in changes.items():
        if not key.strip() or len(key) > 200:
            raise InvalidInput(f"tag key {key[:40]!r}: use 1 to 200 characters")
        if value is not None and len(value) > MAX_TAG and key != DESCRIPTION_TAG:
            raise InvalidInput(f"tag {key!r}: a value is at most {MAX_TAG} characters")
    if name is not None:
        ingest_one(store, run_id, "run", origin=origin, name=check_run_name(name))
    if changes:
        ingest_one(store, run_id, "tags", origin=origin, data=changes)
