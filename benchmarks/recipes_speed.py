"""Speed of reading, rendering and checking upstream vLLM recipes, against the upstream renderer.

1. Render all: every (recipe, variant, offered single-node strategy, listed hardware) of the corpus with
   the default features, in-process, reading the checkout included (target < 2 s); the peer is the
   upstream renderer (``oracle/command-synthesis.js`` under node + js-yaml) rendering the same selections
   in its own process, timed inside that process (its YAML loading included, node's start-up not).
2. Whole-catalog check, cold: ``infx recipes check --json`` over every single-node vLLM row of the
   InferenceX corpus, as a fresh process with empty caches (every bench script rendered in its sandbox;
   target < 30 s); the peer is the upstream renderer rendering the recipe selections of those rows,
   wall time of its process (node start-up included). Printed with the CPU seconds it took (the process
   and, read by bash's ``times``, its sandboxes) and the 1-minute load average before and after: on a
   shared machine the wall time follows the load, the CPU much less.
3. ``--equality``: the scripts of those rows rendered again in this process, once on the serial path (one
   sandbox after another, in catalog order) and once in parallel (the default), each into an empty
   cache; every point's launch fingerprint (and its error, for a script that fails) must be the same.

Both timings are printed with their ratio to the peer measured in the same run.

    .venv/bin/python benchmarks/recipes_speed.py [--shared ../shared] [--node-cache DIR] [--equality]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infx.recipes.render import default_features, render, single_node_combinations  # noqa: E402
from infx.recipes.source import RecipeRepo  # noqa: E402

HARNESS = ROOT / "tests" / "recipes" / "oracle_render.mjs"


def js_yaml(cache: Path) -> Path:
    if not (cache / "node_modules" / "js-yaml" / "package.json").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(cache), "js-yaml@4.1.0"],
                       check=True, capture_output=True)
    return cache


def oracle(corpus: Path, cache: Path, jobs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float, float]:
    t0 = time.perf_counter()
    r = subprocess.run(["node", str(HARNESS), str(corpus / "oracle" / "command-synthesis.js"), str(cache), str(corpus)],
                       input=json.dumps(jobs), capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    out = json.loads(r.stdout)
    return out["results"], out["ms"] / 1000, wall


_SANDBOX_CPU = """
import atexit, sys
from infx.engines.scripts.sandbox import SANDBOX_CPU
atexit.register(lambda: print(f"SANDBOX_CPU {SANDBOX_CPU['seconds']:.3f}", file=sys.stderr))
from infx.cli import main
sys.argv = ["infx", *sys.argv[1:]]
main()
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def equality(ws: Path, tmp: Path) -> tuple[int, str]:
    """Launch fingerprints of every point of the whole-catalog check: serial path vs parallel."""
    from infx.diagnostics import InfxError
    from infx.engines.recipes import workspace_recipes
    from infx.engines.render import prefetch_scripts, render_launch
    from infx.matrix.select import keyed_points
    from infx.workspace import at

    w = at(ws)
    pts = [p for _, p in keyed_points(w.require_config_files(), w.runner_config, None)
           if p.framework == "vllm" and not p.multinode]
    prints: list[dict[str, str]] = []
    walls: list[float] = []
    for name, workers in (("serial", 1), ("parallel", None)):
        os.environ["INFX_CACHE_DIR"] = str(tmp / f"cache-{name}")
        recipes = workspace_recipes(None, w)
        assert recipes.scripts is not None
        recipes.scripts.workers = workers
        t0 = time.perf_counter()
        prefetch_scripts(pts, recipes)
        walls.append(time.perf_counter() - t0)
        fp: dict[str, str] = {}
        for p in pts:
            try:
                fp[p.point_id] = render_launch(p, recipes, runtime="docker", port=8000).fingerprint
            except InfxError as exc:
                fp[p.point_id] = f"error: {exc.diagnostics[0]}"
        prints.append(fp)
    serial, parallel = prints
    differ = sorted(k for k in serial if serial[k] != parallel.get(k))
    errors = sum(1 for v in serial.values() if v.startswith("error"))
    return len(differ), (f"equality: {len(serial)} single-node vLLM points ({errors} with a script error), "
                         f"serial path {walls[0]:.1f} s, parallel {walls[1]:.1f} s: {len(serial) - len(differ)} "
                         f"launch fingerprints equal, {len(differ)} differ"
                         + (f" ({', '.join(differ[:5])}...)" if differ else ""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("INFX_SHARED", ROOT / ".." / "shared")))
    ap.add_argument("--node-cache", type=Path,
                    default=Path(os.environ.get("INFX_NODE_CACHE", Path.home() / ".cache" / "infx" / "node-js-yaml")))
    ap.add_argument("--equality", action="store_true",
                    help="also render every row's script serially and in parallel and compare the launches")
    args = ap.parse_args()
    corpus = (args.shared / "compat" / "vllm-recipes").resolve()
    ix = (args.shared / "compat" / "inferencex").resolve()
    cache = js_yaml(args.node_cache)

    # 1. render all, in process
    t0 = time.perf_counter()
    repo = RecipeRepo(corpus)
    sels = []
    for lr in repo.all_recipes():
        for s in single_node_combinations(repo, lr):
            sels.append(s.model_copy(update={"features": default_features(lr.recipe, s.variant, s.hardware)}))
    mine = [render(repo, s) for s in sels]
    t_infx = time.perf_counter() - t0
    jobs = [{"recipe": s.recipe_path, "variant": s.variant, "strategy": s.strategy, "hardware": s.hardware,
             "features": s.features, "modes": s.modes} for s in sels]
    theirs, t_oracle, _ = oracle(corpus, cache, jobs)
    same = sum(o == {"argv": m.argv, "env": m.env, "image": m.docker_image} for m, o in zip(mine, theirs, strict=True))
    print(f"render all: {len(sels)} renderings ({same} equal to upstream's) in {t_infx:.3f} s in-process "
          f"(target < 2 s); upstream renderer {t_oracle:.3f} s in-process; ratio infx/upstream "
          f"{t_infx / t_oracle:.2f}")

    # 2. whole-catalog check, cold (fresh process, empty caches)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "configs").mkdir(parents=True)
        for f in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
            shutil.copy(ix / f, ws / "configs" / f)
        (ws / "benchmarks").symlink_to(ix / "benchmarks")
        (ws / "infx.toml").write_text(f'[recipes]\npath = "{corpus}"\n')
        env = {**os.environ, "INFX_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONPATH": str(ROOT)}
        load0 = os.getloadavg()[0]
        c0, t0 = _children_cpu(), time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _SANDBOX_CPU, "recipes", "check", "--json"], cwd=ws, env=env,
                           capture_output=True, text=True)
        t_check, cpu_check = time.perf_counter() - t0, _children_cpu() - c0
        load1 = os.getloadavg()[0]
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
            return 2
        cpu_check += sum(float(ln.split()[1]) for ln in r.stderr.splitlines() if ln.startswith("SANDBOX_CPU "))
        data = json.loads(r.stdout)
        differ, eq_line = equality(ws, Path(tmp)) if args.equality else (0, "")
    s = data["summary"]
    sel_jobs = [{"recipe": p["selection"]["recipe_path"], "variant": p["selection"]["variant"],
                 "strategy": p["selection"]["strategy"], "hardware": p["selection"]["hardware"],
                 "features": p["selection"]["features"], "modes": p["selection"]["modes"]}
                for p in data["points"] if p["selection"]]
    _, _, w_oracle = oracle(corpus, cache, sel_jobs)
    print(f"whole-catalog check, cold: {s['points']} points of {s['entries']} entries, {s['matched']} matched, "
          f"{s['must_match_errors']} must-match errors, {s['warnings']} warnings, in {t_check:.2f} s wall, "
          f"{cpu_check:.1f} s CPU (target < 30 s wall; {os.cpu_count()} cores, load average {load0:.1f} before, "
          f"{load1:.1f} after); upstream renderer rendering the same {len(sel_jobs)} selections: {w_oracle:.2f} s "
          f"wall; ratio infx/upstream {t_check / w_oracle:.1f}")
    if eq_line:
        print(eq_line)
    return 0 if t_infx < 2 and t_check < 30 and not differ else 1


if __name__ == "__main__":
    raise SystemExit(main())
