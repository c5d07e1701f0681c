/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The browser suite has its own run (jest.browser.config.js, `npm run test:browser`).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/browser/'],
  setupFiles: ['<rootDir>/test/setup-env.ts'],
  // sdk/ is an ES module package whose relative imports end in .js; the tests load its .ts sources.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    // Type checking is `npm run typecheck`; tests only transpile, which keeps them fast.
    '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
  },
  // Generous: an app start (PGlite compile and every migration) on a loaded 2-core machine can take 20 s.
  testTimeout: 60000,
  // A worker whose heap passed this after a file is replaced before the next: heaps grown over
  // dozens of files (each starting apps) otherwise spend the run's last minutes in full GCs.
  workerIdleMemoryLimit: '1GB',
};
