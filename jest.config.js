/** Tests run TypeScript through swc (fast); `npm test` type-checks the whole tree with tsc first. */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // The built image's checks need a container engine (`npm run test:container` runs them); the
  // chart's need helm and a control plane (`npm run test:k8s`); a release's need a release
  // (`npm run test:release`).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/container/', '<rootDir>/test/k8s/', '<rootDir>/test/release/'],
  // What scripts/stage-tutor-plugin.sh copies into the Tutor plugin's package (a second package.json).
  modulePathIgnorePatterns: ['<rootDir>/integrations/tutor/tutorcourse_access_groups/templates/'],
  // A bound for a hang, not a speed target: on two cores three files at a time share one FerretDB,
  // and a 5 s test took more than 30 s beside the import tests in a clean-clone CI run.
  testTimeout: 60000,
  // Integration tests share one local stack; each file uses its own database and topics. Two files
  // at a time: with three, the import-heavy files (import-batch, events-batch, change-relay) shared
  // one FerretDB on two cores and two consumer processes racing one backlog did not catch up in
  // 240 s, where alone they take 16 s (two clean-clone CI runs of three; 867 s of Jest with three).
  maxWorkers: 2,
  // Slowest file first, by the durations the last run on this machine measured (in the cache folder).
  testSequencer: '<rootDir>/scripts/jest-sequencer.cjs',
};
