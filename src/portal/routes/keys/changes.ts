/** Rolling a key (with an overlap) and revoking one, each behind the shared confirmation view. */
import type { FastifyPluginAsync } from 'fastify';
import { isRollOverlap, keyStatus, ROLL_OVERLAPS } from '../../../db/api-keys.ts';
import { revokeKey, rollKey } from '../../../operations/keys.ts';
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
import { page } from '../../layout.ts';
import { keyLabel, keysPage, ownKey, secretPanel } from './shared.ts';

const OVERLAP_LABELS: Record<keyof typeof ROLL_OVERLAPS, string> = {
  now: 'Now: the old key stops working at once',
  '1h': 'In 1 hour',
  '24h': 'In 24 hours',
  '7d': 'In 7 days',
};

export function keyChangeRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const manage = { config: { requires: 'keys.manage' as const } };

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/keys/:id/roll',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const key = await ownKey(ctx, member, env, request.params.id);
        const csrf = reply.generateCsrf();
        const status = keyStatus(key);
        if (status !== 'active') {
          return sendPage(
            reply,
            page({
              title: 'Roll a key',
              base: base(),
              csrf,
              member,
              env,
              section: 'keys',
              body: html`<div class="panel"><p>${keyLabel(key)} is ${status === 'revoked' ? 'revoked' : 'expiring: it was rolled already'}, so it cannot be rolled. Only an active key can be.</p><p><a href="${base()}/${env}/keys">Back to API keys</a></p></div>`,
            }),
          );
        }
        const body = confirmView({
          action: `${base()}/${env}/keys/${key.id}/roll`,
          csrf,
          question: html`<p>Rolling ${keyLabel(key)} makes a new key with the same name. The old key keeps working until the time you choose, so you can deploy the new one first. After that it answers <code>401 revoked_api_key</code>.</p>`,
          fields: html`<fieldset>
    <legend>When should the old key stop working?</legend>
    ${(Object.keys(ROLL_OVERLAPS) as Array<keyof typeof ROLL_OVERLAPS>).map(
      (o) =>
        html`<div class="radio"><input type="radio" id="overlap-${o}" name="expires" value="${o}" ${o === '24h' ? 'checked' : ''}><label for="overlap-${o}">${OVERLAP_LABELS[o]}</label></div>`,
    )}
  </fieldset>`,
          button: 'Roll key',
          cancel: `${base()}/${env}/keys`,
        });
        return sendPage(
          reply,
          page({ title: 'Roll a key', base: base(), csrf, member, env, section: 'keys', body }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { expires?: unknown } }>(
      '/:env/keys/:id/roll',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const key = await ownKey(ctx, member, env, request.params.id);
        const expires = request.body?.expires;
        if (!isRollOverlap(expires)) {
          throw new PortalError(
            400,
            'Choose when the old key stops',
            'Pick one of now, 1 hour, 24 hours or 7 days, then roll again.',
          );
        }
        const rolled = await rollKey(ctx.db, actorOf(request), key.id, expires);
        if (!rolled) {
          throw new PortalError(
            409,
            'This key cannot be rolled',
            'Only an active key can be rolled; this one is already revoked or expiring.',
          );
        }
        showAt(reply, `${base()}/${env}/keys`);
        return sendPage(
          reply,
          await keysPage(ctx, member, env, reply.generateCsrf(), {
            created: secretPanel(
              rolled.key,
              `The new key replacing “${key.name ?? 'Unnamed key'}”`,
            ),
          }),
        );
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/keys/:id/revoke',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const key = await ownKey(ctx, member, env, request.params.id);
        const csrf = reply.generateCsrf();
        if (keyStatus(key) === 'revoked') {
          return sendPage(
            reply,
            page({
              title: 'Revoke a key',
              base: base(),
              csrf,
              member,
              env,
              section: 'keys',
              body: html`<div class="panel"><p>${keyLabel(key)} is already revoked: nothing to do.</p><p><a href="${base()}/${env}/keys">Back to API keys</a></p></div>`,
            }),
          );
        }
        const body = confirmView({
          action: `${base()}/${env}/keys/${key.id}/revoke`,
          csrf,
          question: html`<p>Revoke ${keyLabel(key)}? Within a second every call with it fails with <code>401 revoked_api_key</code>. This cannot be undone.</p>`,
          button: 'Revoke key',
          danger: true,
          cancel: `${base()}/${env}/keys`,
        });
        return sendPage(
          reply,
          page({ title: 'Revoke a key', base: base(), csrf, member, env, section: 'keys', body }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/keys/:id/revoke',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const key = await ownKey(ctx, member, env, request.params.id);
        if (!(await revokeKey(ctx.db, actorOf(request), key.id))) {
          throw new PortalError(409, 'Already revoked', 'This key was already revoked.');
        }
        return seeOther(reply, `${base()}/${env}/keys?revoked=${key.id}`);
      },
    );
  };
}
