/** Tests run against the real MongoDB-wire server and Kafka broker that `npm test` starts first. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '/.data/'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }],
  },
  setupFiles: ['reflect-metadata'],
  testTimeout: 60000,
  // One test file at a time (the suites share one Kafka and one MongoDB-wire server on 2 cores),
  // in a worker that is replaced once it holds more than this after a file: a single process
  // running every suite in band grew past Node's 4 GB heap (docs/decisions/0250-test-worker-recycling.md).
  workerIdleMemoryLimit: '1500MB',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
