/**
 * The documentation pages in a real browser: Swagger UI, GraphiQL and the WebSocket protocol's
 * AsyncAPI page render from this origin's assets with no console error, uncaught error or CSP
 * violation; Swagger UI executes one "Try it out" request, GraphiQL one query, and the AsyncAPI
 * page lists the protocol's channels.
 */
import type { Browser } from 'puppeteer-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { BROWSER_TEST_TIMEOUT, describeWithBrowser, launchBrowser, watchedPage } from './browser';

jest.setTimeout(BROWSER_TEST_TIMEOUT);

/** The page globals used here (the project's TypeScript has no DOM library; these run in the page). */
declare const document: { querySelector(selector: string): { textContent: string | null } | null };

const NO_PROBLEMS = { consoleErrors: [], pageErrors: [], cspViolations: [] };

describeWithBrowser('documentation pages in Chromium', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp(), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  test('Swagger UI renders the document and runs "Try it out" on GET /health', async () => {
    const { page, problems } = await watchedPage(browser);
    // Deep link: the system tag's getHealth operation opens expanded.
    await page.goto(`${t.url}/v1/swagger-ui/#/system/getHealth`, { waitUntil: 'load' });
    await page.waitForSelector('.swagger-ui .info .title', { timeout: 30_000 });
    expect(await page.$eval('.swagger-ui .info .title', (el) => el.textContent)).toBeTruthy();
    // The operations list is virtualised (only what is in view is in the DOM): the first tag shows.
    await page.waitForSelector('#operations-tag-system', { timeout: 30_000 });

    const operation = '#operations-system-getHealth';
    await page.waitForSelector(`${operation} .try-out__btn`, { timeout: 30_000 });
    await page.click(`${operation} .try-out__btn`);
    await page.waitForSelector(`${operation} button.execute`);
    await page.click(`${operation} button.execute`);
    await page.waitForSelector(`${operation} .live-responses-table tbody .response-col_status`, { timeout: 30_000 });
    const status = await page.$eval(`${operation} .live-responses-table tbody .response-col_status`, (el) => el.textContent?.trim());
    expect(status).toBe('200');
    const body = await page.$eval(`${operation} .live-responses-table tbody .response-col_description`, (el) => el.textContent ?? '');
    expect(body).toContain('"status"');

    expect(await problems()).toEqual(NO_PROBLEMS);
    await page.close();
  });

  test('GraphiQL renders, loads the schema and runs a query', async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`${t.url}/v1/graphiql`, { waitUntil: 'load' });
    await page.waitForSelector('.graphiql-container .graphiql-query-editor .CodeMirror', { timeout: 30_000 });
    // The editor's own API (CodeMirror 5 keeps its instance on the element): typing would race
    // GraphiQL's bracket completion.
    await page.$eval('.graphiql-query-editor .CodeMirror', (el) => {
      (el as unknown as { CodeMirror: { setValue(text: string): void } }).CodeMirror.setValue('query Probe { __typename }');
    });
    await page.click('.graphiql-execute-button');
    await page.waitForFunction(() => (document.querySelector('.graphiql-response')?.textContent ?? '').includes('"__typename"'), { timeout: 30_000 });
    const answer = await page.$eval('.graphiql-response', (el) => el.textContent ?? '');
    expect(answer).toContain('"Query"');
    expect(answer).not.toContain('"errors"');
    // The schema loaded (introspection answered): the documentation explorer lists the root type.
    await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]');
    await page.waitForFunction(() => (document.querySelector('.graphiql-doc-explorer')?.textContent ?? '').includes('Query'), { timeout: 30_000 });

    expect(await problems()).toEqual(NO_PROBLEMS);
    await page.close();
  });

  test('the AsyncAPI page renders the WebSocket protocol with its channel names', async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`${t.url}/v1/asyncapi-ui`, { waitUntil: 'load' });
    // The renderer parses the document in the page, then lists one operation per channel.
    await page.waitForFunction(() => (document.querySelector('#asyncapi')?.textContent ?? '').includes('events:{account_id}'), { timeout: 60_000 });
    const text = await page.$eval('#asyncapi', (el) => el.textContent ?? '');
    for (const channel of ['events:{account_id}', 'chat:{account_id}', 'presence:{resource_channel}', 'public-stats:{platform}:{broadcast_id}']) expect(text).toContain(channel);
    // The document's own title: the renderer parsed it (a parse failure shows its error panel instead, and logs).
    expect(text).toContain('WebSocket protocol');

    expect(await problems()).toEqual(NO_PROBLEMS);
    await page.close();
  });
});
