/**
 * The web console in Debian's Chromium (playwright-core), against a real bridge (Node, or Workers in
 * workerd: `npm test` runs test/e2e twice) and a real sim agent that dialled out to it: make a key in
 * the browser, enroll it, register it on the host with the password, sign in with the key, see the
 * host, watch the dashboard graph update, list processes, add a user through the contract form (a bad
 * name refused first, in the page), run a queued job and watch its progress bar finish, and a loud
 * refusal when the host comes back with another host key. Every WebSocket frame between the page and
 * the bridge is recorded: none may contain the password or a marker typed into a form.
 *
 * Screenshots of the main pages go to a temporary directory, or to docs/console/ with
 * HOSTADM_UPDATE_SCREENSHOTS=1 (how the README's pictures are made).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureConsoleBuilt } from '../../scripts/build-console.ts';
import { agentFor, SIM_PASSWORD, startTestAgent } from '../helpers/agent.ts';
import { BRIDGE_RUNTIME, startTestBridge } from '../bridge/helpers.ts';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';

const root = new URL('../..', import.meta.url).pathname;
const skip = chromiumMissing;

test(`the web console through the ${BRIDGE_RUNTIME} bridge, end to end in Chromium`, { skip, timeout: 240_000 }, async (t) => {
  ensureConsoleBuilt({ quiet: true });
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await agent.bridgeLink?.ready();

  const shots =
    process.env.HOSTADM_UPDATE_SCREENSHOTS === '1' && BRIDGE_RUNTIME === 'node' ? join(root, 'docs/console') : mkdtempSync(join(tmpdir(), 'hostadm-shots-'));
  mkdirSync(shots, { recursive: true });
  if (!shots.startsWith(root)) t.after(() => rmSync(shots, { recursive: true, force: true }));

  const browser = await launchChromium(t);
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  // Everything the page and the bridge say to each other.
  const frames: string[] = [];
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => frames.push(String(f.payload)));
    ws.on('framereceived', (f) => frames.push(String(f.payload)));
  });
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });

  const origin = new URL(bridge.httpUrl).origin;
  await page.goto(`${origin}/?bridge=${encodeURIComponent(bridge.url)}`);

  // 1. A key made in the browser: non-extractable, kept in IndexedDB.
  // (By keyboard: Tab from the top of the page reaches it, Enter presses it.)
  for (let i = 0; i < 10 && !(await page.getByRole('button', { name: 'Create a key' }).evaluate((b) => b === b.ownerDocument.activeElement)); i++)
    await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.locator('#key-md5').waitFor();
  // (Page code as strings: this test compiles without DOM types.)
  const extractable = await page.evaluate(`new Promise((resolve) => {
    const open = indexedDB.open('hostadm-console');
    open.onsuccess = () => {
      const get = open.result.transaction('keys').objectStore('keys').get('default');
      get.onsuccess = () => resolve([get.result.cryptoKeys.sign.extractable, get.result.cryptoKeys.decrypt.extractable]);
    };
  })`);
  assert.deepEqual(extractable, [false, false], 'the private key cannot be read back by script');
  assert.ok(await page.getByRole('button', { name: 'Save console.key' }).isVisible(), 'the key file for the CLI is offered once');
  await page.getByRole('button', { name: 'Done, forget it' }).click();

  // 2. Enrolled at the bridge with a client join token.
  await page.getByLabel('Client join token (once)').fill(await bridge.token('client'));
  await shot('key');
  await page.getByRole('button', { name: 'Enroll' }).click();
  await page.getByRole('heading', { name: 'Hosts' }).waitFor();

  // 3. Registered on the host: password once, inside the channel; the host key shown and pinned.
  await page.getByLabel('Host nickname').fill('simhost');
  await page.getByLabel('Password').fill(SIM_PASSWORD);
  await page.getByRole('button', { name: 'Sign in and register' }).click();
  await page.locator('#hk-fingerprint').waitFor();
  assert.equal(
    await page.locator('#hk-fingerprint').textContent(),
    agent.services.hostKey.fingerprint,
    'the real host key fingerprint is shown for comparison',
  );
  await page.getByRole('button', { name: 'Trust and pin' }).click();
  await page.getByText('Key registered on simhost').waitFor();

  // 4. The host is listed for this key; key sign-in opens it (no question: the key is pinned).
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.getByRole('link', { name: 'simhost' }).waitFor();
  await page.getByText('key sign-in', { exact: true }).waitFor();
  await shot('hosts');
  await page.getByRole('link', { name: 'simhost' }).click();

  // 5. The dashboard's graph updates by itself.
  const points = () => page.locator('#cpu-chart').getAttribute('data-points').then(Number);
  // (Polled from here: the page's CSP forbids the string evaluation waitForFunction would use.)
  const pointsAbove = async (n: number) => {
    for (let i = 0; i < 150 && (await points()) <= n; i++) await new Promise((r) => setTimeout(r, 200));
    return points();
  };
  const first = await pointsAbove(0);
  assert.ok((await pointsAbove(first)) > first, 'the CPU graph took a new reading by itself');
  await page.getByText('simhost').first().waitFor();
  await shot('dashboard');

  // 6. Processes, filtered.
  await page.getByRole('link', { name: 'Processes' }).click();
  await page.getByRole('cell', { name: '/sbin/init', exact: true }).waitFor();
  await page.getByLabel('Filter processes').fill('devd');
  await page.getByRole('cell', { name: '/sbin/devd', exact: true }).waitFor();
  assert.equal(await page.getByRole('cell', { name: '/sbin/init', exact: true }).count(), 0, 'the filter hides the other processes');
  await shot('processes');
  // A phone-sized screen: the menu wraps above the page, the table scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('cell', { name: '/sbin/devd', exact: true }).waitFor();
  await shot('processes-phone');
  await page.setViewportSize({ width: 1100, height: 800 });

  // 7. A user through the generated form: a bad name is refused in the page first.
  const marker = `PLAINTEXT-MARKER-${randomUUID()}`;
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByRole('button', { name: 'Add a user' }).click();
  const form = page.locator('#users-useradd-form');
  await form.getByLabel(/^name/).fill('Bad Name!');
  await form.getByLabel(/^password/).fill('s3cret-pass');
  await form.getByRole('button', { name: 'Add user' }).click();
  const nameError = form.locator('#users-useradd-name-error');
  await nameError.waitFor();
  assert.match((await nameError.textContent()) ?? '', /name: may hold only letters/);
  await shot('users-validation');
  await form.getByLabel(/^name/).fill('consoleuser');
  await form.getByLabel(/^comment/).fill(marker);
  await form.getByRole('button', { name: 'Add user' }).click();
  await page.getByRole('cell', { name: marker, exact: true }).waitFor();
  await page.getByRole('cell', { name: 'consoleuser', exact: true }).waitFor();

  // 8. A queued job: its progress bar fills and it finishes.
  await page.getByRole('link', { name: 'Jobs' }).click();
  await page.getByLabel('Arguments (JSON)').fill('{"job1": ["sleep 1", "sleep 1", "sleep 1", "echo done"]}');
  await page.getByRole('button', { name: 'Run a job' }).click();
  const job = page.locator('li[data-job="job1"]');
  await job.waitFor();
  // The bar moves through the chain (a quarter per command), then finishes.
  const seen = new Set<string>();
  for (let i = 0; i < 600 && !(await job.evaluate((li) => li.classList.contains('finished'))); i++) {
    seen.add((await job.locator('progress').getAttribute('value')) ?? 'indeterminate');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(
    [...seen].some((v) => Number(v) > 0 && Number(v) < 100),
    `the progress bar showed progress on the way (${[...seen].join(', ')})`,
  );
  assert.equal(await job.locator('progress').getAttribute('value'), '100');
  assert.match((await job.textContent()) ?? '', /succeeded/);
  await shot('jobs');

  // 9. The host goes away: the page says so and marks what it shows as not current; it comes back
  // (same host key): the page reconnects by itself and reads current data again.
  await page.getByRole('link', { name: 'Dashboard' }).click();
  const agentOptions = { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } };
  await agent.close();
  await page.getByText('Connection to simhost lost: reconnecting').waitFor({ timeout: 30_000 });
  await page.locator('.freshness.stale').first().waitFor();
  assert.match((await page.locator('#net-state').textContent()) ?? '', /Reconnecting to simhost/);
  await shot('offline');
  const back = await startTestAgent(agentOptions, agent.dataDir);
  t.after(() => back.close());
  await back.bridgeLink?.ready();
  await page.getByText('Connection to simhost lost').waitFor({ state: 'detached', timeout: 60_000 });
  assert.equal(await page.locator('#net-state').textContent(), 'Online');
  const before = await points();
  assert.ok((await pointsAbove(before)) > before, 'the graph reads current data again after the reconnect');

  // 10. The host comes back with another host key (its name freed at the bridge, re-enrolled): refused loudly.
  const oldKey = (await bridge.keys()).find((k) => k.kind === 'agent' && k.nickname === 'simhost');
  assert.ok(oldKey);
  await back.close();
  const revoke = await fetch(`${bridge.httpUrl}/admin/revoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bridge.adminSecret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: oldKey.md5Key }),
  });
  assert.equal(revoke.status, 200);
  const impostor = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost' } });
  await impostor.bridgeLink?.ready();
  await page.goto(`${origin}/?bridge=${encodeURIComponent(bridge.url)}#/host/simhost/dashboard`);
  const refusal = page.getByRole('heading', { name: /REFUSED: the host key of simhost changed/ });
  await refusal.waitFor({ timeout: 30_000 }).catch(async (err) => {
    console.log(await page.locator('main').innerHTML());
    throw err;
  });
  assert.match((await page.locator('.refusal').textContent()) ?? '', new RegExp(impostor.services.hostKey.fingerprint.replace(/[+/]/g, '.')));
  await shot('host-key-refused');
  // Forgetting the pin (once the host's administrator confirmed) shows the new fingerprint to compare; rejecting it connects nothing.
  await page.getByRole('button', { name: 'Forget the pinned key…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Forget the pin', exact: true }).click();
  await page.locator('#hk-fingerprint').waitFor();
  assert.equal(await page.locator('#hk-fingerprint').textContent(), impostor.services.hostKey.fingerprint);
  await page.getByRole('button', { name: 'Reject' }).click();
  await page.getByRole('heading', { name: 'Cannot reach simhost' }).waitFor();

  // The bridge relayed the whole session without seeing what the page said.
  assert.ok(frames.length > 20, `frames were recorded (${frames.length})`);
  for (const secret of [marker, SIM_PASSWORD, 'consoleuser', 's3cret-pass']) {
    assert.equal(frames.filter((f) => f.includes(secret)).length, 0, `"${secret}" never crosses the bridge in plaintext`);
  }
  assert.deepEqual(
    problems.filter((p) => !/WebSocket|ERR_CONNECTION|status of 4\d\d/.test(p)),
    [],
    'no page errors',
  );
});
