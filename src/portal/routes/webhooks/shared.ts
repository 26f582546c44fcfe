/**
 * What the webhook pages share: labels, the secret panel, a destination's look-up (404 when it is
 * not the member's), the event-type picker, the health badge, and the UTC time field's parsing.
 */
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import type { DeliveryStatus } from '../../../db/webhook-deliveries.ts';
import { WebhookReplayError } from '../../../db/webhook-deliveries.ts';
import type {
  WebhookDestination,
  WebhookDestinationsRepo,
} from '../../../db/webhook-destinations.ts';
import type { DestinationHealth } from '../../../db/webhook-health.ts';
import {
  OUTBOUND_EVENTS,
  type OutboundEventDefinition,
  SUBSCRIBABLE_EVENT_TYPES,
} from '../../../webhooks/event-catalogue.ts';
import { PortalError } from '../../context.ts';
import { type Html, html } from '../../html.ts';

export const GRACE: Record<string, { ms: number; label: string }> = {
  '0': { ms: 0, label: 'None: the old secret stops signing at once' },
  '1h': { ms: 3_600_000, label: '1 hour' },
  '24h': { ms: 86_400_000, label: '24 hours' },
  '7d': { ms: 7 * 86_400_000, label: '7 days' },
};
export const STATUS_LABEL: Record<DeliveryStatus, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed',
};

export function secretPanel(
  secret: string,
  heading: string,
  note: Html | string = '',
  /** Where the secret is used: the receiver verifies outbound deliveries, the sender signs inbound. */
  where = 'where your receiver reads it',
): Html {
  return html`<section class="secret" aria-labelledby="secret-heading" hx-history="false">
  <h2 id="secret-heading">${heading}</h2>
  <p>Copy it now and store it ${where}. It is shown <strong>only once</strong>. ${note}</p>
  <div class="secret-value">
    <code id="new-secret" aria-label="Signing secret">${secret}</code>
    <button type="button" class="secondary" data-copy="new-secret">Copy</button>
  </div>
</section>`;
}

/** Deliveries on a page of the destination's log. */
export const LOG_PAGE = 50;

/** A datetime-local value (UTC) or undefined; the form says the times are UTC. */
export function parseUtcTime(raw: unknown): Date | undefined {
  if (typeof raw !== 'string' || raw === '') return undefined;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?$/.exec(raw);
  const t = m ? Date.parse(`${m[1]}T${m[2]}${m[3] ?? ':00'}Z`) : Number.NaN;
  if (Number.isNaN(t)) {
    throw new PortalError(
      400,
      'That time does not work',
      `“${raw.slice(0, 40)}” is not a date and time. Use the picker, in UTC.`,
    );
  }
  return new Date(t);
}
export const localValue = (d: Date) => d.toISOString().slice(0, 16);

/** An active destination of the member's team in `env`, or a 404 page. */
export async function ownDestination(
  destinations: WebhookDestinationsRepo,
  member: Member,
  env: Environment,
  id: string,
): Promise<WebhookDestination> {
  return ownOr404(await destinations.find(id), member, env, id);
}

/**
 * The destination read for `id` if it is one of the member's team in `env`, or 404; a removed one
 * only for the pages that show it read-only (its page and its deliveries': the log is kept).
 */
export function ownOr404(
  d: WebhookDestination | undefined,
  member: Member,
  env: Environment,
  id: string,
  opts: { removed?: boolean } = {},
): WebhookDestination {
  if (
    !d ||
    d.partnerId !== member.partnerId ||
    d.environment !== env ||
    (d.removedAt && !opts.removed)
  ) {
    throw new PortalError(
      404,
      'Destination not found',
      `There is no ${env} destination ${id} in your team.`,
    );
  }
  return d;
}

/** Catalogue prose, whose `names` are Markdown code spans, as markup (every part escaped). */
function withCodeSpans(text: string): Html {
  return html`${text.split('`').map((part, i) => (i % 2 ? html`<code>${part}</code>` : html`${part}`))}`;
}

/** The catalogue's subscribable types as checkboxes, each with its description and example. */
export function eventTypePicker(checked: readonly string[]): Html {
  return html`<fieldset class="event-types">
  <legend>Event types <span class="hint">(none ticked: every type, including those added later)</span></legend>
  ${SUBSCRIBABLE_EVENT_TYPES.map((t) => {
    const def = OUTBOUND_EVENTS[t] as OutboundEventDefinition;
    const id = `type-${t.replace(/\W/g, '-')}`;
    return html`<div class="event-type">
    <div class="checkbox"><input type="checkbox" id="${id}" name="event_types" value="${t}" ${checked.includes(t) ? 'checked' : ''} aria-describedby="${id}-desc"><label for="${id}"><code>${t}</code></label></div>
    <p class="hint" id="${id}-desc">${withCodeSpans(def.description)}</p>
    <details><summary>Example payload of ${t}</summary><pre>${JSON.stringify(def.example, null, 2)}</pre></details>
  </div>`;
  })}
</fieldset>`;
}

/** When the health figures' 24 hours end: they are read at most a few seconds before the page. */
export const healthAsOf = (at: Date) =>
  html`<time datetime="${at.toISOString()}">${at.toISOString().slice(11, 19)} UTC</time>`;

export function healthSummary(h: DestinationHealth | undefined, d: WebhookDestination): Html {
  if (d.removedAt) {
    return html`<span class="badge badge-neutral"><span aria-hidden="true">–</span> Removed</span>`;
  }
  if (d.disabledAt) {
    // Disabled by hand is a choice, not a fault: a neutral badge; by the health job, a bad one.
    // Who disabled it is said in words too, not by colour alone.
    return d.disabledBy === 'manual'
      ? html`<span class="badge badge-neutral"><span aria-hidden="true">–</span> Disabled</span><br><span class="hint">by your team</span>`
      : html`<span class="badge badge-bad"><span aria-hidden="true">✕</span> Disabled</span><br><span class="hint">automatically: failing</span>`;
  }
  const rate = h?.window.successRate;
  if (rate === null || rate === undefined) {
    return html`<span class="badge badge-neutral"><span aria-hidden="true">…</span> No attempts in 24 h</span>`;
  }
  const pct = `${(rate * 100).toFixed(rate === 1 ? 0 : 1)} %`;
  return rate >= 0.95
    ? html`<span class="badge badge-ok"><span aria-hidden="true">✓</span> ${pct} delivered</span>`
    : html`<span class="badge badge-warn"><span aria-hidden="true">!</span> ${pct} delivered</span>`;
}

/** A replay the deliveries refuse (removed or disabled destination): 409 in words. */
export async function replayOr409<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof WebhookReplayError) {
      throw new PortalError(
        409,
        'That cannot be replayed',
        `${err.message[0]!.toUpperCase()}${err.message.slice(1)}.`,
      );
    }
    throw err;
  }
}

/** A form's repeated field as a list of strings (one value arrives as a string). */
export const fieldList = (raw: unknown): string[] =>
  (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter(
    (t): t is string => typeof t === 'string',
  );
