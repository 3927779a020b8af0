// Issue 46, item 7: `cag --help` (and so the image's `docker run IMAGE --help`, which its entrypoint
// hands to cag) prints the usage on stdout and succeeds; before, it was a usage error (exit 2).
import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli/main';

async function cag(...argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { out: '', err: '' };
  stdout.on('data', (c) => (chunks.out += c));
  stderr.on('data', (c) => (chunks.err += c));
  const code = await runCli(argv, { stdout, stderr, env: {} });
  return { code, ...chunks };
}

test.each(['--help', '-h', 'help'])('cag %s prints the usage on stdout and exits 0', async (flag) => {
  const { code, out, err } = await cag(flag);
  expect(code).toBe(0);
  expect(err).toBe('');
  expect(out).toMatch(/^usage:\n {2}cag import /);
  expect(out).toContain('cag upgrade');
});

test('no command, or an unknown one, is still a usage error on stderr (exit 2)', async () => {
  for (const argv of [[], ['--nope'], ['launch']]) {
    const { code, out, err } = await cag(...argv);
    expect([code, out]).toEqual([2, '']);
    expect(err).toMatch(/usage:\n {2}cag import /);
  }
});
