/** `npm run test:k8s` (scripts/k8s/test.sh): the Helm chart, rendered (step 1) and on a real control plane (step 2). */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/k8s/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120000,
  maxWorkers: 1,
};
