"""Regenerate ``BENCHMARKS.md``: one command runs every perf benchmark the page reports in one pytest run and renders
every section from that run's figures, with the machine, the commit, the load before and after and the wall time.

Run: ``python -m perf.suite`` (quick workloads) or ``python -m perf.suite --full`` (the
acceptance rows: q(s) labelling on more states, the steering trainer at its acceptance config, longer vector and
engine runs). Ratios are measured side by side in the same run. Speed-ups need idle cores: the page records the
load average before and after, so a figure taken on a busy machine says so.

* The files run are the ones the page's sections name (:func:`perf.sections.suite_files`).
* Some sections need an optional piece (:data:`perf.optional.PIECES`: vLLM's CPU build, about 3.5 GB).
  ``--install`` installs what is missing before the run; without it, those benchmarks skip and their sections say
  "not measured in this run" with the reason and the command that measures them.
* The page names the commit its figures come from, so the tree must be clean (``--allow-dirty`` renders anyway and
  says so on the page).
* The run's record (context, pytest-benchmark's JSON, every test's outcome) is kept (``--json``; by default
  ``docs/results/perf/suite.json``, committed with the page so it rebuilds from the repository alone), and
  ``--from-json FILE`` renders a kept record again without running anything.
* The page's last section is the kept GPU check (``docs/results/perf/gpu_check.json``, written by
  ``python -m perf.gpu_check`` on a GPU machine; :mod:`perf.gpu_section`), dated on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .gpu_section import read_gpu_record
from .optional import INSTALL_ENV, PIECES
from .outcomes import OUTCOMES_ENV
from .page import Machine, RunContext, SuiteRun, render_page
from .perf_scale import SCALE_ENV
from .sections import SECTIONS, suite_files

REPO = Path(__file__).resolve().parents[1]
#: where the run's record is kept: beside the GPU record, committed with the page it renders
SUITE_RECORD = REPO / "docs" / "results" / "perf" / "suite.json"
#: the libraries whose speed the figures depend on, listed with their versions in the page's header
VERSIONED = ("numpy", "bm25s", "torch", "transformers", "gymnasium", "fastapi", "uvicorn", "ray")


def machine() -> Machine:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    versions = {}
    for module in VERSIONED:
        try:
            versions[module] = str(__import__(module).__version__)
        except Exception:  # noqa: BLE001 - an optional extra missing is just not listed
            pass
    return Machine(cpu, os.cpu_count() or 1, round(mem, 1), platform.platform(), platform.python_version(), versions)


def commit() -> str:
    """The tree's code version now (not cached: the run compares its start with its end)."""
    from benchmarks.harness.provenance import code_version

    code_version.cache_clear()
    return code_version()


def optional_pieces(install: bool) -> dict[str, str]:
    """Each optional piece's state for the page's header, installing the missing ones when ``install``."""
    states = {}
    for piece in PIECES.values():
        why = piece.missing()
        if why is None:
            states[piece.name] = "present"
        elif not install:
            states[piece.name] = (
                f"missing: {why}, and its sections say so (install it with `{piece.install_command}`, or run the "
                "suite with `--install`)"
            )
        else:
            start = time.perf_counter()
            try:
                piece.install()
                states[piece.name] = f"installed by this run ({(time.perf_counter() - start) / 60:.1f} min)"
            except Exception as exc:  # noqa: BLE001 - a failed install leaves its sections unmeasured, not the page
                states[piece.name] = f"install failed ({type(exc).__name__}: {str(exc)[:200]})"
    return states


def run_pytest(scale: str, select: str | None, install: bool, folder: Path) -> tuple[int, dict, dict]:
    """One pytest run over every suite file; its exit code, pytest-benchmark's JSON and the tests' outcomes."""
    benchmark_json, outcomes_json = folder / "benchmarks.json", folder / "outcomes.json"
    cmd = [
        *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "perf.outcomes"),
        *("--benchmark-enable", f"--benchmark-json={benchmark_json}", "-o", "addopts="),
        *suite_files(),
        *(("-k", select) if select else ()),
    ]
    env = {
        **os.environ,
        SCALE_ENV: scale,
        OUTCOMES_ENV: str(outcomes_json),
        INSTALL_ENV: "1" if install else "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    status = subprocess.run(cmd, cwd=REPO, env=env).returncode
    benchmarks = json.loads(benchmark_json.read_text()) if benchmark_json.exists() else {"benchmarks": []}
    outcomes = json.loads(outcomes_json.read_text()) if outcomes_json.exists() else {}
    return status, benchmarks, outcomes


def run_suite(args: argparse.Namespace, command: str) -> SuiteRun:
    scale = "full" if args.full else "quick"
    load_before, started = os.getloadavg(), time.perf_counter()
    code = commit()
    optional = optional_pieces(args.install)
    with tempfile.TemporaryDirectory(prefix="steer_envs_perf_") as tmp:
        status, benchmarks, outcomes = run_pytest(scale, args.select, args.install, Path(tmp))
    context = RunContext(
        command=command,
        scale=scale,
        date=time.strftime("%Y-%m-%d"),
        commit=code,
        commit_after=commit(),
        machine=machine(),
        load_before=tuple(round(v, 2) for v in load_before),
        load_after=tuple(round(v, 2) for v in os.getloadavg()),
        wall_s=round(time.perf_counter() - started, 1),
        pytest_exit=status,
        optional=optional,
    )
    return SuiteRun.from_parts(context, benchmarks, outcomes)


def _command(args: argparse.Namespace) -> str:
    flags = [" --full" if args.full else "", " --install" if args.install else ""]
    select = f" -k '{args.select}'" if args.select else ""
    return "python -m perf.suite" + "".join(flags) + select


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m perf.suite", description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the acceptance workloads (the longer run)")
    parser.add_argument("--install", action="store_true", help="install missing optional pieces (vLLM) first")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument(
        "--json", type=Path, default=None, help="keep the run's record here (default: docs/results/perf/suite.json)"
    )
    parser.add_argument("--from-json", type=Path, default=None, help="render a kept record; run nothing")
    parser.add_argument("--allow-dirty", action="store_true", help="run on a tree with uncommitted changes")
    parser.add_argument("-k", dest="select", default=None, help="run only the benchmarks matching (pytest -k)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.from_json:
        run = SuiteRun.from_json(json.loads(args.from_json.read_text(encoding="utf-8")))
        args.out.write_text(render_page(run, SECTIONS, read_gpu_record()), encoding="utf-8")
        print(f"wrote {args.out} from {args.from_json}")
        return 0
    if commit().endswith("+dirty") and not args.allow_dirty:
        print(
            "the tree has uncommitted changes: commit them (the page names the commit its figures come from), or "
            "pass --allow-dirty to render anyway",
            file=sys.stderr,
        )
        return 2
    run = run_suite(args, _command(args))
    record = args.json or SUITE_RECORD
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(run.to_json(), indent=1), encoding="utf-8")
    args.out.write_text(render_page(run, SECTIONS, read_gpu_record()), encoding="utf-8")
    status = run.context.pytest_exit
    print(f"wrote {args.out} and {record} in {run.context.wall_s / 60:.1f} min (pytest exit code {status})")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
