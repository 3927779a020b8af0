#!/usr/bin/env node
// `npx cag ...` from a clone (after `npm ci`): runs the TypeScript through tsx, a devDependency,
// so no build is needed. Where tsx is not installed (production, `npm ci --omit=dev`), the built
// program runs instead: `npm run build` first, or call `node dist/src/cli/main.js` directly.
const path = require('node:path');

let cli;
try {
  require.resolve('tsx/cjs');
} catch {
  cli = require(path.join(__dirname, '..', 'dist', 'src', 'cli', 'main.js'));
}
if (!cli) {
  require('tsx/cjs');
  cli = require('../src/cli/main.ts');
}

cli.runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${err?.stack || String(err)}\n`);
    process.exitCode = 1;
  },
);
