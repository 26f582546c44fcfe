/** The page of one destination: health figures, settings and actions, the delivery log. */
import type { DeliveryStatus, WebhookDelivery } from '../../../db/webhook-deliveries.ts';
import { DELIVERY_STATUSES } from '../../../db/webhook-deliveries.ts';
import type { WebhookDestination } from '../../../db/webhook-destinations.ts';
import type { DestinationHealth } from '../../../db/webhook-health.ts';
import { OUTBOUND_EVENTS } from '../../../webhooks/event-catalogue.ts';
import { type Html, html } from '../../html.ts';
import { time, when } from '../../layout.ts';
import { healthAsOf, healthSummary, localValue, STATUS_LABEL } from './shared.ts';

/** When a pending delivery is sent next, in words: a first attempt is due at once. */
export function nextAttempt(attempts: number, at: Date): Html | string {
  if (attempts === 0 || at.getTime() <= Date.now()) return 'sending now';
  return html`retry ${attempts + 1} at ${time(at)}`;
}

export function destinationBody(
  d: WebhookDestination,
  h: DestinationHealth | undefined,
  rows: WebhookDelivery[],
  o: {
    /** When the health figures were read. */
    at: Date;
    csrf: string;
    manage: boolean;
    here: string;
    status?: DeliveryStatus;
    type?: string;
    since?: Date;
    /** The page starts after this delivery (none: the newest). */
    before?: string | undefined;
    /** The last delivery shown, when older ones match too. */
    older?: string | undefined;
    pendingPing: boolean;
  },
): Html {
  const pageLink = (after?: string) => {
    const p = new URLSearchParams();
    if (o.status) p.set('status', o.status);
    if (o.type) p.set('type', o.type);
    // To the second, as parsed: the minute alone could move the filter back on the next page.
    if (o.since) p.set('since', o.since.toISOString().slice(0, 19));
    if (after) p.set('before', after);
    const qs = p.toString();
    return qs ? `${o.here}?${qs}` : o.here;
  };
  const csrfField = html`<input type="hidden" name="_csrf" value="${o.csrf}">`;
  const rate = h?.window.successRate;
  // Read with the destination, possibly seconds ago: a previous secret past its end is gone.
  const previous =
    d.previousSecret && d.previousSecret.expiresAt.getTime() > Date.now() ? d.previousSecret : null;
  return html`<p class="lead"><code>${d.url}</code></p>
${o.pendingPing ? html`<div hx-get="${o.here}?notice=pinged" hx-trigger="every 1s" hx-select="main" hx-target="main" hx-swap="outerHTML"></div>` : ''}
<dl class="figures">
  <div><dt>Health</dt><dd>${healthSummary(h, d)}</dd></div>
  <div><dt>Success, last 24 h</dt><dd>${rate === null || rate === undefined ? '—' : `${h!.window.succeeded} of ${h!.window.attempts}`}</dd></div>
  <div><dt>Latency p50 / p95</dt><dd>${h?.window.latencyMs ? `${h.window.latencyMs.p50} / ${h.window.latencyMs.p95} ms` : '—'}</dd></div>
  <div><dt>Last success</dt><dd>${time(h?.lastSuccessAt, 'Never')}</dd></div>
  <div><dt>Last failure</dt><dd>${h?.lastFailure ? html`${time(h.lastFailure.at)}<br><span class="hint">${h.lastFailure.statusCode !== null ? `HTTP ${h.lastFailure.statusCode}` : (h.lastFailure.error ?? '')}</span>` : 'None'}</dd></div>
</dl>
<p class="hint">Figures over the 24 h to ${healthAsOf(o.at)}.</p>
${
  d.disabledAt
    ? (
        () => {
          const enable = o.manage
            ? html`<form method="post" action="${o.here}/enable">${csrfField}<button type="submit">Re-enable and replay what failed</button></form>`
            : '';
          // By hand it is a state the team chose (a calm panel); by the health job, a fault to fix.
          return d.disabledBy === 'manual'
            ? html`<section class="panel disabled-panel" aria-labelledby="disabled-heading"><h2 id="disabled-heading">Disabled by your team</h2><p>${readableTimes(d.disabledReason ?? 'Disabled.')}</p>${enable}</section>`
            : html`<div class="error-summary" role="alert"><h2>Disabled automatically</h2><p>${readableTimes(d.disabledReason ?? 'Disabled.')}</p>${enable}</div>`;
        }
      )()
    : ''
}
<section class="panel" aria-labelledby="settings-heading">
  <h2 id="settings-heading">Settings</h2>
  <dl class="pairs">
<dt>Events</dt><dd>${d.eventTypes ? d.eventTypes.map((t, i) => html`${i ? ', ' : ''}<code>${t}</code>`) : 'All types'}</dd>
<dt>Signing secret</dt><dd>fingerprint <code>${d.secretFingerprint}</code>${d.secretRotatedAt ? html`, rotated ${time(d.secretRotatedAt)}` : ''}</dd>
${previous ? html`<dt>Previous secret</dt><dd><code>${previous.fingerprint}</code> still signs until ${time(previous.expiresAt)}</dd>` : ''}
<dt>Added</dt><dd>${time(d.createdAt)}</dd>
  </dl>
  ${
    o.manage
      ? html`<div class="actions-row">
<form method="post" action="${o.here}/ping">${csrfField}<button type="submit">Send a test event</button></form>
<a href="${o.here}/edit">Edit URL and events</a>
<a href="${o.here}/rotate">Rotate the secret</a>
${d.disabledAt ? '' : html`<a href="${o.here}/disable">Disable</a>`}
<a href="${o.here}/remove">Remove</a>
  </div>`
      : ''
  }
</section>
<section aria-labelledby="log-heading">
  <h2 id="log-heading">Delivery log</h2>
  <form method="get" action="${o.here}" class="inline filters">
<div class="field"><label for="f-status">Status</label><select id="f-status" name="status"><option value="">Any</option>${DELIVERY_STATUSES.map((s) => html`<option value="${s}" ${o.status === s ? 'selected' : ''}>${STATUS_LABEL[s]}</option>`)}</select></div>
<div class="field"><label for="f-type">Event type</label><select id="f-type" name="type"><option value="">Any</option>${Object.keys(OUTBOUND_EVENTS).map((t) => html`<option value="${t}" ${o.type === t ? 'selected' : ''}>${t}</option>`)}</select></div>
<div class="field"><label for="f-since">Since (UTC)</label><input type="datetime-local" id="f-since" name="since" value="${o.since ? localValue(o.since) : ''}"></div>
<div class="field"><button type="submit" class="secondary">Filter</button></div>
  </form>
  ${
    rows.length === 0
      ? html`<div class="empty"><strong>No deliveries${o.status || o.type || o.since ? ' match these filters' : ' yet'}</strong>${o.manage ? 'Send a test event to see one.' : ''}</div>`
      : html`<table class="stack">
<caption class="visually-hidden">Deliveries, newest first</caption>
<thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last answer</th><th scope="col"><span class="visually-hidden">Details</span></th></tr></thead>
<tbody>${rows.map(
          (r) => html`<tr>
  <td data-label="Created">${time(r.createdAt)}</td>
  <td data-label="Event"><code>${r.eventType}</code>${r.replayOf ? html`<br><span class="hint">replay</span>` : ''}</td>
  <td data-label="Status"><span class="status status-${r.status === 'delivered' ? 'active' : r.status === 'failed' ? 'revoked' : 'expiring'}">${STATUS_LABEL[r.status]}</span>${r.status === 'pending' ? html`<br><span class="hint">${nextAttempt(r.attempts, r.nextAttemptAt)}</span>` : ''}</td>
  <td data-label="Attempts" class="num">${r.attempts}</td>
  <td data-label="Last answer">${r.lastResponseCode !== null ? `HTTP ${r.lastResponseCode}` : (r.lastError ?? '—')}</td>
  <td class="actions"><a href="${o.here}/deliveries/${r.id}" aria-label="Details of delivery ${r.id}">Details</a></td>
</tr>`,
        )}</tbody>
  </table>`
  }
  ${
    o.before || o.older
      ? html`<nav class="pager" aria-label="Delivery log pages">${o.before ? html`<a href="${pageLink()}">Newest deliveries</a>` : ''}${o.older ? html`<a class="older" href="${pageLink(o.older)}">Older deliveries</a>` : ''}</nav>`
      : ''
  }
  ${
    o.manage && !d.disabledAt
      ? html`<form method="post" action="${o.here}/replay-failed" class="inline panel">
${csrfField}
<div class="field"><label for="replay-since">Replay every failed delivery since (UTC)</label><input type="datetime-local" id="replay-since" name="since" required value="${localValue(new Date(Date.now() - 86_400_000))}"></div>
<div class="field"><button type="submit" class="secondary">Replay failed</button></div>
  </form>`
      : ''
  }
</section>`;
}

/**
 * A stored reason's ISO 8601 times (machine-readable in the database and the CLI's JSON) written as
 * the portal writes every time: "2026-11-28 04:37 UTC".
 */
export function readableTimes(words: string): string {
  return words.replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z/g, (iso) => {
    const at = new Date(iso);
    return Number.isNaN(at.getTime()) ? iso : when(at);
  });
}
