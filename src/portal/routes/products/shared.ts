import type { Member } from '../../../db/portal-members.ts';
import type { Environment, Product } from '../../../db/products.ts';
import { presentedApys, type SnapshotView } from '../../../db/snapshot-reads.ts';
import { type PortalContext, PortalError } from '../../context.ts';
import { percent } from '../../format.ts';
import { type Html, html, raw } from '../../html.ts';

export const CHART_DAYS = [7, 30, 180, 365] as const;
const DAY_MS = 86_400_000;

export const STATUS_LABEL: Record<Product['status'], string> = {
  pending_deploy: 'Deploying',
  active: 'Active',
  paused: 'Paused',
  deprecated: 'Deprecated',
};

export interface HealthBadge {
  level: 'ok' | 'warn' | 'bad' | 'neutral';
  label: string;
  detail: string;
}

/**
 * The health badge, from what the service already knows (the status follower's flags and the
 * newest snapshot), without a chain read on the page's path. Words first: the colour only repeats
 * what the label says.
 */
export function healthOf(p: Product, latest: SnapshotView | undefined, now: Date): HealthBadge {
  if (p.status === 'pending_deploy') {
    return { level: 'neutral', label: 'Not deployed yet', detail: 'The engine is being deployed.' };
  }
  if (p.upstreamHalted) {
    return {
      level: 'bad',
      label: 'Upstream halted',
      detail: 'The underlying vault is not accepting deposits; withdrawals follow its rules.',
    };
  }
  if (p.status === 'paused' || p.operatorPaused || p.chainPaused) {
    return { level: 'warn', label: 'Paused', detail: 'Deposits are off; withdrawals work.' };
  }
  if (p.status === 'deprecated') {
    return { level: 'warn', label: 'Withdrawals only', detail: 'Deprecated: hide deposits.' };
  }
  const age = latest ? (now.getTime() - Date.parse(`${latest.date}T00:00:00Z`)) / DAY_MS : 0;
  if (latest && age > 2) {
    return {
      level: 'warn',
      label: 'Figures delayed',
      detail: `The newest daily figures are of ${latest.date}.`,
    };
  }
  return { level: 'ok', label: 'Healthy', detail: 'Deposits and withdrawals work.' };
}

export function badge(h: HealthBadge): Html {
  const mark = { ok: '✓', warn: '!', bad: '✕', neutral: '…' }[h.level];
  return html`<span class="badge badge-${h.level}" title="${h.detail}"><span aria-hidden="true">${mark}</span> ${h.label}</span>`;
}

/**
 * The APYs a product is shown with: the API's rule for `latest_metrics` (presentedApys), so a
 * product without a full day of its own shows the launch-day estimate from its underlying vault,
 * labelled "Estimate" in words (the API's `apy_basis: "underlying_estimate"`).
 */
export function shownApys(s: SnapshotView | undefined) {
  const apys = s && presentedApys(s);
  const figure = (value: string | undefined): Html | string => {
    if (!apys || value === undefined) return '—';
    return apys.basis === 'engine'
      ? percent(value)
      : html`${percent(value)} <span class="badge badge-neutral estimate">Estimate</span>`;
  };
  return {
    net: figure(apys?.netApyForUser),
    underlying: figure(apys?.underlyingApy),
    estimated: apys?.basis === 'underlying_estimate',
  };
}

/** What an estimate is made of, in words (the same words on the list and the product page). */
export const ESTIMATE_BASIS =
  'the product is new and has no full day of its own yet, so its APYs are estimated from the underlying vault: the underlying’s measured APY over its latest day, and that APY with the product’s fees applied to the gain';

export function parseChartDays(raw: unknown): number {
  if (raw === undefined) return 30;
  const n = CHART_DAYS.find((d) => String(d) === raw);
  if (n === undefined) {
    throw new PortalError(400, 'No such period', 'Choose 7, 30, 180 or 365 days.');
  }
  return n;
}

/** JSON inside a <script type="application/json">: nothing in it may close the element. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** A product of the member's partner in this environment, or 404. */
export async function ownProduct(
  ctx: PortalContext,
  member: Member,
  env: Environment,
  slug: string,
): Promise<Product> {
  const p = await ctx.products.getBySlug(slug);
  if (!p || p.partnerId !== member.partnerId || p.environment !== env) {
    throw new PortalError(
      404,
      'Product not found',
      `There is no ${env} product “${slug}” in your team. Check the environment switch.`,
    );
  }
  return p;
}

export const rawJson = (value: unknown): Html => raw(jsonForScript(value));
