// The production build and the image carry the console (no Docker engine here: checked as text).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultConsoleDir } from '../../src/console/route';

const root = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

test('npm run build compiles the service and then the console', () => {
  const scripts = JSON.parse(read('package.json')).scripts;
  expect(scripts.build).toBe('tsc -p tsconfig.build.json && node scripts/build-console.cjs');
  expect(read('scripts/build-console.cjs')).toContain("path.join(root, 'dist/console')");
});

test('the Dockerfile copies the console builder before building, and the runtime stage takes dist', () => {
  const text = read('Dockerfile');
  const copy = text.indexOf('COPY scripts/build-console.cjs ./scripts/');
  expect(copy).toBeGreaterThan(0);
  expect(copy).toBeLessThan(text.indexOf('RUN npm run build'));
  expect(text).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
});

test('the route finds dist/console from the source tree and from the compiled one', () => {
  expect(defaultConsoleDir(path.join(root, 'src/console'))).toBe(path.join(root, 'dist/console'));
  expect(defaultConsoleDir(path.join(root, 'dist/src/console'))).toBe(path.join(root, 'dist/console'));
});

test('browser code stays out of the Node build (its own tsconfig has the DOM types)', () => {
  expect(read('tsconfig.json')).toContain('"exclude": ["src/console/app"]');
  expect(JSON.parse(read('tsconfig.build.json')).exclude).toBeUndefined(); // inherits the exclusion
  const app = JSON.parse(read('src/console/app/tsconfig.json').replace(/^\s*\/\/.*$/gm, ''));
  expect(app.compilerOptions).toMatchObject({ module: 'ES2022', lib: ['ES2022', 'DOM', 'DOM.Iterable'], strict: true, outDir: '../../../dist/console' });
});
