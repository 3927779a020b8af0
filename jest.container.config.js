/** `npm run test:container` (scripts/container/test.sh): the checks of the built image, one file at a time. */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/container/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120000,
  maxWorkers: 1,
};
