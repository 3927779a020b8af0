import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The newest modification time under `dir` (src/ and consumers/, against the built dist/). */
const newest = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((t, e) => {
    const p = path.join(dir, e.name);
    return Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }, 0);

const stale = (built: string) => !existsSync(built) || statSync(built).mtimeMs < Math.max(newest(path.join(ROOT, 'src')), newest(path.join(ROOT, 'consumers')));

/**
 * The built program (dist/, as the image holds it), compiled first when src/ or consumers/ are
 * newer: CI has built it (`npm run build`), a clone may not have. One test file builds at a time
 * (a lock folder), so two workers never write dist/ together. Returns the path of `rel` in dist/.
 */
export function builtProgram(rel = 'src/main.js'): string {
  const built = path.join(ROOT, 'dist', rel);
  if (!stale(built)) return built;
  const lock = path.join(ROOT, 'dist', '.building');
  mkdirSync(path.dirname(lock), { recursive: true });
  for (const until = Date.now() + 300_000; ; ) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than any build (tsc takes under a minute here) was left by a killed worker.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 180_000) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > until) throw new Error(`dist/ is being built by another process for 5 minutes (${lock})`);
      else execFileSync('sleep', ['1']);
    }
  }
  try {
    if (stale(built))
      execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { cwd: ROOT });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  return built;
}
