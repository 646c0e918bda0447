"""The wheel holds the product and nothing else: the four packages (with the pages' templates), no ``studies/``, no
``perf/`` (the perf suite, the GPU check), no ``tests/`` (nor its test servers), and none of the modules that left
the packages (the study pipelines, the shims, the dead legacy page, the perf suite, the test servers).

The wheel is built from a copy of the checkout in a tmp folder (``python -m build --wheel --no-isolation``; setuptools
writes its ``build/`` and ``*.egg-info`` beside the sources, so the checkout itself is left alone)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.test_import_graph import PACKAGES

ROOT = Path(__file__).resolve().parents[1]
#: modules that are not part of the product any more (each study's code is in studies/ or archived there)
REMOVED = (
    "benchmarks/suite.py",
    "benchmarks/perf_scale.py",
    "benchmarks/retrieval_compare.py",
    "benchmarks/retrieval_load.py",
    "benchmarks/retrieval_servers.py",
    "benchmarks/pages/legacy.py",
    "benchmarks/actguide_regions.py",
    "benchmarks/actguide_alignment.py",
    "benchmarks/harness/actguide_regions_doc.py",
    "benchmarks/harness/actguide_schedule_doc.py",
    "benchmarks/pages/actguide_regions.py",
    "benchmarks/pages/actguide_schedule.py",
    "benchmarks/headroom.py",
    "benchmarks/reader_auc.py",
    "benchmarks/handoff_credit.py",
    "benchmarks/perf/__init__.py",
    "benchmarks/perf/suite.py",
    "benchmarks/gpu_check.py",
    # the test servers (tests/servers/)
    "steer_envs/llm/openai_server.py",
    "steer_envs/llm/latency_server.py",
)


def build_wheel(tmp_path: Path) -> list[str]:
    """Build the wheel of a copy of the checkout's sources; the names of the files inside it."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", ".mypy_cache", ".pytest_cache")
    for folder in (*PACKAGES, "studies", "perf", "tests"):
        shutil.copytree(ROOT / folder, src / folder, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    dist = tmp_path / "dist"
    # --skip-dependency-check: the build backend's requirements are what is installed here (no download)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--skip-dependency-check",
            "--outdir",
            str(dist),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_the_product_and_no_study(tmp_path):
    names = build_wheel(tmp_path)
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES)
    assert not [n for n in names if n.startswith(("studies/", "perf/", "tests/"))]
    assert not sorted(set(REMOVED) & set(names))
    assert {
        "benchmarks/cli.py",
        "benchmarks/harness/runner.py",
        "benchmarks/pages/builder.py",
        "benchmarks/pages/templates/results_links.md",
    } <= set(names)
