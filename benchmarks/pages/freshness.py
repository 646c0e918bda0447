"""What to remeasure before a release: ``python -m benchmarks.pages.freshness``.

Lists each summary the README's headline quotes (``--all``: every committed summary) with its commit(s) and whether
the files its runs loaded changed since (:mod:`.summary_freshness`), and exits 1 when one is stale. It sits apart from
the check itself because it asks :mod:`.headline` what the README quotes, and the headline asks the check.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .headline import sources as headline_sources
from .summary_freshness import Freshness, committed_summaries, freshness


def report(results: Sequence[Freshness]) -> str:
    lines = ["| summary | commit(s) | current | why not |", "| --- | --- | --- | --- |"]
    for r in results:
        commits = ", ".join(r.commits) or "—"
        changed = f" ({', '.join(r.changed[:3])}{', ...' if len(r.changed) > 3 else ''})" if r.changed else ""
        lines.append(f"| {r.source} | {commits} | {'yes' if r.current else 'no'} | {r.why}{changed} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pages.freshness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every committed summary, not only those the README quotes")
    args = parser.parse_args(argv)
    if args.all:
        sources = committed_summaries()
    else:
        sources = headline_sources()
    results = [freshness(s) for s in sources]
    print(report(results))
    stale = [r for r in results if not r.current]
    print(
        f"\n{len(results) - len(stale)} of {len(results)} current; remeasure the others with the command each records"
    )
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
