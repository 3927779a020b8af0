/** `npm run test:release` (scripts/release/test.sh): the checks of a release's artifacts. */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/release/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  // Four fresh Python environments installed from PyPI.
  testTimeout: 300000,
  maxWorkers: 1,
};
