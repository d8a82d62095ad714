"""Speed of reading, rendering and checking upstream vLLM recipes, against the upstream renderer.

1. Render all: every (recipe, variant, offered single-node strategy, listed hardware) of the corpus with
   the default features, in-process, reading the checkout included (target < 2 s); the peer is the
   upstream renderer (``oracle/command-synthesis.js`` under node + js-yaml) rendering the same selections
   in its own process, timed inside that process (its YAML loading included, node's start-up not).
2. Whole-catalog check, cold: ``infx recipes check --brief`` over every single-node vLLM row of the
   InferenceX corpus, as a fresh process with empty caches (every bench script rendered in its sandbox;
   target < 30 s); the peer is the upstream renderer rendering the recipe selections of those rows,
   wall time of its process (node start-up included).

Both figures are printed with their ratio to the peer measured in the same run.

    .venv/bin/python benchmarks/recipes_speed.py [--shared ../shared] [--node-cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def oracle(corpus: Path, cache: Path, jobs: list[dict]) -> tuple[list[dict], float, float]:
    t0 = time.perf_counter()
    r = subprocess.run(["node", str(HARNESS), str(corpus / "oracle" / "command-synthesis.js"), str(cache), str(corpus)],
                       input=json.dumps(jobs), capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    out = json.loads(r.stdout)
    return out["results"], out["ms"] / 1000, wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("INFX_SHARED", ROOT / ".." / "shared")))
    ap.add_argument("--node-cache", type=Path,
                    default=Path(os.environ.get("INFX_NODE_CACHE", Path.home() / ".cache" / "infx" / "node-js-yaml")))
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
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "infx", "recipes", "check", "--json"], cwd=ws, env=env,
                           capture_output=True, text=True)
        t_check = time.perf_counter() - t0
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
            return 2
        data = json.loads(r.stdout)
    s = data["summary"]
    sel_jobs = [{"recipe": p["selection"]["recipe_path"], "variant": p["selection"]["variant"],
                 "strategy": p["selection"]["strategy"], "hardware": p["selection"]["hardware"],
                 "features": p["selection"]["features"], "modes": p["selection"]["modes"]}
                for p in data["points"] if p["selection"]]
    _, _, w_oracle = oracle(corpus, cache, sel_jobs)
    print(f"whole-catalog check, cold: {s['points']} points of {s['entries']} entries, {s['matched']} matched, "
          f"{s['must_match_errors']} must-match errors, {s['warnings']} warnings, in {t_check:.2f} s wall "
          f"(target < 30 s; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}); "
          f"upstream renderer rendering the same {len(sel_jobs)} selections: {w_oracle:.2f} s wall; "
          f"ratio infx/upstream {t_check / w_oracle:.1f}")
    return 0 if t_infx < 2 and t_check < 30 else 1


if __name__ == "__main__":
    raise SystemExit(main())
