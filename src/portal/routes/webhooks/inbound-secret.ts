/**
 * The inbound secret: created with one click when there is none; rotated after a confirmation that
 * asks how long the old secret keeps verifying (none, 1 hour, 24 hours, 7 days), as an outbound
 * destination's secret rotates, so a live integration is not broken at once.
 */
import type { FastifyPluginAsync } from 'fastify';
import { createInboundSecretsRepo } from '../../../db/inbound-secrets.ts';
import { setInboundSecret } from '../../../operations/inbound-secrets.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { confirmView } from '../../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  sendPage,
  showAt,
  signedIn,
} from '../../context.ts';
import { html } from '../../html.ts';
import { page, when } from '../../layout.ts';
import { GRACE, secretPanel } from './shared.ts';

export function inboundSecretRoutes(ctx: PortalContext, box: SecretBox): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const manage = { config: { requires: 'webhooks.manage' as const } };
    const secrets = createInboundSecretsRepo(ctx.db, box);
    const inboundPage = (env: string) => `${base()}/${env}/webhooks/inbound`;

    app.get<{ Params: { env: string } }>(
      '/:env/webhooks/inbound/secret/rotate',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const csrf = reply.generateCsrf();
        const body = confirmView({
          action: `${inboundPage(env)}/secret`,
          csrf,
          question: html`<p>Rotating the ${env} inbound secret makes a new one, shown once. During the grace period a request signed with either secret is accepted, so your senders keep working while you deploy the new secret; after it, only the new one.</p>`,
          fields: html`<fieldset><legend>How long should the old secret keep verifying?</legend>
  ${Object.entries(GRACE).map(([k, g]) => html`<div class="radio"><input type="radio" id="grace-${k}" name="grace" value="${k}" ${k === '24h' ? 'checked' : ''}><label for="grace-${k}">${k === '0' ? 'None: requests signed with the old secret are refused at once' : g.label}</label></div>`)}
  </fieldset>`,
          button: 'Rotate the inbound secret',
          cancel: inboundPage(env),
        });
        return sendPage(
          reply,
          page({
            title: 'Rotate the inbound secret',
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

    app.post<{ Params: { env: string }; Body: { grace?: unknown } }>(
      '/:env/webhooks/inbound/secret',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const raw = request.body?.grace;
        const grace = raw === undefined ? undefined : GRACE[String(raw)];
        if (raw !== undefined && !grace) {
          throw new PortalError(
            400,
            'Choose a grace period',
            'Pick none, 1 hour, 24 hours or 7 days, then rotate again.',
          );
        }
        // Creating the first secret is one click; replacing one needs the confirmation's choice.
        const exists = (await secrets.list(member.partnerId)).some((s) => s.environment === env);
        if (exists && !grace) {
          throw new PortalError(
            400,
            'Choose a grace period',
            'Rotating the secret asks how long the old one keeps verifying. Use “Rotate the inbound secret” on the inbound page.',
          );
        }
        const set = await setInboundSecret(ctx.db, box, actorOf(request), {
          partnerId: member.partnerId,
          environment: env,
          graceMs: grace?.ms ?? 0,
        });
        const csrf = reply.generateCsrf();
        showAt(reply, inboundPage(env));
        return sendPage(
          reply,
          page({
            title: 'Inbound webhooks',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: html`${secretPanel(
              set.secret,
              `Your ${env} inbound secret`,
              set.previousExpiresAt
                ? html`Sign each inbound request with it (HMAC-SHA256 of the body). The old secret still verifies until ${when(set.previousExpiresAt)}.`
                : set.rotated
                  ? 'Sign each inbound request with it (HMAC-SHA256 of the body). The old secret no longer verifies.'
                  : 'Sign each inbound request with it (HMAC-SHA256 of the body).',
              'where your sender signs inbound requests',
            )}<p><a href="${inboundPage(env)}">Back to inbound webhooks</a></p>`,
          }),
        );
      },
    );
  };
}
