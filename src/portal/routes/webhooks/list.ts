/**
 * The webhooks page of one environment: outbound destinations with their health, and adding one
 * (HTTPS only, event types from the catalogue; its signing secret shown once).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { createWebhookDestinationsRepo } from '../../../db/webhook-destinations.ts';
import { createWebhookHealthRepo } from '../../../db/webhook-health.ts';
import { addDestination } from '../../../operations/webhook-destinations.ts';
import type { AddressPolicy } from '../../../webhooks/address-policy.ts';
import { DestinationUrlError } from '../../../webhooks/destination-url.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../../webhooks/event-catalogue.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { permits } from '../../access.ts';
import { actorOf, type PortalContext, sendPage, signedIn } from '../../context.ts';
import { type Html, html } from '../../html.ts';
import { page, time } from '../../layout.ts';
import { eventTypePicker, fieldList, healthAsOf, healthSummary, secretPanel } from './shared.ts';

async function listPage(
  ctx: PortalContext,
  box: SecretBox,
  member: Member,
  env: Environment,
  csrf: string,
  extra: {
    created?: Html;
    errors?: string[];
    url?: string;
    types?: string[];
    notice?: Html | string;
  } = {},
) {
  const base = ctx.base;
  const destinations = createWebhookDestinationsRepo(ctx.db, box);
  const health = createWebhookHealthRepo(ctx.db);
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
  const manage = permits(member.role, 'webhooks.manage', env);
  const body = html`<p class="lead">We send a signed HTTPS POST to each destination when something happens to your ${env} products. <a href="${base()}/${env}/webhooks/inbound">Inbound webhooks</a> are the events you send us.</p>
${extra.created ?? ''}
<h2>Destinations</h2>
${
  list.length === 0
    ? html`<div class="empty"><strong>No ${env} destinations yet</strong>${manage ? 'Add one below to receive events.' : 'Ask an owner or admin to add one.'}</div>`
    : html`<table class="stack">
  <caption class="visually-hidden">${env} webhook destinations</caption>
  <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Secret</th><th scope="col">Health</th><th scope="col">Last success</th></tr></thead>
  <tbody>${list.map((d) => {
    const h = stats.get(d.id);
    return html`<tr>
<th scope="row" data-label="URL"><a href="${base()}/${env}/webhooks/${d.id}">${d.url}</a></th>
<td data-label="Events">${d.eventTypes ? d.eventTypes.join(', ') : 'All types'}</td>
<td data-label="Secret"><code>${d.secretFingerprint}</code></td>
<td data-label="Health">${healthSummary(h, d)}</td>
<td data-label="Last success">${time(h?.lastSuccessAt, 'Never')}</td>
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

export function webhooksListRoutes(
  ctx: PortalContext,
  box: SecretBox,
  addresses: AddressPolicy,
): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string }; Querystring: { removed?: string } }>(
      '/:env/webhooks',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const removed = request.query.removed;
        // Named by its URL, as the list showed it, not by its internal id.
        const gone =
          typeof removed === 'string' && /^whk_\w+$/.test(removed)
            ? await createWebhookDestinationsRepo(ctx.db, box).find(removed)
            : undefined;
        const own = gone && gone.partnerId === member.partnerId && gone.environment === env;
        return sendPage(
          reply,
          await listPage(ctx, box, member, env, reply.generateCsrf(), {
            notice: own
              ? html`<code>${gone.url}</code> is removed. <a href="${ctx.base()}/${env}/webhooks/${gone.id}">Its delivery log</a> is kept.`
              : undefined,
          }),
        );
      },
    );

    app.post<{ Params: { env: string }; Body: { url?: unknown; event_types?: unknown } }>(
      '/:env/webhooks',
      { config: { requires: 'webhooks.manage' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const url = typeof request.body?.url === 'string' ? request.body.url.trim() : '';
        const types = fieldList(request.body?.event_types);
        const unknown = types.filter(
          (t) => !(SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t),
        );
        const again = (errors: string[]) =>
          listPage(ctx, box, member, env, reply.generateCsrf(), { errors, url, types }).then((p) =>
            sendPage(reply, p, 400),
          );
        if (unknown.length)
          return again([`There is no event type ${unknown.join(', ')}: pick from the list.`]);
        try {
          const { destination, secret } = await addDestination(
            ctx.db,
            box,
            addresses,
            actorOf(request),
            {
              partnerId: member.partnerId,
              environment: env,
              url,
              eventTypes: types,
            },
          );
          return sendPage(
            reply,
            await listPage(ctx, box, member, env, reply.generateCsrf(), {
              created: secretPanel(
                secret,
                `Signing secret of ${destination.url}`,
                html`Fingerprint <code>${destination.secretFingerprint}</code>.`,
              ),
            }),
          );
        } catch (err) {
          if (!(err instanceof DestinationUrlError)) throw err;
          return again([`That URL does not work: ${err.message}.`]);
        }
      },
    );
  };
}
