import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import puppeteer, { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../support/database';
import { ROOT_KEY } from '../support/principals';
import { RunningApi, startApi } from '../support/processes';

/**
 * Swagger UI at /docs in a real browser: it works under the api's Content-Security-Policy, and the
 * credential pasted into Authorize is used for "Try it out" but never written to the browser's storage,
 * where it would outlive the tab and any script on this origin could read it.
 *
 * Debian's chromium (apt-get install chromium); without it the test is skipped. Set
 * SWAGGER_UI_SCREENSHOT=/path.png to keep a screenshot of the page after "Execute".
 */
const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  console.warn(`test/security/swagger-ui.spec.ts skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

/** No network here: these keep chromium from reaching for outside hosts. */
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

describe.skipIf(!haveChromium)('Swagger UI in a browser', () => {
  let api: RunningApi;
  let browser: Browser;
  let profile: string;

  beforeAll(async () => {
    profile = mkdtempSync(join(tmpdir(), 'swagger-ui-chromium-'));
    [api, browser] = await Promise.all([
      startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'false', DEMO_COMPONENTS: 'true' }),
      puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`] }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await api?.stop();
    if (profile) {
      rmSync(profile, { recursive: true, force: true });
    }
  });

  /** Console errors, page errors, failed requests and CSP violations, as the page reports them. */
  async function watch(page: Page): Promise<string[]> {
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || /Content.Security.Policy/i.test(message.text())) {
        problems.push(`console: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => problems.push(`page error: ${(error as Error).message}`));
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
    await page.exposeFunction('reportViolation', (text: string) => problems.push(`CSP violation: ${text}`));
    // Browser-side code as source text: the tests compile without the DOM's types.
    await page.evaluateOnNewDocument(`
      document.addEventListener('securitypolicyviolation', (event) => {
        window.reportViolation(event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline') + ' (' + event.sourceFile + ':' + event.lineNumber + ')');
      });
    `);
    return problems;
  }

  async function authorize(page: Page): Promise<void> {
    await page.locator('.auth-wrapper button.authorize').click();
    await page.locator('.dialog-ux .auth-container input#auth-bearer-value').fill(ROOT_KEY);
    await page.locator('.dialog-ux .auth-btn-wrapper button[aria-label="Apply credentials"]').click();
    // Authorized: the dialog shows "Authorized" and offers Logout instead of Authorize.
    await page.locator('.dialog-ux .auth-btn-wrapper button[aria-label="Remove authorization"]').wait();
    await page.locator('.dialog-ux button.btn-done').click();
    await page.waitForSelector('.dialog-ux', { hidden: true });
  }

  /**
   * "Try it out" on one operation with what the page fills in itself (path parameters aside), the request body
   * switched to `contentType` when given, then "Execute".
   */
  async function executeAsFilled(page: Page, method: string, path: string, params: Record<string, string> = {}, contentType?: string) {
    const operation = `.opblock-${method}:has(.opblock-summary-path[data-path="${path}"])`;
    if (await page.$(`${operation} button.btn-clear`)) {
      // Tried out already: the last answer is cleared, so the one read below is this execution's.
      await page.locator(`${operation} button.btn-clear`).click();
      await page.waitForSelector(`${operation} .live-responses-table`, { hidden: true });
    } else {
      await page.locator(`${operation} .opblock-summary-control`).click();
      await page.locator(`${operation} .try-out__btn`).click();
    }
    for (const [name, value] of Object.entries(params)) {
      await page.locator(`${operation} input[placeholder="${name}"]`).fill(value);
    }
    if (contentType) {
      await page.select(`${operation} .opblock-section-request-body select`, contentType);
    }
    await page.locator(`${operation} button.execute`).click();
    const cell = await page.waitForSelector(`${operation} .live-responses-table .response .response-col_status`);
    const status = (await cell!.evaluate((element) => element.textContent ?? '')).trim();
    const body = await page.$eval(
      `${operation} .live-responses-table .response-col_description pre`,
      (element) => element.textContent ?? '',
    );
    return { status, body: JSON.parse(body) as Record<string, unknown> };
  }

  it('authorizes, runs GET /service-accounts, keeps the credential out of storage, and breaks no CSP rule', async () => {
    const page = await browser.newPage();
    const problems = await watch(page);
    await page.setViewport({ width: 1280, height: 1400 });
    const response = await page.goto(`${api.url}/docs`, { waitUntil: 'networkidle0' });
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await authorize(page);

    const operation = '.opblock-get:has(.opblock-summary-path[data-path="/service-accounts"])';
    await page.locator(`${operation} .opblock-summary-control`).click();
    await page.locator(`${operation} .try-out__btn`).click();
    await page.locator(`${operation} button.execute`).click();
    const status = await page.waitForSelector(`${operation} .live-responses-table .response .response-col_status`);
    expect((await status!.evaluate((cell) => cell.textContent ?? '')).trim()).toBe('200');
    // The request the page sent carried the credential (it lives in the page's memory only).
    const curl = await page.$eval(`${operation} .curl-command`, (element) => element.textContent ?? '');
    expect(curl).toContain(`Authorization: Bearer ${ROOT_KEY}`);

    if (process.env.SWAGGER_UI_SCREENSHOT) {
      await status!.scrollIntoView();
      await page.screenshot({ path: process.env.SWAGGER_UI_SCREENSHOT as `${string}.png`, fullPage: false });
    }

    const stored = String(
      await page.evaluate(`(() => {
        const dump = (storage) => Object.fromEntries(Object.keys(storage).map((key) => [key, storage.getItem(key)]));
        return JSON.stringify({ local: dump(localStorage), session: dump(sessionStorage), cookies: document.cookie });
      })()`),
    );
    expect(stored).not.toContain(ROOT_KEY);
    // A reload forgets the authorization: nothing restored it from storage.
    await page.reload({ waitUntil: 'networkidle0' });
    await page.locator('.auth-wrapper button.authorize').wait();
    expect(await page.$('.auth-wrapper button.authorize.locked')).toBeNull();

    expect(problems).toEqual([]);
    await page.close();
  });
  it('opens a deep link to an operation without a console warning', async () => {
    const document = (await (await fetch(`${api.url}/openapi.json`)).json()) as { paths: Record<string, { get: { operationId: string } }> };
    // A route of Nest's, and /ws, which the document describes by hand; each in a page of its own (the link is read on load).
    for (const [tag, path] of [
      ['queue', '/queue/jobs'],
      ['websocket', '/ws'],
    ]) {
      const page = await browser.newPage();
      const problems = await watch(page);
      page.on('console', (message) => {
        if (/deep link/i.test(message.text())) {
          problems.push(`console: ${message.text()}`);
        }
      });
      await page.goto(`${api.url}/docs#/${tag}/${document.paths[path].get.operationId}`, { waitUntil: 'networkidle0' });
      // The deep link opened the operation.
      await page.locator(`.opblock-get:has(.opblock-summary-path[data-path="${path}"]) .opblock-body`).wait();
      expect(problems, path).toEqual([]);
      await page.close();
    }
  });

  it('"Try it out" works on any address that reaches the service, not only the one it announces', async () => {
    const page = await browser.newPage();
    const problems = await watch(page);
    // The service announces http://127.0.0.1:<port>; an admin opens it by another name.
    await page.goto(`${api.url.replace('127.0.0.1', 'localhost')}/docs`, { waitUntil: 'networkidle0' });
    await authorize(page);
    const { status } = await executeAsFilled(page, 'get', '/service-accounts');
    expect(status).toBe('200');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('what "Try it out" fills in works as it is: a run, a schedule, a PATCH, a bulk requeue, A2A', async () => {
    const page = await browser.newPage();
    const problems = await watch(page);
    await page.setViewport({ width: 1280, height: 1400 });
    await page.goto(`${api.url}/docs`, { waitUntil: 'networkidle0' });
    await authorize(page);

    // A run's body is JSON first: its example as it is. Switched to a form, the optional fields are blank, which a
    // form means as not given (no made-up session or user). (Form first, switching to JSON sent the blank fields as
    // "", which JSON refuses: an empty string is a value there.)
    const run = await executeAsFilled(page, 'post', '/agents/{agent_id}/runs', { agent_id: 'echo-agent' });
    expect(run).toMatchObject({ status: '200', body: { status: 'completed', content: 'Hello!', user_id: null } });
    for (const form of ['application/x-www-form-urlencoded', 'multipart/form-data']) {
      const asForm = await executeAsFilled(page, 'post', '/agents/{agent_id}/runs', {}, form);
      expect(asForm, form).toMatchObject({ status: '200', body: { status: 'completed', content: 'Hello!', user_id: null } });
      expect(asForm.body.run_id, form).not.toBe(run.body.run_id);
    }
    const schedule = await executeAsFilled(page, 'post', '/schedules');
    expect(schedule).toMatchObject({
      status: '201',
      body: { endpoint: '/agents/echo-agent/runs', target_id: 'echo-agent', user_id: null },
    });
    const patched = await executeAsFilled(page, 'patch', '/schedules/{schedule_id}', { schedule_id: String(schedule.body.id) });
    expect(patched).toMatchObject({ status: '200', body: { enabled: false } });
    expect(await executeAsFilled(page, 'post', '/queue/jobs/requeue')).toMatchObject({ status: '200', body: { dry_run: true } });
    // A2A's HTTP+JSON binding, with the A2A-Version header the page fills in, and its JSON-RPC URL as v0.3.
    const a2a = await executeAsFilled(page, 'post', '/a2a/agents/{agent_id}/message:send', { agent_id: 'echo-agent' });
    expect(a2a).toMatchObject({ status: '200', body: { task: { status: { state: 'TASK_STATE_COMPLETED' } } } });
    const rpc = await executeAsFilled(page, 'post', '/a2a/agents/{agent_id}', { agent_id: 'echo-agent' });
    expect(rpc).toMatchObject({ status: '200', body: { result: { kind: 'task', status: { state: 'completed' } } } });

    // Each error response shows what the api sends with that status, the route's scope in a 403.
    const forbidden = '.opblock-post:has(.opblock-summary-path[data-path="/schedules"]) tr.response[data-code="403"]';
    expect(await page.$eval(forbidden, (row) => row.textContent ?? '')).toContain('Required scope(s): schedules:write');
    expect(problems).toEqual([]);
    await page.close();
    // Seven operations driven through the page one after another: about 25 s alone, over 60 s beside the
    // rest of the suite on a loaded two-core machine.
  }, 150_000);
});
