/**
 * Webhooks of one environment: outbound destinations (add HTTPS-only with event types from the
 * catalogue, signing secret shown once, fingerprint, rotate with a grace period, remove; editing
 * and disabling by hand are routes/webhook-edit.ts), a test event, the delivery log filtered by status, event type and time with each attempt, replay of one
 * delivery or of everything failed since a time, endpoint health with re-enable. The inbound side
 * (secret, recent inbound events, the lifecycle events they matched) is routes/inbound.ts.
 *
 * Every change is a function of the webhooks area (src/db/webhook-*.ts, inbound-*.ts), the same
 * the operator's `webhook` CLI calls; this file only checks roles, renders, and audits.
 */

import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../db/portal-members.ts';
import type { Environment } from '../../db/products.ts';
import {
  createWebhookDeliveriesRepo,
  DELIVERY_STATUSES,
  type DeliveryStatus,
  type WebhookDelivery,
  WebhookReplayError,
} from '../../db/webhook-deliveries.ts';
import {
  createWebhookDestinationsRepo,
  type WebhookDestination,
  type WebhookDestinationsRepo,
} from '../../db/webhook-destinations.ts';
import { createWebhookHealthRepo, type DestinationHealth } from '../../db/webhook-health.ts';
import { isId } from '../../ids.ts';
import { DestinationUrlError } from '../../webhooks/destination-url.ts';
import {
  OUTBOUND_EVENTS,
  type OutboundEventDefinition,
  SUBSCRIBABLE_EVENT_TYPES,
} from '../../webhooks/event-catalogue.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import {
  envParam,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  sessionOf,
} from '../context.ts';
import { type Html, html } from '../html.ts';
import { page, time, when } from '../layout.ts';
import { canManageWebhooks } from '../roles.ts';

const GRACE: Record<string, { ms: number; label: string }> = {
  '0': { ms: 0, label: 'None: the old secret stops signing at once' },
  '1h': { ms: 3_600_000, label: '1 hour' },
  '24h': { ms: 86_400_000, label: '24 hours' },
  '7d': { ms: 7 * 86_400_000, label: '7 days' },
};
const STATUS_LABEL: Record<DeliveryStatus, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed',
};

export function refuse(member: Member, env: Environment): PortalError {
  return new PortalError(
    403,
    'Not allowed',
    `As ${member.role} you can see ${env} webhooks but not change them. Ask an owner or admin of your team.`,
  );
}

export function secretPanel(secret: string, heading: string, note: Html | string = ''): Html {
  return html`<section class="secret" aria-labelledby="secret-heading">
  <h2 id="secret-heading">${heading}</h2>
  <p>Copy it now and store it where your receiver reads it. It is shown <strong>only once</strong>. ${note}</p>
  <div class="secret-value">
    <code id="new-secret" aria-label="Signing secret">${secret}</code>
    <button type="button" class="secondary" data-copy="new-secret">Copy</button>
  </div>
</section>`;
}

/** Deliveries on a page of the destination's log. */
const LOG_PAGE = 50;

