// Builds the admin console into dist/console/: the project's own tsc compiles src/console/app/*.ts
// to ES modules (one .js per .ts, no bundler), and the static files are copied beside them.
// `npm run build` runs it (so the Docker image has the console); so do `npm test` and `npm run dev`.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const source = path.join(root, 'src/console/app');
const out = path.join(root, 'dist/console');
const STATIC = /\.(html|css|svg)$/;

// From scratch, so a renamed module leaves no stale file for the route to serve.
fs.rmSync(out, { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', source], { stdio: 'inherit', cwd: root });
for (const name of fs.readdirSync(source)) {
  if (STATIC.test(name)) fs.copyFileSync(path.join(source, name), path.join(out, name));
}
console.error(`[console] built ${fs.readdirSync(out).length} files into ${path.relative(root, out)}/`);
