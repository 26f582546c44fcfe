/**
 * Changes to one destination from its page: a test event, re-enabling, rotating the signing secret
 * with a grace period, removing. Each is an operation of operations/webhook-destinations.ts, the
 * same the `webhook` command calls; the confirmations are the shared view.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { createWebhookDestinationsRepo } from '../../../db/webhook-destinations.ts';
import { WebhookHealthError } from '../../../db/webhook-health.ts';
import {
  enableDestination,
  pingDestination,
  removeDestination,
  rotateDestinationSecret,
} from '../../../operations/webhook-destinations.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { confirmView } from '../../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  showAt,
  signedIn,
} from '../../context.ts';
import { html } from '../../html.ts';
import { page, when } from '../../layout.ts';
import { GRACE, ownDestination, replayOr409, secretPanel } from './shared.ts';

export function destinationChangeRoutes(ctx: PortalContext, box: SecretBox): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const destinations = createWebhookDestinationsRepo(ctx.db, box);
    const own = (member: Member, env: Environment, id: string) =>
      ownDestination(destinations, member, env, id);
    const manage = { config: { requires: 'webhooks.manage' as const } };
    const pageOf = (env: Environment, id: string) => `${base()}/${env}/webhooks/${id}`;

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/ping',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        await replayOr409(() => pingDestination(ctx.db, box, actorOf(request), d.id));
        return seeOther(reply, `${pageOf(env, d.id)}?notice=pinged`);
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/enable',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        if (!d.disabledAt)
          throw new PortalError(409, 'Not disabled', 'This destination is already enabled.');
        try {
          await enableDestination(ctx.db, box, actorOf(request), d.id);
        } catch (err) {
          if (err instanceof WebhookHealthError && err.code === 'not_disabled') {
            throw new PortalError(409, 'Not disabled', 'This destination is already enabled.');
          }
          throw err;
        }
        return seeOther(reply, `${pageOf(env, d.id)}?notice=enabled`);
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/rotate',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        const body = confirmView({
          action: `${pageOf(env, d.id)}/rotate`,
          csrf,
          question: html`<p>Rotating the secret of <code>${d.url}</code> makes a new one, shown once. During the grace period every delivery carries a signature with each secret (<code>webhook-signature</code> lists both), so your receiver keeps verifying while you deploy the new secret.</p>`,
          fields: html`<fieldset><legend>How long should the old secret keep signing?</legend>
  ${Object.entries(GRACE).map(([k, g]) => html`<div class="radio"><input type="radio" id="grace-${k}" name="grace" value="${k}" ${k === '24h' ? 'checked' : ''}><label for="grace-${k}">${g.label}</label></div>`)}
  </fieldset>`,
          button: 'Rotate secret',
          cancel: pageOf(env, d.id),
        });
        return sendPage(
          reply,
          page({
            title: 'Rotate a signing secret',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { grace?: unknown } }>(
      '/:env/webhooks/:id/rotate',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        const grace = GRACE[String(request.body?.grace)];
        if (!grace)
          throw new PortalError(
            400,
            'Choose a grace period',
            'Pick none, 1 hour, 24 hours or 7 days, then rotate again.',
          );
        const rotated = await rotateDestinationSecret(
          ctx.db,
          box,
          actorOf(request),
          d.id,
          grace.ms,
        );
        if (!rotated)
          throw new PortalError(404, 'Destination not found', 'It was removed meanwhile.');
        const csrf = reply.generateCsrf();
        const previous = rotated.destination.previousSecret;
        showAt(reply, pageOf(env, d.id));
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
              previous
                ? html`The old secret (<code>${previous.fingerprint}</code>) keeps signing until ${when(previous.expiresAt)}.`
                : 'The old secret no longer signs.',
            )}<p><a href="${pageOf(env, d.id)}">Back to the destination</a></p>`,
          }),
        );
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/remove',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        const body = confirmView({
          action: `${pageOf(env, d.id)}/remove`,
          csrf,
          question: html`<p>Remove <code>${d.url}</code>? No more events are sent to it and pending deliveries are dropped. Its delivery log is kept. This cannot be undone.</p>`,
          button: 'Remove destination',
          danger: true,
          cancel: pageOf(env, d.id),
        });
        return sendPage(
          reply,
          page({
            title: 'Remove a destination',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/remove',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await own(member, env, request.params.id);
        await removeDestination(ctx.db, box, actorOf(request), d.id);
        return seeOther(reply, `${base()}/${env}/webhooks?removed=${d.id}`);
      },
    );
  };
}
