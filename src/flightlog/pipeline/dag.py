"""Dependency order of steps, and the cycle that prevents one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flightlog.errors import InvalidInput

__all__ = ["topological_order", "find_cycle"]


def topological_order(needs: Mapping[str, Sequence[str]]) -> list[str]:
    """Steps so that each comes after what it needs; ties keep the declared order.

    Raises InvalidInput naming the cycle (``a -> b -> a``) when there is none.
    """
    remaining = {name: [d for d in deps if d in needs] for name, deps in needs.items()}
    done: list[str] = []
    placed: set[str] = set()
    while remaining:
        ready = [n for n, deps in remaining.items() if all(d in placed for d in deps)]
        if not ready:
            cycle = find_cycle(remaining) or sorted(remaining)
            raise InvalidInput(f"the steps form a cycle: {' -> '.join(cycle)}; remove one of these dependencies")
        for n in ready:
            done.append(n)
            placed.add(n)
            del remaining[n]
    return done


def find_cycle(needs: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in needs.get(node, ()):
            if dep not in needs:
                continue
            if state.get(dep) == 1:
                start = path.index(dep)
                return [*path[start:], dep]
            if state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in needs:
        if state.get(node) is None:
            found = visit(node)
            if found:
                return list(reversed(found))  # in the direction work flows: a -> b means b needs a
    return None