/** A datetime-local value (UTC) or undefined; the form says the times are UTC. */
function parseUtcTime(raw: unknown): Date | undefined {
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
const localValue = (d: Date) => d.toISOString().slice(0, 16);

/** An active destination of the member's team in `env`, or a 404 page. */
export async function ownDestination(
  destinations: WebhookDestinationsRepo,
  member: Member,
  env: Environment,
  id: string,
): Promise<WebhookDestination> {
  return ownOr404(await destinations.find(id), member, env, id);
}

/** The destination read for `id` if it is an active one of the member's team in `env`, or 404. */
function ownOr404(
  d: WebhookDestination | undefined,
  member: Member,
  env: Environment,
  id: string,
): WebhookDestination {
  if (!d || d.partnerId !== member.partnerId || d.environment !== env || d.removedAt) {
    throw new PortalError(
      404,
      'Destination not found',
      `There is no ${env} destination ${id} in your team.`,
    );
  }
  return d;
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
    <p class="hint" id="${id}-desc">${def.description}</p>
    <details><summary>Example payload of ${t}</summary><pre>${JSON.stringify(def.example, null, 2)}</pre></details>
  </div>`;
  })}
</fieldset>`;
}

/** When the health figures' 24 hours end: they are read at most a few seconds before the page. */
const healthAsOf = (at: Date) =>
  html`<time datetime="${at.toISOString()}">${at.toISOString().slice(11, 19)} UTC</time>`;

function healthSummary(h: DestinationHealth | undefined, d: WebhookDestination): Html {
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

export function webhooksRoutes(ctx: PortalContext, box: SecretBox): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const destinations = createWebhookDestinationsRepo(ctx.db, box);
    const deliveries = createWebhookDeliveriesRepo(ctx.db);
    const health = createWebhookHealthRepo(ctx.db);

    const own = (member: Member, env: Environment, id: string) =>
      ownDestination(destinations, member, env, id);

    function mustManage(member: Member, env: Environment) {
      if (!canManageWebhooks(member.role, env)) throw refuse(member, env);
    }

    async function listPage(
      member: Member,
      env: Environment,
      csrf: string,
      extra: {
        created?: Html;
        errors?: string[];
        url?: string;
        types?: string[];
        notice?: string;
      } = {},
    ) {
      const { list, stats, at } = await ctx.webhookPages.get(
        `list:${member.partnerId}:${env}`,
        async () => {
          const at = new Date();
          const list = await destinations.list({ partnerId: member.partnerId, environment: env });
          const stats = new Map(
            (list.length
              ? await health.stats(
                  list.map((d) => d.id),
                  at,
                )
              : []
            ).map((h) => [h.destinationId, h]),
          );
          return { list, stats, at };
        },
      );
      const manage = canManageWebhooks(member.role, env);
      const body = html`<p class="lead">We send a signed HTTPS POST to each destination when something happens to your ${env} products. <a href="${base()}/${env}/webhooks/inbound">Inbound webhooks</a> are the events you send us.</p>
${extra.created ?? ''}
<h2>Destinations</h2>
${
  list.length === 0
    ? html`<div class="empty"><strong>No ${env} destinations yet</strong>${manage ? 'Add one below to receive events.' : 'Ask an owner or admin to add one.'}</div>`
    : html`<table>
  <caption class="visually-hidden">${env} webhook destinations</caption>
  <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Secret</th><th scope="col">Health</th><th scope="col">Last success</th></tr></thead>
  <tbody>${list.map((d) => {
    const h = stats.get(d.id);
    return html`<tr>
    <th scope="row"><a href="${base()}/${env}/webhooks/${d.id}">${d.url}</a></th>
    <td>${d.eventTypes ? d.eventTypes.join(', ') : 'All types'}</td>
    <td><code>${d.secretFingerprint}</code></td>
    <td>${healthSummary(h, d)}</td>
    <td>${time(h?.lastSuccessAt, 'Never')}</td>
  </tr>`;
  })}</tbody>
</table>
<p class="hint">Health over the 24 h to ${healthAsOf(at)}.</p>`
}
${
  manage
    ? html`<section class="panel" aria-labelledby="add-heading">
  <h2 id="add-heading">Add a ${env} destination</h2>
  <form method="post" action="${base()}/${env}/webhooks">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="field"><label for="dest-url">Endpoint URL (HTTPS)</label>
      <input type="url" id="dest-url" name="url" required maxlength="2048" placeholder="https://example.com/webhooks/yield" value="${extra.url ?? ''}" ${extra.errors?.length ? html`aria-invalid="true"` : ''}></div>
    ${eventTypePicker(extra.types ?? [])}
    <div class="buttons"><button type="submit">Add destination</button></div>
  </form>
</section>`
    : html`<p class="hint">Your role (${member.role}) can see ${env} webhooks; owners and admins${env === 'test' ? ' and developers' : ''} change them.</p>`
}`;
      return page({
        title: 'Webhooks',
        base: base(),
        csrf,
        member,
        env,
        section: 'webhooks',
        errors: extra.errors,
        notice: extra.notice,
        body,
      });
    }

    const bodyTypes = (raw: unknown): string[] =>
      (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter(
        (t): t is string => typeof t === 'string',
      );

    app.get<{ Params: { env: string }; Querystring: { removed?: string } }>(
      '/:env/webhooks',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        const removed = request.query.removed;
        return sendPage(
          reply,
          await listPage(member, env, reply.generateCsrf(), {
            notice:
              typeof removed === 'string' && /^whk_\w+$/.test(removed)
                ? `Destination ${removed} is removed.`
                : undefined,
          }),
        );
      },
    );

    app.post<{ Params: { env: string }; Body: { url?: unknown; event_types?: unknown } }>(
      '/:env/webhooks',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const url = typeof request.body?.url === 'string' ? request.body.url.trim() : '';
        const types = bodyTypes(request.body?.event_types);
        const unknown = types.filter(
          (t) => !(SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t),
        );
        const again = (errors: string[]) =>
          listPage(member, env, reply.generateCsrf(), { errors, url, types }).then((p) =>
            sendPage(reply, p, 400),
          );
        if (unknown.length)
          return again([`There is no event type ${unknown.join(', ')}: pick from the list.`]);
        try {
          const { destination, secret } = await destinations.add({
            partnerId: member.partnerId,
            environment: env,
            url,
            eventTypes: types,
          });
          await ctx.record(request, member, {
            action: 'webhook.added',
            environment: env,
            target: `${destination.id} ${destination.url}`,
          });
          return sendPage(
            reply,
            await listPage(member, env, reply.generateCsrf(), {
              created: secretPanel(
                secret,
                `Signing secret of ${destination.url}`,
                html`Fingerprint <code>${destination.secretFingerprint}</code>.`,
              ),
            }),
          );
        } catch (err) {
          if (!(err instanceof DestinationUrlError)) throw err;
          return again([
            `That URL does not work: ${err.message}. Destinations must be https:// URLs.`,
          ]);
        }
      },
    );

    app.get<{
      Params: { env: string; id: string };
      Querystring: {
        status?: string;
        type?: string;
        since?: string;
        before?: string;
        notice?: string;
      };
    }>('/:env/webhooks/:id', async (request, reply) => {
      const env = envParam(request);
      const { member } = sessionOf(request);
      const id = request.params.id;
      const q = request.query;
      const status = DELIVERY_STATUSES.includes(q.status as DeliveryStatus)
        ? (q.status as DeliveryStatus)
        : undefined;
      const type =
        typeof q.type === 'string' && q.type !== '' && q.type.length <= 100 ? q.type : undefined;
      const since = parseUtcTime(q.since);
      const before = typeof q.before === 'string' && isId('dlv', q.before) ? q.before : undefined;
      // JSON, not joined with ':': a type or an id may contain ':' and must not reach another key.
      const key = `destination:${JSON.stringify([id, status, type, since?.toISOString(), before])}`;
      const read = await ctx.webhookPages.get(key, async () => {
        const at = new Date();
        // The destination and its figures in one statement, the log beside it; whose it is is
        // checked once both are in (a stranger's log is read and dropped, never shown).
        const [withStats, log] = await Promise.all([
          health.destinationWithStats(id, at),
          // One more than a page: whether there is an older one.
          deliveries.list({
            destinationId: id,
            ...(status ? { status } : {}),
            ...(type ? { eventType: type } : {}),
            ...(since ? { createdSince: since } : {}),
            ...(before ? { before } : {}),
            limit: LOG_PAGE + 1,
          }),
        ]);
        return withStats && { found: withStats.destination, h: withStats.health, log, at };
      });
      const d = ownOr404(read?.found, member, env, id);
      const { h, at } = read!;
      const rows = read!.log.slice(0, LOG_PAGE);
      const older = read!.log.length > LOG_PAGE ? rows.at(-1)!.id : undefined;
      const csrf = reply.generateCsrf();
      const manage = canManageWebhooks(member.role, env);
      const here = `${base()}/${env}/webhooks/${d.id}`;
      const notice = {
        pinged:
          'Test event sent. It appears below; this page refreshes until it is delivered or fails.',
        rotated: undefined,
        enabled: 'Re-enabled. What failed while it was disabled is being sent again.',
        updated: 'Saved. The changes apply to what is sent from now on.',
        disabled:
          'Disabled. Nothing is sent to it until you re-enable it; what fails meanwhile is kept for then.',
        replayed: 'Replay queued.',
      }[q.notice ?? ''];
      const pendingPing = q.notice === 'pinged' && rows.some((r) => r.status === 'pending');
      return sendPage(
        reply,
        page({
          title: 'Webhook destination',
          base: base(),
          csrf,
          member,
          env,
          section: 'webhooks',
          notice,
          body: destinationBody(d, h, rows, {
            at,
            csrf,
            manage,
            here,
            status,
            type,
            since,
            before,
            older,
            pendingPing,
          }),
        }),
      );
    });

    function destinationBody(
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
        d.previousSecret && d.previousSecret.expiresAt.getTime() > Date.now()
          ? d.previousSecret
          : null;
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
            ? html`<section class="panel disabled-panel" aria-labelledby="disabled-heading"><h2 id="disabled-heading">Disabled by your team</h2><p>${d.disabledReason ?? 'Disabled.'}</p>${enable}</section>`
            : html`<div class="error-summary" role="alert"><h2>Disabled automatically</h2><p>${d.disabledReason ?? 'Disabled.'}</p>${enable}</div>`;
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
      : html`<table>
    <caption class="visually-hidden">Deliveries, newest first</caption>
    <thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last answer</th><th scope="col"><span class="visually-hidden">Details</span></th></tr></thead>
    <tbody>${rows.map(
      (r) => html`<tr>
      <td>${time(r.createdAt)}</td>
      <td><code>${r.eventType}</code>${r.replayOf ? html`<br><span class="hint">replay</span>` : ''}</td>
      <td><span class="status status-${r.status === 'delivered' ? 'active' : r.status === 'failed' ? 'revoked' : 'expiring'}">${STATUS_LABEL[r.status]}</span></td>
      <td class="num">${r.attempts}</td>
      <td>${r.lastResponseCode !== null ? `HTTP ${r.lastResponseCode}` : (r.lastError ?? '—')}</td>
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

    app.get<{ Params: { env: string; id: string; delivery: string } }>(
      '/:env/webhooks/:id/deliveries/:delivery',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        const d = await own(member, env, request.params.id);
        const r = await deliveries.detail(request.params.delivery, d.id);
        if (!r)
          throw new PortalError(
            404,
            'Delivery not found',
            'There is no such delivery to this destination.',
          );
        const { attempts } = r;
        const csrf = reply.generateCsrf();
        const manage = canManageWebhooks(member.role, env);
        const here = `${base()}/${env}/webhooks/${d.id}`;
        let pretty = r.payload;
        try {
          pretty = JSON.stringify(JSON.parse(r.payload), null, 2);
        } catch {}
        return sendPage(
          reply,
          page({
            title: 'Delivery',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: html`<p class="lead"><code>${r.eventType}</code> to <a href="${here}">${d.url}</a> · ${STATUS_LABEL[r.status]} · created ${when(r.createdAt)}${r.replayOf ? ` · replay of ${r.replayOf}` : ''}</p>
${manage ? html`<form method="post" action="${here}/deliveries/${r.id}/replay">${html`<input type="hidden" name="_csrf" value="${csrf}">`}<button type="submit">Replay this delivery</button></form>` : ''}
<h2>Attempts</h2>
${
  attempts.length === 0
    ? html`<div class="empty"><strong>No attempt yet</strong>The dispatcher sends it within seconds.</div>`
    : html`<table>
  <caption class="visually-hidden">Attempts</caption>
  <thead><tr><th scope="col" class="num">#</th><th scope="col">Time</th><th scope="col">Result</th><th scope="col" class="num">Latency</th><th scope="col">Response (first 1 KiB) or error</th></tr></thead>
  <tbody>${attempts.map(
    (a) =>
      html`<tr><td class="num">${a.attempt}</td><td>${time(a.attemptedAt)}</td><td>${a.ok ? 'Delivered' : 'Failed'}${a.statusCode !== null ? html`<br><span class="hint">HTTP ${a.statusCode}</span>` : ''}</td><td class="num">${a.durationMs} ms</td><td><code class="excerpt">${a.error ?? a.responseBody ?? ''}</code></td></tr>`,
  )}</tbody>
</table>`
}
<h2>Headers as sent</h2>
<pre>content-type: application/json
x-service-event: ${r.eventType}
x-service-event-id: ${r.eventId}
webhook-id: ${r.eventId}
webhook-timestamp: (the attempt's time, Unix seconds)
webhook-signature: v1,… (HMAC-SHA256 of id.timestamp.body with your signing secret)
x-service-signature: (HMAC-SHA256 of the body with your signing secret)</pre>
<h2>Payload</h2>
<pre>${pretty}</pre>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string; delivery: string } }>(
      '/:env/webhooks/:id/deliveries/:delivery/replay',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const [one] = await deliveries
          .list({ destinationId: d.id, limit: 1000 })
          .then((l) => l.filter((x) => x.id === request.params.delivery));
        if (!one)
          throw new PortalError(
            404,
            'Delivery not found',
            'There is no such delivery to this destination.',
          );
        await replayOr400(() => deliveries.replayEvent(one.eventId, d.id));
        await ctx.record(request, member, {
          action: 'webhook.replayed',
          environment: env,
          target: `${d.id} delivery ${one.id}`,
        });
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=replayed`);
      },
    );

    async function replayOr400<T>(fn: () => Promise<T>): Promise<T> {
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

    app.post<{ Params: { env: string; id: string }; Body: { since?: unknown } }>(
      '/:env/webhooks/:id/replay-failed',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const since = parseUtcTime(request.body?.since);
        if (!since)
          throw new PortalError(
            400,
            'Choose a time',
            'Say since when failed deliveries should be replayed.',
          );
        const { count } = await replayOr400(() => deliveries.replayFailed(d.id, since));
        await ctx.record(request, member, {
          action: 'webhook.replayed',
          environment: env,
          target: `${d.id} ${count} failed since ${when(since)}`,
        });
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=replayed`);
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/ping',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const { delivery } = await replayOr400(() => deliveries.enqueuePing(d.id));
        await ctx.record(request, member, {
          action: 'webhook.pinged',
          environment: env,
          target: `${d.id} delivery ${delivery.id}`,
        });
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=pinged`);
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/enable',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        if (!d.disabledAt)
          throw new PortalError(409, 'Not disabled', 'This destination is already enabled.');
        const { replayed } = await health.enable(d.id);
        await ctx.record(request, member, {
          action: 'webhook.enabled',
          environment: env,
          target: `${d.id}, ${replayed.length} replayed`,
        });
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=enabled`);
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/rotate',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Rotate a signing secret',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: html`<p>Rotating the secret of <code>${d.url}</code> makes a new one, shown once. During the grace period every delivery carries a signature with each secret (<code>webhook-signature</code> lists both), so your receiver keeps verifying while you deploy the new secret.</p>
<form method="post" action="${base()}/${env}/webhooks/${d.id}/rotate" class="panel">
  <input type="hidden" name="_csrf" value="${csrf}">
  <fieldset><legend>How long should the old secret keep signing?</legend>
  ${Object.entries(GRACE).map(([k, g]) => html`<div class="radio"><input type="radio" id="grace-${k}" name="grace" value="${k}" ${k === '24h' ? 'checked' : ''}><label for="grace-${k}">${g.label}</label></div>`)}
  </fieldset>
  <div class="buttons"><button type="submit">Rotate secret</button><a href="${base()}/${env}/webhooks/${d.id}">Cancel</a></div>
</form>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { grace?: unknown } }>(
      '/:env/webhooks/:id/rotate',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const grace = GRACE[String(request.body?.grace)];
        if (!grace)
          throw new PortalError(
            400,
            'Choose a grace period',
            'Pick none, 1 hour, 24 hours or 7 days, then rotate again.',
          );
        const rotated = await destinations.rotate(d.id, { graceMs: grace.ms });
        if (!rotated)
          throw new PortalError(404, 'Destination not found', 'It was removed meanwhile.');
        await ctx.record(request, member, {
          action: 'webhook.rotated',
          environment: env,
          target: `${d.id} grace ${grace.label}`,
        });
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Webhook destination',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: html`${secretPanel(
              rotated.secret,
              `New signing secret of ${d.url}`,
              rotated.destination.previousSecret
                ? html`The old secret (<code>${rotated.destination.previousSecret.fingerprint}</code>) keeps signing until ${when(rotated.destination.previousSecret.expiresAt)}.`
                : 'The old secret no longer signs.',
            )}<p><a href="${base()}/${env}/webhooks/${d.id}">Back to the destination</a></p>`,
          }),
        );
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/remove',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Remove a destination',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: html`<div class="panel"><p>Remove <code>${d.url}</code>? No more events are sent to it and pending deliveries are dropped. Its delivery log is kept. This cannot be undone.</p>
<form method="post" action="${base()}/${env}/webhooks/${d.id}/remove" class="buttons"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit" class="danger">Remove destination</button><a href="${base()}/${env}/webhooks/${d.id}">Cancel</a></form></div>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/remove',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        mustManage(member, env);
        const d = await own(member, env, request.params.id);
        await destinations.remove(d.id);
        await ctx.record(request, member, {
          action: 'webhook.removed',
          environment: env,
          target: `${d.id} ${d.url}`,
        });
        return seeOther(reply, `${base()}/${env}/webhooks?removed=${d.id}`);
      },
    );
  };
}
