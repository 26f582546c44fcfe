/**
 * Chromium for the portal's browser suites: Debian's chromium driven by playwright-core (see
 * ../shared/ENVIRONMENT.md). CHROMIUM_PATH names another binary. On a machine without Chromium the
 * suites skip with a message, except in CI (CI=true), where .ci/run installs it and its absence is a
 * failure.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const message = `Chromium not found at ${CHROMIUM_PATH}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`;
  if (process.env.CI === 'true') throw new Error(message);
  process.stderr.write(`Skipping browser tests. ${message}\n`);
  return message;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // The portal's default address is localhost (a valid WebAuthn RP id); serve it from IPv4.
      '--host-resolver-rules=MAP localhost 127.0.0.1',
    ],
  });
}

export const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * Runs axe-core in the page (WCAG 2.x A and AA rules and axe's best practices) and returns its
 * violations of the given impacts (all of them unless said), one line each. Evaluated through the
 * DevTools protocol, so the page's CSP does not apply to it.
 */
export async function a11yViolations(
  page: Page,
  impacts: readonly string[] = ['minor', 'moderate', 'serious', 'critical'],
): Promise<string[]> {
  if (!(await page.evaluate("'axe' in window"))) await page.evaluate(axeSource);
  // A string, evaluated in the page: the test program has no DOM types.
  const violations = (await page.evaluate(
    `axe.run(document, {
       runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] },
       resultTypes: ['violations'],
     })
       .then((r) => r.violations)`,
  )) as AxeViolation[];
  return violations
    .filter((v) => impacts.includes(v.impact ?? ''))
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`,
    );
}

/** The serious and critical violations (a11yViolations). */
export function seriousA11yViolations(page: Page): Promise<string[]> {
  return a11yViolations(page, ['serious', 'critical']);
}
