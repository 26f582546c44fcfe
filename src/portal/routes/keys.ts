/**
 * API keys of one environment: list, create (the full key shown once), roll with an overlap, revoke.
 * Every change goes through the same functions as the operator's `key` command (db/api-keys.ts),
 * is checked against the member's role, and is audited.
 */
import type { FastifyPluginAsync } from 'fastify';
import { maskKey } from '../../db/api-key-material.ts';
import {
  type ApiKeyListing,
  type ApiKeyRecord,
  isRollOverlap,
  keyStatus,
  ROLL_OVERLAPS,
  rollApiKey,
} from '../../db/api-keys.ts';
import type { Member } from '../../db/portal-members.ts';
import type { Environment } from '../../db/products.ts';
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
import { canManageKeys } from '../roles.ts';

const NAME_MAX = 64;
const OVERLAP_LABELS: Record<keyof typeof ROLL_OVERLAPS, string> = {
  now: 'Now: the old key stops working at once',
  '1h': 'In 1 hour',
  '24h': 'In 24 hours',
  '7d': 'In 7 days',
};
const STATUS_LABEL = { active: 'Active', expiring: 'Expiring', revoked: 'Revoked' } as const;

function refuse(member: Member, env: Environment): PortalError {
  return new PortalError(
    403,
    'Not allowed',
    `As ${member.role} you can see ${env} keys but not create, roll or revoke them. Ask an owner or admin of your team.`,
  );
}

function secretPanel(key: string, heading: string): Html {
  return html`<section class="secret" aria-labelledby="secret-heading">
  <h2 id="secret-heading">${heading}</h2>
  <p>Copy it now and store it somewhere safe. It is shown <strong>only once</strong>: we keep a hash, not the key.</p>
  <div class="secret-value">
    <code id="new-key" aria-label="New API key">${key}</code>
    <button type="button" class="secondary" data-copy="new-key">Copy</button>
  </div>
</section>`;
}

function keyRow(base: string, env: Environment, k: ApiKeyListing, manage: boolean): Html {
  const status = keyStatus(k);
  const name = k.name ?? 'Unnamed key';
  return html`<tr>
  <td>${name}</td>
  <td class="nowrap"><code>${maskKey(k.prefix, k.last4)}</code></td>
  <td>${time(k.createdAt)}<br><span class="hint">by ${k.createdByEmail ?? 'the operator'}</span></td>
  <td>${time(k.lastUsedAt, 'Never')}</td>
  <td><span class="status status-${status}">${STATUS_LABEL[status]}</span>${
    status === 'expiring' ? html`<br><span class="hint">until ${time(k.revokedAt)}</span>` : ''
  }${status === 'revoked' ? html`<br><span class="hint">${time(k.revokedAt)}</span>` : ''}</td>
  <td class="actions">${
    manage && status !== 'revoked'
      ? html`${status === 'active' ? html`<a href="${base}/${env}/keys/${k.id}/roll" aria-label="Roll ${name}">Roll</a>` : ''}<a href="${base}/${env}/keys/${k.id}/revoke" aria-label="Revoke ${name}">Revoke</a>`
      : ''
  }</td>
</tr>`;
}

