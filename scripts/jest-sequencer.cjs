/**
 * Jest's own order (slowest file first, so that no worker starts a long file when the others are
 * nearly done) keyed by the path inside the repository instead of the absolute path, and kept in
 * the cache folder instead of the system's temporary one: a fresh clone (CI) finds the durations
 * the last run measured. Without them Jest orders by file size, which put a 70 s file last.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const FILE = process.env.JEST_DURATIONS_FILE || path.join(os.homedir(), '.cache', 'course-access-groups', 'jest', 'durations.json');

function read() {
  try {
    return JSON.parse(fs.readFileSync(FILE, 'utf8'));
  } catch {
    return {};
  }
}

const key = (test) => path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/');

class DurationSequencer extends Sequencer {
  sort(tests) {
    const known = read();
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    for (const test of tests) test.duration = known[key(test)];
    // Files never timed first (by size, as Jest does), then the others, slowest first.
    return [...tests].sort((a, b) => {
      if ((a.duration === undefined) !== (b.duration === undefined)) return a.duration === undefined ? -1 : 1;
      if (a.duration !== undefined && b.duration !== undefined) return b.duration - a.duration;
      return size(b) - size(a);
    });
  }

  cacheResults(tests, results) {
    super.cacheResults(tests, results);
    const byPath = new Map(tests.map((test) => [test.path, test]));
    // Read again just before writing: other runs (other clones) may have written meanwhile.
    const known = read();
    for (const result of results.testResults) {
      const test = byPath.get(result.testFilePath);
      if (!test || result.skipped || result.testExecError) continue;
      const { runtime, start, end } = result.perfStats;
      known[key(test)] = runtime || end - start;
    }
    try {
      fs.mkdirSync(path.dirname(FILE), { recursive: true });
      const tmp = `${FILE}.${process.pid}`;
      fs.writeFileSync(tmp, `${JSON.stringify(known, null, 1)}\n`);
      fs.renameSync(tmp, FILE);
    } catch {
      // Only the order of the next run depends on it.
    }
  }
}

module.exports = DurationSequencer;
