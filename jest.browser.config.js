/**
 * The browser suite (`npm run test:browser`, run by .ci/run after the two test passes): test/browser/
 * in Debian's chromium through puppeteer-core. Kept out of `npm test` (jest.config.js).
 */
const base = require('./jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/browser'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120000,
};