export function keysRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    async function keysPage(
      member: Member,
      env: Environment,
      csrf: string,
      extra: { created?: Html; errors?: string[]; name?: string; notice?: string } = {},
    ) {
      const keys = await ctx.teamPages.get(`keys:${member.partnerId}:${env}`, () =>
        ctx.keys.list(member.partnerId, env),
      );
      const manage = canManageKeys(member.role, env);
      const invalid = extra.errors?.length ? html` aria-invalid="true"` : '';
      const body = html`<p class="lead">Send a key as the <code>X-Api-Key</code> header of every partner API call. ${
        env === 'live'
          ? html`Live keys start with <code>svc_live_</code> and see your live products.`
          : html`Test keys start with <code>svc_test_</code> and see only your sandbox products.`
      }</p>
${extra.created ?? ''}
${
  manage
    ? html`<section class="panel" aria-labelledby="create-heading">
  <h2 id="create-heading">Create a ${env} key</h2>
  <form method="post" action="${base()}/${env}/keys" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="field">
      <label for="key-name">Key name</label>
      <input type="text" id="key-name" name="name" maxlength="${NAME_MAX}" required placeholder="e.g. Production backend" value="${extra.name ?? ''}"${invalid}>
    </div>
    <div class="field"><button type="submit">Create key</button></div>
  </form>
</section>`
    : html`<p class="hint">Your role (${member.role}) can see ${env} keys; owners and admins${env === 'test' ? ' and developers' : ''} create and revoke them.</p>`
}
<h2>${env === 'live' ? 'Live' : 'Test'} keys</h2>
${
  keys.length === 0
    ? html`<div class="empty"><strong>No ${env} keys yet</strong>${manage ? 'Create one above to call the partner API.' : 'Ask an owner or admin to create one.'}</div>`
    : html`<table>
  <caption class="visually-hidden">${env} API keys</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${keys.map((k) => keyRow(base(), env, k, manage))}</tbody>
</table>`
}`;
      return page({
        title: 'API keys',
        base: base(),
        csrf,
        member,
        env,
        section: 'keys',
        errors: extra.errors,
        notice: extra.notice,
        body,
      });
    }

    /** A key of the member's partner in this environment, or 404. */
    async function ownKey(member: Member, env: Environment, id: string): Promise<ApiKeyRecord> {
      const key = await ctx.keys.get(id);
      if (!key || key.partnerId !== member.partnerId || key.environment !== env) {
        throw new PortalError(404, 'Key not found', `There is no ${env} key ${id} in your team.`);
      }
      return key;
    }

    app.get<{ Params: { env: string }; Querystring: { revoked?: string } }>(
      '/:env/keys',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        const revoked = typeof request.query.revoked === 'string' ? request.query.revoked : '';
        return sendPage(
          reply,
          await keysPage(member, env, reply.generateCsrf(), {
            notice: /^key_\w+$/.test(revoked) ? `Key ${revoked} is revoked.` : undefined,
          }),
        );
      },
    );

    app.post<{ Params: { env: string }; Body: { name?: unknown } }>(
      '/:env/keys',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        if (!canManageKeys(member.role, env)) throw refuse(member, env);
        const name = typeof request.body?.name === 'string' ? request.body.name.trim() : '';
        if (!name || name.length > NAME_MAX) {
          return sendPage(
            reply,
            await keysPage(member, env, reply.generateCsrf(), {
              name: name.slice(0, NAME_MAX),
              errors: [
                `Give the key a name of 1 to ${NAME_MAX} characters, so your team knows what uses it.`,
              ],
            }),
            400,
          );
        }
        const created = await ctx.keys.create(member.partnerId, env, name, member.id);
        await ctx.record(request, member, {
          action: 'key.created',
          environment: env,
          target: `${created.record.id} ${maskKey(created.record.prefix, created.record.last4)}`,
        });
        return sendPage(
          reply,
          await keysPage(member, env, reply.generateCsrf(), {
            created: secretPanel(created.key, `Your new ${env} key “${name}”`),
          }),
        );
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/keys/:id/roll',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        if (!canManageKeys(member.role, env)) throw refuse(member, env);
        const key = await ownKey(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Roll a key',
            base: base(),
            csrf,
            member,
            env,
            section: 'keys',
            body: html`<p>Rolling <strong>${key.name ?? 'Unnamed key'}</strong> (<code>${maskKey(key.prefix, key.last4)}</code>) makes a new key with the same name. The old key keeps working until the time you choose, so you can deploy the new one first. After that it answers <code>401 revoked_api_key</code>.</p>
<form method="post" action="${base()}/${env}/keys/${key.id}/roll" class="panel">
  <input type="hidden" name="_csrf" value="${csrf}">
  <fieldset>
    <legend>When should the old key stop working?</legend>
    ${(Object.keys(ROLL_OVERLAPS) as Array<keyof typeof ROLL_OVERLAPS>).map(
      (o) =>
        html`<div class="radio"><input type="radio" id="overlap-${o}" name="expires" value="${o}" ${o === '24h' ? 'checked' : ''}><label for="overlap-${o}">${OVERLAP_LABELS[o]}</label></div>`,
    )}
  </fieldset>
  <div class="buttons"><button type="submit">Roll key</button><a href="${base()}/${env}/keys">Cancel</a></div>
</form>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { expires?: unknown } }>(
      '/:env/keys/:id/roll',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        if (!canManageKeys(member.role, env)) throw refuse(member, env);
        const key = await ownKey(member, env, request.params.id);
        const expires = request.body?.expires;
        if (!isRollOverlap(expires)) {
          throw new PortalError(
            400,
            'Choose when the old key stops',
            'Pick one of now, 1 hour, 24 hours or 7 days, then roll again.',
          );
        }
        const rolled = await rollApiKey(ctx.db, key.id, expires, member.id);
        if (!rolled) {
          throw new PortalError(
            409,
            'This key cannot be rolled',
            'Only an active key can be rolled; this one is already revoked or expiring.',
          );
        }
        await ctx.record(request, member, {
          action: 'key.rolled',
          environment: env,
          target: `${key.id} → ${rolled.record.id}, old key ends ${when(rolled.old.revokedAt)}`,
        });
        return sendPage(
          reply,
          await keysPage(member, env, reply.generateCsrf(), {
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
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        if (!canManageKeys(member.role, env)) throw refuse(member, env);
        const key = await ownKey(member, env, request.params.id);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Revoke a key',
            base: base(),
            csrf,
            member,
            env,
            section: 'keys',
            body: html`<div class="panel">
<p>Revoke <strong>${key.name ?? 'Unnamed key'}</strong> (<code>${maskKey(key.prefix, key.last4)}</code>)? Within a second every call with it fails with <code>401 revoked_api_key</code>. This cannot be undone.</p>
<form method="post" action="${base()}/${env}/keys/${key.id}/revoke" class="buttons">
  <input type="hidden" name="_csrf" value="${csrf}">
  <button type="submit" class="danger">Revoke key</button>
  <a href="${base()}/${env}/keys">Cancel</a>
</form></div>`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/keys/:id/revoke',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        if (!canManageKeys(member.role, env)) throw refuse(member, env);
        const key = await ownKey(member, env, request.params.id);
        if (!(await ctx.keys.revoke(key.id))) {
          throw new PortalError(409, 'Already revoked', 'This key was already revoked.');
        }
        await ctx.record(request, member, {
          action: 'key.revoked',
          environment: env,
          target: `${key.id} ${maskKey(key.prefix, key.last4)}`,
        });
        return seeOther(reply, `${base()}/${env}/keys?revoked=${key.id}`);
      },
    );
  };
}
