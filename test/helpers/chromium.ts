/**
 * Debian's Chromium for the browser tests, driven by playwright-core (no browser download). The flags
 * are those the machine notes found necessary: headless as root, and no background connections,
 * which this machine's closed network refuses many at a time.
 */
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import type { Browser } from 'playwright-core';

export const CHROMIUM = process.env.HOSTADM_CHROMIUM ?? '/usr/bin/chromium';

/** Why a browser test cannot run here, or false. */
export const chromiumMissing: string | false = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian: apt-get install chromium)`;

/** A headless Chromium closed when the test ends. */
export async function launchChromium(t: TestContext): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
  t.after(() => browser.close());
  return browser;
}
