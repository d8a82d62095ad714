// Test harness: renders selections with the upstream renderer (the oracle), for comparison with infx.
// Usage: node oracle_render.mjs ORACLE_JS JS_YAML_DIR RECIPES_DIR < jobs.json > renderings.json
// A job: {recipe, variant, strategy, hardware, features, modes}; a result: {argv, env, image} or {error}.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [oraclePath, yamlDir, recipesDir] = process.argv.slice(2);
const require = createRequire(path.join(yamlDir, "node_modules", "x.js"));
const yaml = require("js-yaml");
const oracle = await import(pathToFileURL(oraclePath).href);

const load = (rel) => yaml.load(fs.readFileSync(path.join(recipesDir, rel), "utf8"));
const taxonomy = load("taxonomy.yaml");
const strategies = {};
for (const dir of ["strategies", "kv_store"]) {
  const d = path.join(recipesDir, dir);
  if (!fs.existsSync(d)) continue;
  for (const f of fs.readdirSync(d).filter((n) => n.endsWith(".yaml")).sort()) {
    const s = load(path.join(dir, f));
    strategies[s.name || f.replace(/\.yaml$/, "")] = s;
  }
}
const recipes = {};
const jobs = JSON.parse(fs.readFileSync(0, "utf8"));
const t0 = process.hrtime.bigint();
const out = jobs.map((j) => {
  try {
    const recipe = recipes[j.recipe] ??= load(j.recipe);
    const r = oracle.resolveCommand(recipe, j.variant, j.strategy, j.hardware, j.features, strategies, taxonomy,
      [], 1, null, j.modes || {});
    const variant = recipe.variants?.[j.variant] || recipe.variants?.default || {};
    const meta = oracle.computeDockerMeta(recipe, variant, taxonomy.hardware_profiles[j.hardware], j.hardware);
    const env = Object.fromEntries(Object.entries(r.env || {}).map(([k, v]) => [k, String(v)]));
    return { argv: r.argv, env, image: meta.image ?? null };
  } catch (e) {
    return { error: String(e && e.message || e) };
  }
});
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
process.stdout.write(JSON.stringify({ ms, results: out }));
