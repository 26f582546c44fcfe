/**
 * Inbound webhooks of one environment: the inbound secret (created or rotated here, shown once,
 * then only its fingerprint), the recent inbound events with their idempotency keys, the requests
 * that repeated a key (duplicates absorbed, conflicts refused: counted on the event they repeated,
 * migration 0028), and links to the lifecycle events they matched. A lifecycle event's page shows
 * the event as stored (the payload webhooks carry), the inbound events that announced it and its
 * deliveries to the environment's destinations.
 */
import type { FastifyPluginAsync } from 'fastify';
import { createEventsRepo, type StoredEvent } from '../../../db/events.ts';
import { createInboundEventsRepo, type InboundEvent } from '../../../db/inbound-events.ts';
import { createInboundSecretsRepo } from '../../../db/inbound-secrets.ts';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { createWebhookDeliveriesRepo } from '../../../db/webhook-deliveries.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { permits } from '../../access.ts';
import { type PortalContext, PortalError, sendPage, signedIn } from '../../context.ts';
import { type Html, html } from '../../html.ts';
import { page, time } from '../../layout.ts';

/** How many inbound events the page lists, newest first. */
export const RECENT_INBOUND_EVENTS = 50;

/** "3 duplicates absorbed" and "1 conflict refused (409)", each with its latest time; or a dash. */
function repeats(e: InboundEvent): Html | string {
  const lines: Html[] = [];
  if (e.duplicateCount > 0) {
    lines.push(
      html`<div>${e.duplicateCount} duplicate${e.duplicateCount === 1 ? '' : 's'} absorbed<br><span class="hint">last ${time(e.lastDuplicateAt)}</span></div>`,
    );
  }
  if (e.conflictCount > 0) {
    lines.push(
      html`<div>${e.conflictCount} conflict${e.conflictCount === 1 ? '' : 's'} refused (409)<br><span class="hint">last ${time(e.lastConflictAt)}</span></div>`,
    );
  }
  return lines.length ? html`${lines}` : '—';
}

