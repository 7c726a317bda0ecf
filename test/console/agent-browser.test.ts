/**
 * The console served by an agent, for a host on the LAN: the page talks to that host directly (no
 * bridge, no enrollment): a key made in the browser, registered with the password, then key sign-in,
 * the dashboard and the users list. Debian's Chromium through playwright-core; skipped without it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureConsoleBuilt } from '../../scripts/build-console.ts';
import { agentFor, SIM_PASSWORD } from '../helpers/agent.ts';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';

const skip = chromiumMissing;

test('the console at an agent: key, password once, then key sign-in to that host directly', { skip, timeout: 120_000 }, async (t) => {
  ensureConsoleBuilt({ quiet: true });
  const agent = await agentFor(t);
  const browser = await launchChromium(t);
  const page = await browser.newPage();
  await page.goto(`${agent.httpUrl}/`);
  await page.getByRole('button', { name: 'Create a key' }).click();
  await page.locator('#key-md5').waitFor();
  assert.equal(await page.getByLabel('Client join token (once)').count(), 0, 'no bridge, nothing to enroll at');
  assert.match((await page.locator('header').textContent()) ?? '', /\(direct\)/);
  await page.getByRole('link', { name: 'Hosts' }).click();
  await page.getByLabel('Password').fill(SIM_PASSWORD);
  await page.getByRole('button', { name: 'Sign in and register' }).click();
  await page.getByText('Key registered on this-host').waitFor();
  // The page keeps no password: opening the host from here on can only be the key's sign-in.
  await page.getByRole('link', { name: 'this-host' }).click();
  await page.getByText('Intel(R) Core(TM)').waitFor();
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByRole('cell', { name: 'operator', exact: true }).first().waitFor();
});
