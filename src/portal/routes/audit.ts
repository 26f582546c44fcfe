/** The audit log, newest first: owners and admins see every change made in their team's portal. */
import type { FastifyPluginAsync } from 'fastify';
import { type PortalContext, sendPage, signedIn } from '../context.ts';
import { html } from '../html.ts';
import { page, time } from '../layout.ts';

const ACTION_LABEL: Record<string, string> = {
  'member.signed_in': 'Signed in',
  'member.signed_out_everywhere': 'Signed out everywhere',
  'member.invited': 'Invited a member',
  'member.removed': 'Removed a member',
  'key.created': 'Created a key',
  'key.rolled': 'Rolled a key',
  'key.revoked': 'Revoked a key',
  'passkey.registered': 'Added a passkey',
  'passkey.removed': 'Removed a passkey',
  'webhook.added': 'Added a webhook destination',
  'webhook.rotated': 'Rotated a webhook secret',
  'webhook.removed': 'Removed a webhook destination',
  'webhook.updated': 'Edited a webhook destination',
  'webhook.disabled': 'Disabled a webhook destination',
  'webhook.enabled': 'Re-enabled a webhook destination',
  'webhook.pinged': 'Sent a test event',
  'webhook.replayed': 'Replayed deliveries',
  'inbound.secret_set': 'Set the inbound secret',
  'embed.origin_added': 'Allowed an embed origin',
  'embed.origin_removed': 'Removed an embed origin',
};

export function auditRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string } }>(
      '/:env/audit',
      { config: { requires: 'audit.view' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const entries = await ctx.teamPages.get(`audit:${member.partnerId}`, () =>
          ctx.audit.list(member.partnerId),
        );
        return sendPage(
          reply,
          page({
            title: 'Audit log',
            base: ctx.base(),
            csrf: reply.generateCsrf(),
            member,
            env,
            section: 'audit',
            body: html`<p class="lead">Every change made in your team's portal, newest first (the latest 200). Both environments.</p>
${
  entries.length === 0
    ? html`<div class="empty"><strong>Nothing yet</strong>Sign-ins and changes to keys and the team appear here.</div>`
    : html`<table>
  <caption class="visually-hidden">Audit log</caption>
  <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Env</th><th scope="col">Details</th><th scope="col">From</th></tr></thead>
  <tbody>${entries.map(
    (e) =>
      html`<tr><td>${time(e.createdAt)}</td><td>${e.actor}</td><td class="nowrap">${ACTION_LABEL[e.action] ?? e.action}</td><td>${e.environment ?? '—'}</td><td><code>${e.target ?? ''}</code></td><td>${e.ip ?? '—'}</td></tr>`,
  )}</tbody>
</table>`
}`,
          }),
        );
      },
    );
  };
}
