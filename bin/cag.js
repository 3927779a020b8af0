#!/usr/bin/env node
// `npx cag ...` from a clone: runs the TypeScript through tsx (a devDependency), so no build is
// needed. In production, after `npm run build`: `node dist/src/cli/main.js ...`.
require('tsx/cjs');
const { runCli } = require('../src/cli/main.ts');

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${(err && err.stack) || String(err)}\n`);
    process.exitCode = 1;
  },
);
