/**
 * One delivery (its attempts, headers and payload), and replays: of one delivery, or of everything
 * that failed at a destination since a time (operations/webhook-replays.ts, as `webhook replay`).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { createWebhookDeliveriesRepo } from '../../../db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../../db/webhook-destinations.ts';
import { replayEvent, replayFailedSince } from '../../../operations/webhook-replays.ts';
import { deliveryHeaders } from '../../../webhooks/headers.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { permits } from '../../access.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  signedIn,
} from '../../context.ts';
import { html } from '../../html.ts';
import { page, time, when } from '../../layout.ts';
import { nextAttempt } from './destination-view.ts';
import { ownDestination, ownOr404, parseUtcTime, replayOr409, STATUS_LABEL } from './shared.ts';

export function deliveryRoutes(ctx: PortalContext, box: SecretBox): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const destinations = createWebhookDestinationsRepo(ctx.db, box);
    const deliveries = createWebhookDeliveriesRepo(ctx.db);
    const own = (member: Member, env: Environment, id: string) =>
      ownDestination(destinations, member, env, id);
    const manage = { config: { requires: 'webhooks.manage' as const } };

    app.get<{ Params: { env: string; id: string; delivery: string } }>(
      '/:env/webhooks/:id/deliveries/:delivery',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        // A removed destination's deliveries stay readable (its log is kept), without Replay.
        const d = ownOr404(
          await destinations.find(request.params.id),
          member,
          env,
          request.params.id,
          {
            removed: true,
          },
        );
        const r = await deliveries.detail(request.params.delivery, d.id);
        if (!r)
          throw new PortalError(
            404,
            'Delivery not found',
            'There is no such delivery to this destination.',
          );
        const { attempts } = r;
        const csrf = reply.generateCsrf();
        const manage = permits(member.role, 'webhooks.manage', env) && !d.removedAt;
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
            body: html`<p class="lead"><code>${r.eventType}</code> to <a href="${here}">${d.url}</a> · ${STATUS_LABEL[r.status]}${r.status === 'pending' ? html` (${nextAttempt(attempts.length, r.nextAttemptAt)})` : ''} · created ${when(r.createdAt)}${r.replayOf ? ` · replay of ${r.replayOf}` : ''}</p>
${manage ? html`<form method="post" action="${here}/deliveries/${r.id}/replay">${html`<input type="hidden" name="_csrf" value="${csrf}">`}<button type="submit">Replay this delivery</button></form>` : ''}
<h2>Attempts</h2>
${
  attempts.length === 0
    ? html`<div class="empty"><strong>No attempt yet</strong>The dispatcher sends it within seconds.</div>`
    : html`<table class="stack">
  <caption class="visually-hidden">Attempts</caption>
  <thead><tr><th scope="col" class="num">#</th><th scope="col">Time</th><th scope="col">Result</th><th scope="col" class="num">Latency</th><th scope="col">Response (first 1 KiB) or error</th></tr></thead>
  <tbody>${attempts.map(
    (a) =>
      html`<tr><td data-label="#" class="num">${a.attempt}</td><td data-label="Time">${time(a.attemptedAt)}</td><td data-label="Result">${a.ok ? 'Delivered' : 'Failed'}${a.statusCode !== null ? html`<br><span class="hint">HTTP ${a.statusCode}</span>` : ''}</td><td data-label="Latency" class="num">${a.durationMs} ms</td><td data-label="Response or error"><code class="excerpt">${a.error ?? a.responseBody ?? ''}</code></td></tr>`,
  )}</tbody>
</table>`
}
<h2>Headers as sent</h2>
<pre>${Object.entries(
              deliveryHeaders({
                eventType: r.eventType,
                eventId: r.eventId,
                // These two change with each attempt's time and are not kept: described, not shown.
                signature: '(HMAC-SHA256 of the body with your signing secret)',
                webhookTimestamp: "(the attempt's time, Unix seconds)",
                webhookSignature:
                  'v1,… (HMAC-SHA256 of id.timestamp.body with your signing secret)',
                sequence: r.productSeq,
                partnerSequence: r.partnerSeq,
              }),
            ).map(([name, value]) => `${name}: ${value}\n`)}</pre>
<h2>Payload</h2>
<pre>${pretty}</pre>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string; delivery: string } }>(
      '/:env/webhooks/:id/deliveries/:delivery/replay',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        const one = await deliveries.detail(request.params.delivery, d.id);
        if (!one)
          throw new PortalError(
            404,
            'Delivery not found',
            'There is no such delivery to this destination.',
          );
        await replayOr409(() => replayEvent(ctx.db, box, actorOf(request), one.eventId, d.id));
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=replayed`);
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { since?: unknown } }>(
      '/:env/webhooks/:id/replay-failed',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        const since = parseUtcTime(request.body?.since);
        if (!since)
          throw new PortalError(
            400,
            'Choose a time',
            'Say since when failed deliveries should be replayed.',
          );
        const { count } = await replayOr409(() =>
          replayFailedSince(ctx.db, box, actorOf(request), d.id, since),
        );
        // The page says how many were queued, or that there was nothing to replay.
        const said = new URLSearchParams({
          notice: 'replayed-failed',
          queued: String(count),
          failed_since: since.toISOString(),
        });
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?${said}`);
      },
    );
  };
}
