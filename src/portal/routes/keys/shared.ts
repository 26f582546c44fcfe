/** What the keys pages share: the list page (with a new key's panel) and a key's look-up. */
import { maskKey } from '../../../db/api-key-material.ts';
import { type ApiKeyListing, type ApiKeyRecord, keyStatus } from '../../../db/api-keys.ts';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { permits } from '../../access.ts';
import { type PortalContext, PortalError } from '../../context.ts';
import { type Html, html } from '../../html.ts';
import { page, time } from '../../layout.ts';

export const NAME_MAX = 64;
const STATUS_LABEL = { active: 'Active', expiring: 'Expiring', revoked: 'Revoked' } as const;

export function secretPanel(key: string, heading: string): Html {
  return html`<section class="secret" aria-labelledby="secret-heading" hx-history="false">
  <h2 id="secret-heading">${heading}</h2>
  <p>Copy it now and store it somewhere safe. It is shown <strong>only once</strong>: we keep a hash, not the key.</p>
  <div class="secret-value">
    <code id="new-key" aria-label="New API key">${key}</code>
    <button type="button" class="secondary" data-copy="new-key">Copy</button>
  </div>
</section>`;
}

export const keyLabel = (k: ApiKeyRecord) =>
  html`<strong>${k.name ?? 'Unnamed key'}</strong> (<code>${maskKey(k.prefix, k.last4)}</code>)`;

function keyRow(base: string, env: Environment, k: ApiKeyListing, manage: boolean): Html {
  const status = keyStatus(k);
  const name = k.name ?? 'Unnamed key';
  return html`<tr>
  <td data-label="Name">${name}</td>
  <td data-label="Key" class="nowrap"><code>${maskKey(k.prefix, k.last4)}</code></td>
  <td data-label="Created">${time(k.createdAt)}<br><span class="hint">by ${k.createdByEmail ?? 'the operator'}</span></td>
  <td data-label="Last used">${time(k.lastUsedAt, 'Never')}</td>
  <td data-label="Status"><span class="status status-${status}">${STATUS_LABEL[status]}</span>${
    status === 'expiring' ? html`<br><span class="hint">until ${time(k.revokedAt)}</span>` : ''
  }${status === 'revoked' ? html`<br><span class="hint">${time(k.revokedAt)}</span>` : ''}</td>
  <td class="actions">${
    manage && status !== 'revoked'
      ? html`${status === 'active' ? html`<a href="${base}/${env}/keys/${k.id}/roll" aria-label="Roll ${name}">Roll</a>` : ''}<a href="${base}/${env}/keys/${k.id}/revoke" aria-label="Revoke ${name}">Revoke</a>`
      : ''
  }</td>
</tr>`;
}

export async function keysPage(
  ctx: PortalContext,
  member: Member,
  env: Environment,
  csrf: string,
  extra: { created?: Html; errors?: string[]; name?: string; notice?: Html | string } = {},
) {
  const base = ctx.base();
  const keys = await ctx.teamPages.get(`keys:${member.partnerId}:${env}`, () =>
    ctx.keys.list(member.partnerId, env),
  );
  const manage = permits(member.role, 'keys.manage', env);
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
  <form method="post" action="${base}/${env}/keys" class="inline">
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
    : html`<table class="stack">
  <caption class="visually-hidden">${env} API keys</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${keys.map((k) => keyRow(base, env, k, manage))}</tbody>
</table>`
}`;
  return page({
    title: 'API keys',
    base,
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
export async function ownKey(
  ctx: PortalContext,
  member: Member,
  env: Environment,
  id: string,
): Promise<ApiKeyRecord> {
  const key = await ctx.keys.get(id);
  if (!key || key.partnerId !== member.partnerId || key.environment !== env) {
    throw new PortalError(404, 'Key not found', `There is no ${env} key ${id} in your team.`);
  }
  return key;
}