export function inboundRoutes(ctx: PortalContext, box: SecretBox): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const inboundSecrets = createInboundSecretsRepo(ctx.db, box);
    const inboundEvents = createInboundEventsRepo(ctx.db);
    const events = createEventsRepo(ctx.db);
    const deliveries = createWebhookDeliveriesRepo(ctx.db);

    const eventLink = (env: Environment, id: string) =>
      html`<a href="${base()}/${env}/webhooks/events/${id}"><code class="long-id">${id}</code></a>`;

    async function inboundPage(member: Member, env: Environment, csrf: string) {
      const { info, recent } = await ctx.webhookPages.get(
        `inbound:${member.partnerId}:${env}`,
        async () => {
          const [info, recent] = await Promise.all([
            inboundSecrets
              .list(member.partnerId)
              .then((all) => all.find((s) => s.environment === env)),
            inboundEvents.recent(member.partnerId, env, RECENT_INBOUND_EVENTS),
          ]);
          return { info, recent };
        },
      );
      const manage = permits(member.role, 'webhooks.manage', env);
      const anyRepeat = recent.some((e) => e.duplicateCount > 0 || e.conflictCount > 0);
      return page({
        title: 'Inbound webhooks',
        base: base(),
        csrf,
        member,
        env,
        section: 'webhooks',
        body: html`<p class="lead">Events you send us (<code>POST /api/partner/webhooks/inbound</code>), signed with the ${env} inbound secret. <a href="${base()}/${env}/webhooks">Outbound destinations</a></p>
<section class="panel" aria-labelledby="inbound-secret-heading">
  <h2 id="inbound-secret-heading">Inbound secret</h2>
  ${info ? html`<p>Fingerprint <code>${info.fingerprint}</code>, created ${time(info.createdAt)}${info.rotatedAt ? html`, rotated ${time(info.rotatedAt)}` : ''}. The secret itself is never shown again.</p>` : html`<p>No ${env} inbound secret yet: inbound events are refused until you create one.</p>`}
  ${info?.previous && info.previous.expiresAt.getTime() > Date.now() ? html`<p>The previous secret (<code>${info.previous.fingerprint}</code>) still verifies until ${time(info.previous.expiresAt)}.</p>` : ''}
  ${
    !manage
      ? ''
      : info
        ? html`<p><a href="${base()}/${env}/webhooks/inbound/secret/rotate">Rotate the inbound secret</a> <span class="hint">You choose how long the old one keeps verifying.</span></p>`
        : html`<form method="post" action="${base()}/${env}/webhooks/inbound/secret"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit">Create the inbound secret</button></form>`
  }
</section>
<h2>Recent inbound events</h2>
${
  recent.length === 0
    ? html`<div class="empty"><strong>No inbound events yet</strong>Events you send appear here with their idempotency keys.</div>`
    : html`<table class="stack inbound-events"><caption class="visually-hidden">${recent.length === 1 ? 'The one inbound event so far' : `The ${recent.length} most recent inbound events, newest first`}</caption>
  <thead><tr><th scope="col">Received</th><th scope="col">Type</th><th scope="col">Idempotency key</th><th scope="col">Repeats of the key</th><th scope="col">Transaction</th><th scope="col">Matched lifecycle event</th></tr></thead>
  <tbody>${recent.map(
    (e) =>
      html`<tr><td data-label="Received">${time(e.receivedAt)}</td><td data-label="Type" class="nowrap"><code>${e.eventType}</code></td><td data-label="Idempotency key"><code class="long-id">${e.idempotencyKey}</code></td><td data-label="Repeats of the key">${repeats(e)}</td><td data-label="Transaction" class="nowrap">${e.txHash ? html`<code title="${e.txHash}">${e.txHash.slice(0, 10)}…</code>` : '—'}</td><td data-label="Matched lifecycle event">${e.linkedEventId ? eventLink(env, e.linkedEventId) : e.txHash ? 'Not yet seen on chain' : '—'}</td></tr>`,
  )}</tbody></table>
<p class="hint">A repeated request with the same idempotency key and the same body is a <strong>duplicate</strong>: answered with the original event (<code>duplicate: true</code>) and not stored again. The same key with another body is a <strong>conflict</strong>, refused with <code>409 idempotency_conflict</code>. Both are counted on the original event${anyRepeat ? '' : '; none so far'}. A submitted deposit or redeem links to the lifecycle event of its transaction once we see it on chain.</p>`
}`,
      });
    }

    const anyMember = { config: { requires: 'member' as const } };
    app.get<{ Params: { env: string } }>(
      '/:env/webhooks/inbound',
      anyMember,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        return sendPage(reply, await inboundPage(member, env, reply.generateCsrf()));
      },
    );

    /** The event read for `id` if it is one of the member's partner in this environment, or 404. */
    function ownEvent(
      e: StoredEvent | undefined,
      member: Member,
      env: Environment,
      id: string,
    ): StoredEvent {
      if (!e || e.partnerId !== member.partnerId || e.environment !== env) {
        throw new PortalError(
          404,
          'Event not found',
          `There is no ${env} event ${id} in your team.`,
        );
      }
      return e;
    }

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/events/:id',
      anyMember,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const id = request.params.id;
        const read = await ctx.webhookPages.get(`event:${id}`, async () => {
          const found = await events.findById(id);
          if (!found) return undefined;
          const [announced, sent] = await Promise.all([
            inboundEvents.linkedTo(id),
            deliveries.list({ eventId: id, limit: 100 }),
          ]);
          return { found, announced, sent };
        });
        const e = ownEvent(read?.found, member, env, id);
        const { announced, sent } = read!;
        // From the cached list of the environment's products (no query on a warm cache).
        const product = await ctx.products
          .listForPartner(member.partnerId, env)
          .then((list) => list.find((p) => p.id === e.productId));
        let payload = e.payload;
        try {
          payload = JSON.stringify(JSON.parse(e.payload), null, 2);
        } catch {
          // Stored as received; shown as is.
        }
        return sendPage(
          reply,
          page({
            title: 'Lifecycle event',
            base: base(),
            csrf: reply.generateCsrf(),
            member,
            env,
            section: 'webhooks',
            body: html`<p class="lead"><a href="${base()}/${env}/webhooks/inbound">Inbound webhooks</a> · <a href="${base()}/${env}/webhooks">Outbound destinations</a></p>
<section class="panel" aria-labelledby="event-heading">
<h2 id="event-heading">The event</h2>
<dl class="pairs">
  <dt>Event</dt><dd><code>${e.id}</code></dd>
  <dt>Type</dt><dd><code>${e.eventType}</code></dd>
  <dt>Occurred</dt><dd>${time(e.occurredAt)}</dd>
  <dt>Product</dt><dd>${product ? html`<a href="${base()}/${env}/products/${product.slug}" hx-boost="false">${product.displayName}</a>` : '—'}</dd>
  ${e.txHash ? html`<dt>Transaction</dt><dd><code class="excerpt">${e.txHash}</code><br><span class="hint">chain ${e.chainId}, block ${e.blockNumber}, log ${e.logIndex}</span></dd>` : ''}
</dl>
</section>
<h2>Inbound events that announced it</h2>
${
  announced.length === 0
    ? html`<p>None: no inbound event of yours named this transaction.</p>`
    : html`<ul>${announced.map((i) => html`<li><code>${i.eventType}</code> with idempotency key <code>${i.idempotencyKey}</code>, received ${time(i.receivedAt)}, linked ${time(i.linkedAt)}</li>`)}</ul>`
}
<h2>Deliveries to your destinations</h2>
${
  sent.length === 0
    ? html`<p>None: no destination of yours takes this event type, or there was none when it happened.</p>`
    : html`<table class="stack"><caption class="visually-hidden">Deliveries of this event</caption>
  <thead><tr><th scope="col">Destination</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Details</th></tr></thead>
  <tbody>${sent.map(
    (d) =>
      html`<tr><td data-label="Destination"><a href="${base()}/${env}/webhooks/${d.destinationId}"><code>${d.destinationId}</code></a></td><td data-label="Status">${d.status}</td><td data-label="Created">${time(d.createdAt)}</td><td data-label="Details"><a href="${base()}/${env}/webhooks/${d.destinationId}/deliveries/${d.id}" aria-label="Details of delivery ${d.id}">Details</a></td></tr>`,
  )}</tbody></table>`
}
<h2>Payload</h2>
<pre class="payload">${payload}</pre>`,
          }),
        );
      },
    );
  };
}
