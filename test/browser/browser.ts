/**
 * The browser suite's harness (`npm run test:browser`, run by .ci/run): Debian's `chromium` driven
 * by puppeteer-core (never a downloaded browser), small static servers on loopback for the pages
 * that play a dashboard or a popout, and a record of every console error, uncaught page error and
 * Content-Security-Policy violation a page produced.
 *
 * Without a chromium binary the suite is skipped with a message saying so; under CI (`CI=true`,
 * set by .ci/run) a missing browser fails the suite instead, so CI can never pass without it.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The browser binary: `CHROMIUM_PATH`, else Debian's. Null when none is installed. */
export const chromiumPath: string | null = process.env.CHROMIUM_PATH ?? CANDIDATES.find((file) => existsSync(file)) ?? null;

/** Browsing is slow on a loaded machine: one test drives a page through many round trips. */
export const BROWSER_TEST_TIMEOUT = 120_000;

/**
 * `describe` when a browser is installed. Otherwise: under CI a suite that fails at once, and
 * locally a skipped suite with a warning that says why (never a silent pass).
 */
export function describeWithBrowser(name: string, body: () => void): void {
  if (chromiumPath) {
    describe(name, body);
    return;
  }
  const why = `no chromium binary (looked at CHROMIUM_PATH, ${CANDIDATES.join(', ')}); install Debian's: apt-get install -y chromium`;
  if (process.env.CI) {
    describe(name, () => {
      test('a browser is installed', () => {
        throw new Error(why);
      });
    });
    return;
  }
  console.warn(`browser suite "${name}" SKIPPED: ${why}`);
  describe.skip(name, body);
}

export function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath!,
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
}

/** What a page reported while the test drove it. */
export interface PageProblems {
  consoleErrors: string[];
  pageErrors: string[];
  cspViolations: string[];
}

/** The page globals used here (the project's TypeScript has no DOM library; these run in the page). */
declare const window: { __cspViolations?: string[] };
declare const document: { addEventListener(type: 'securitypolicyviolation', listener: (event: { violatedDirective: string; blockedURI: string }) => void): void };

/**
 * A new page that records console errors, uncaught errors and CSP violations (each violation is
 * also a console error in Chromium; the listener gives its directive and blocked URL).
 */
export async function watchedPage(browser: Browser): Promise<{ page: Page; problems: () => Promise<PageProblems> }> {
  const page = await browser.newPage();
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url ?? ''})`);
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.evaluateOnNewDocument(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__cspViolations!.push(`${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  return {
    page,
    problems: async () => ({
      consoleErrors: [...consoleErrors],
      pageErrors: [...pageErrors],
      cspViolations: page.isClosed() ? [] : await page.evaluate(() => window.__cspViolations ?? []),
    }),
  };
}

export interface StaticSite {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves fixed pages on 127.0.0.1 (a page on another origin than the API's). `pages` maps a
 * path to its HTML, or to a script when the path ends in `.js` (a module a page imports); anything
 * else is 404.
 */
export async function startStaticSite(pages: Record<string, string>): Promise<StaticSite> {
  const server: Server = createServer((req, res) => {
    const page = pages[new URL(req.url ?? '/', 'http://local').pathname];
    if (page === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const type = req.url?.split('?')[0]?.endsWith('.js') ? 'text/javascript' : 'text/html';
    res.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
