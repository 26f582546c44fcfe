/** The API keys page of one environment: the list, and creating a key (shown once). */
import type { FastifyPluginAsync } from 'fastify';
import { createKey } from '../../../operations/keys.ts';
import { actorOf, type PortalContext, sendPage, signedIn } from '../../context.ts';
import { html } from '../../html.ts';
import { keyLabel, keysPage, NAME_MAX, secretPanel } from './shared.ts';

export function keysListRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string }; Querystring: { revoked?: string } }>(
      '/:env/keys',
      { config: { requires: 'keys.view' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const revoked = typeof request.query.revoked === 'string' ? request.query.revoked : '';
        // Named as the list shows it (name and prefix…last4), not by its internal id.
        const key = /^key_\w+$/.test(revoked) ? await ctx.keys.get(revoked) : undefined;
        const own = key && key.partnerId === member.partnerId && key.environment === env;
        return sendPage(
          reply,
          await keysPage(ctx, member, env, reply.generateCsrf(), {
            notice: own ? html`${keyLabel(key)} is revoked.` : undefined,
          }),
        );
      },
    );

    app.post<{ Params: { env: string }; Body: { name?: unknown } }>(
      '/:env/keys',
      { config: { requires: 'keys.manage' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const name = typeof request.body?.name === 'string' ? request.body.name.trim() : '';
        if (!name || name.length > NAME_MAX) {
          return sendPage(
            reply,
            await keysPage(ctx, member, env, reply.generateCsrf(), {
              name: name.slice(0, NAME_MAX),
              errors: [
                `Give the key a name of 1 to ${NAME_MAX} characters, so your team knows what uses it.`,
              ],
            }),
            400,
          );
        }
        const created = await createKey(ctx.db, actorOf(request), {
          partnerId: member.partnerId,
          environment: env,
          name,
        });
        return sendPage(
          reply,
          await keysPage(ctx, member, env, reply.generateCsrf(), {
            created: secretPanel(created.key, `Your new ${env} key “${name}”`),
          }),
        );
      },
    );
  };
}
