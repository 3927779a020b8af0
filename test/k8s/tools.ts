import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';

const run = promisify(execFile);
/** The chart's folder: its ci/ values files are read from here. */
export const CHART_DIR = path.resolve(__dirname, '../../deploy/helm/course-access-groups');
/**
 * What helm lints, renders and installs: the release's packaged chart when CAG_CHART_TGZ names one
 * (scripts/k8s/test.sh sets it from RELEASE_DIR, as .ci/run does), else the chart's folder.
 */
export const CHART = process.env.CAG_CHART_TGZ || CHART_DIR;
/** Where scripts/k8s/tools.sh put helm, kubectl and the control plane (scripts/k8s/test.sh sets it). */
const TOOLS = process.env.K8S_TOOLS ?? '';
if (!TOOLS) throw new Error('K8S_TOOLS is not set: run these tests through `npm run test:k8s`');

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one of the built tools; never throws on a non-zero exit (tests assert on `code`). */
export async function tool(name: 'helm' | 'kubectl', args: string[], opts: { input?: string } = {}): Promise<Result> {
  const child = run(path.join(TOOLS, name), args, { maxBuffer: 64e6, env: process.env });
  if (opts.input !== undefined) {
    child.child.stdin!.end(opts.input);
  }
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Like `tool`, failing the test with the tool's own message when it exits non-zero. */
export async function ok(name: 'helm' | 'kubectl', args: string[], opts: { input?: string } = {}): Promise<string> {
  const res = await tool(name, args, opts);
  if (res.code !== 0) throw new Error(`${name} ${args.join(' ')} exited ${res.code}: ${res.stderr}`);
  return res.stdout;
}

export const ciValues = (file: string) => path.join(CHART_DIR, 'ci', file);
export const CI_FILES = ['default-values.yaml', 'existing-secret-values.yaml', 'everything-on-values.yaml', 'api-only-values.yaml', 'lms-only-values.yaml'];

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  [key: string]: any;
};

export const parseObjects = (text: string): K8sObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);

/** `helm template` of the chart with the given values files and --set pairs, as objects. */
export async function render(opts: { release?: string; namespace?: string; files?: string[]; set?: Record<string, string>; showTests?: boolean } = {}) {
  const args = ['template', opts.release ?? 'cag', CHART, '--namespace', opts.namespace ?? 'lms'];
  for (const f of opts.files ?? []) args.push('-f', f);
  for (const [k, v] of Object.entries(opts.set ?? {})) args.push('--set', `${k}=${v}`);
  const res = await tool('helm', args);
  return { ...res, text: res.stdout, objects: res.code === 0 ? parseObjects(res.stdout) : [] };
}

export const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
export const deployment = (objects: K8sObject[], role: 'api' | 'consumer') =>
  objects.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === role);

/**
 * docs/install-tutor.md's "Tutor for Open edX, Helm for the service" block as an operator runs it:
 * a Tutor root with the plugin enabled and an organization (scripts/k8s/tutor-render.sh, Tutor 21,
 * the release's wheel under RELEASE_DIR), the packaged chart in the working folder under the name
 * the block gives, `tutor` on the PATH. `edit` makes the block what the test runs (`helm template`
 * where there is no cluster; this machine's addresses); it must change it. Returns the block's
 * output, the Tutor root, Tutor's python and its `tutor` command.
 */
export async function runTutorSplitBlock(
  dir: string,
  edit: (block: string) => string,
): Promise<{ stdout: string; root: string; python: string; tutor: string }> {
  const doc = readFileSync(path.resolve(__dirname, '../../docs/install-tutor.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Tutor for Open edX, Helm for the service'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  const root = path.join(dir, 'tutor-helm');
  await run('bash', [path.resolve(__dirname, '../../scripts/k8s/tutor-render.sh'), root]);
  const { version } = parse(readFileSync(path.join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string };
  const packaged = CHART.endsWith('.tgz') ? CHART : (await ok('helm', ['package', CHART_DIR, '--destination', dir])).trim().split(': ').pop()!;
  const chartDir = path.join(dir, 'tutor-helm-chart');
  mkdirSync(chartDir, { recursive: true });
  copyFileSync(packaged, path.join(chartDir, `course-access-groups-${version}.tgz`));
  const python = (await run('bash', [path.resolve(__dirname, '../../scripts/tutor-plugin.sh'), '21'])).stdout.trim();
  const bin = path.join(dir, 'tutor-helm-bin');
  mkdirSync(bin, { recursive: true });
  const main = "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())";
  writeFileSync(path.join(bin, 'tutor'), `#!/bin/sh\nexec ${JSON.stringify(python)} -c ${JSON.stringify(main)} "$@"\n`, { mode: 0o755 });
  const script = edit(block);
  if (script === block) throw new Error('runTutorSplitBlock: the edit changed nothing in the block');
  const { stdout } = await run('sh', ['-e', '-c', script], {
    cwd: chartDir,
    maxBuffer: 64e6,
    env: {
      ...process.env,
      PATH: `${bin}:${TOOLS}:${process.env.PATH}`,
      TUTOR_ROOT: root,
      TUTOR_PLUGINS_ROOT: path.join(root, 'plugins'),
      PYTHONPATH: path.join(root, 'site'),
    },
  });
  return { stdout, root, python, tutor: path.join(bin, 'tutor') };
}
