/**
 * The Embed page of an environment: its public embed id, the parent origins allowed to frame the
 * embed (sent by the embed as CSP frame-ancestors), and a snippet with the host helper. Adding and
 * removing an origin check it and change the list with the same functions as the operator's
 * `yield-service embed origins add|remove` (normaliseOrigin; operations/embed-origins.ts, which
 * writes the change and its audit rows); this file renders and words refusals.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import {
  createEmbedSettingsRepo,
  type EmbedSettings,
  MAX_ALLOWED_ORIGINS,
  normaliseOrigin,
  TooManyOriginsError,
} from '../../db/embed-settings.ts';
import type { Member } from '../../db/portal-members.ts';
import type { Environment } from '../../db/products.ts';
import { changeEmbedOrigins } from '../../operations/embed-origins.ts';
import { permits } from '../access.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  sendPage,
  showAt,
  signedIn,
} from '../context.ts';
import { type Html, html } from '../html.ts';
import { page } from '../layout.ts';

/** Longest origin the form takes: a host name is at most 253 characters, plus scheme and port. */
const MAX_ORIGIN_LENGTH = 300;

/** Placeholder of the snippet when the environment has no deployed product yet. */
const SLUG_PLACEHOLDER = 'your-product-slug';

/** The host helper snippet, exactly as a partner pastes it (see docs/embed.md). */
export function hostSnippet(embedUrl: string, embedId: string, slug: string): string {
  return `<div id="yield"></div>
<script src="${embedUrl}/host.js"></script>
<script>
  YieldEmbed.mount(document.getElementById('yield'), {
    src: '${embedUrl}/${embedId}/${slug}',
    theme: 'auto',
    onEvent: (e) => console.log(e.type, e.data),
  });
</script>`;
}

export function embedSettingsRoutes(
  ctx: PortalContext,
  embedUrl: () => string,
): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const settings = createEmbedSettingsRepo(ctx.db);

    async function settingsOf(member: Member, env: Environment): Promise<EmbedSettings> {
      const s = await settings.get(member.partnerId, env);
      // Every partner environment has its row from the moment the partner exists (migration 0020).
      if (!s) throw new Error(`no embed settings for partner ${member.partnerId} ${env}`);
      return s;
    }

    async function settingsPage(
      member: Member,
      env: Environment,
      csrf: string,
      extra: { errors?: string[]; origin?: string; notice?: Html | string } = {},
    ) {
      const s = await settingsOf(member, env);
      const manage = permits(member.role, 'embed.manage', env);
      const deployed = (await ctx.products.listForPartner(member.partnerId, env)).filter(
        (p) => p.status !== 'pending_deploy',
      );
      const slug =
        (deployed.find((p) => p.status === 'active') ?? deployed[0])?.slug ?? SLUG_PLACEHOLDER;
      const url = embedUrl().replace(/\/+$/, '');
      const here = `${base()}/${env}/embed`;
      const invalid = extra.errors?.length
        ? html` aria-invalid="true" aria-describedby="origin-hint"`
        : html` aria-describedby="origin-hint"`;
      const body = html`<p class="lead">The embed is a deposit and withdraw widget that your page puts in an iframe; your users sign with their own wallet. Only pages on the origins listed here may frame your ${env} embed.</p>
<section class="panel" aria-labelledby="id-heading">
  <h2 id="id-heading">Embed id</h2>
  <div class="secret-value">
    <code id="embed-id">${s.embedId}</code>
    <button type="button" class="secondary" data-copy="embed-id">Copy id</button>
  </div>
  <p class="hint">Public: it names your ${env} environment and grants nothing, so it may sit in your page's source. No API key is ever needed in a browser.</p>
</section>
<h2 id="origins-heading">Allowed origins</h2>
${
  s.allowedOrigins.length === 0
    ? html`<div class="empty"><strong>No origins yet</strong>No page can frame your ${env} embed. ${manage ? 'Add the origin of the page that will show it.' : 'Ask an owner or admin to add one.'}</div>`
    : html`<table class="stack" aria-labelledby="origins-heading">
  <thead><tr><th scope="col">Origin</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${s.allowedOrigins.map(
    (o) => html`<tr>
    <td data-label="Origin"><code>${o}</code></td>
    <td class="actions">${
      manage
        ? html`<form method="post" action="${here}/origins/remove">
      <input type="hidden" name="_csrf" value="${csrf}">
      <input type="hidden" name="origin" value="${o}">
      <button type="submit" class="link-button" aria-label="Remove ${o}">Remove</button>
    </form>`
        : ''
    }</td>
  </tr>`,
  )}</tbody>
</table>`
}
${
  manage
    ? html`<section class="panel" aria-labelledby="add-heading">
  <h2 id="add-heading">Allow an origin</h2>
  <form method="post" action="${here}/origins" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="field"><label for="origin">Origin</label>
      <input type="text" id="origin" name="origin" class="origin-input" inputmode="url" autocomplete="off" spellcheck="false" required maxlength="${MAX_ORIGIN_LENGTH}" placeholder="https://wallet.example.com" value="${extra.origin ?? ''}"${invalid}></div>
    <div class="field"><button type="submit">Allow origin</button></div>
  </form>
  <p class="hint" id="origin-hint">Scheme, host and port only, such as <code>https://wallet.example.com</code> or <code>https://app.example.com:8443</code>: no path, no wildcard. <code>http://</code> only for a page on your own machine (<code>http://localhost:5173</code>). Changes reach the embed within a few seconds.</p>
</section>`
    : html`<p class="hint">Your role (${member.role}) can see the ${env} embed settings; owners and admins${env === 'test' ? ' and developers' : ''} change them.</p>`
}
<h2 id="snippet-heading">Put it on your page</h2>
<p>Paste this where the widget should appear. The host helper creates the iframe, keeps its height to its content and passes you its events.${deployed.length > 1 ? html` Other products: ${deployed.filter((p) => p.slug !== slug).map((p, i) => html`${i ? ', ' : ''}<code>${p.slug}</code>`)}.` : ''}${deployed.length === 0 ? html` Replace <code>${SLUG_PLACEHOLDER}</code> with a product's slug once one is deployed.` : ''}</p>
<pre aria-labelledby="snippet-heading"><code id="embed-snippet">${hostSnippet(url, s.embedId, slug)}</code></pre>
<div class="buttons"><button type="button" class="secondary" data-copy="embed-snippet">Copy snippet</button></div>`;
      return page({
        title: 'Embed',
        base: base(),
        csrf,
        member,
        env,
        section: 'embed',
        errors: extra.errors,
        notice: extra.notice,
        body,
      });
    }

    const originField = (body: unknown): string => {
      const raw = (body as { origin?: unknown } | undefined)?.origin;
      return typeof raw === 'string' ? raw.trim().slice(0, MAX_ORIGIN_LENGTH) : '';
    };

    app.get<{ Params: { env: string } }>(
      '/:env/embed',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        return sendPage(reply, await settingsPage(member, env, reply.generateCsrf()));
      },
    );

    async function again(
      reply: FastifyReply,
      member: Member,
      env: Environment,
      origin: string,
      error: string,
    ) {
      return sendPage(
        reply,
        await settingsPage(member, env, reply.generateCsrf(), { errors: [error], origin }),
        400,
      );
    }

    app.post<{ Params: { env: string }; Body: { origin?: unknown } }>(
      '/:env/embed/origins',
      { config: { requires: 'embed.manage' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const raw = originField(request.body);
        if (!raw) {
          return again(
            reply,
            member,
            env,
            raw,
            'Enter an origin, such as https://wallet.example.com.',
          );
        }
        const checked = normaliseOrigin(raw);
        if ('error' in checked) {
          return again(
            reply,
            member,
            env,
            raw,
            `That is not an origin we can allow: ${checked.error}.`,
          );
        }
        const before = await settingsOf(member, env);
        if (before.allowedOrigins.includes(checked.origin)) {
          return sendPage(
            reply,
            await settingsPage(member, env, reply.generateCsrf(), {
              notice: html`<code>${checked.origin}</code> is already allowed. Nothing changed.`,
            }),
          );
        }
        try {
          await changeEmbedOrigins(ctx.db, actorOf(request), {
            partnerId: member.partnerId,
            environment: env,
            change: 'add',
            origins: [checked.origin],
          });
        } catch (err) {
          if (!(err instanceof TooManyOriginsError)) throw err;
          return again(
            reply,
            member,
            env,
            raw,
            `An environment allows at most ${MAX_ALLOWED_ORIGINS} origins. Remove one you no longer use first.`,
          );
        }
        showAt(reply, `${ctx.base()}/${env}/embed`);
        return sendPage(
          reply,
          await settingsPage(member, env, reply.generateCsrf(), {
            notice: html`<code>${checked.origin}</code> is allowed: pages there may frame your ${env} embed.`,
          }),
        );
      },
    );

    app.post<{ Params: { env: string }; Body: { origin?: unknown } }>(
      '/:env/embed/origins/remove',
      { config: { requires: 'embed.manage' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const origin = originField(request.body);
        const before = await settingsOf(member, env);
        if (!before.allowedOrigins.includes(origin)) {
          throw new PortalError(
            404,
            'Origin not found',
            `That origin is not in the ${env} list (it may have been removed meanwhile).`,
          );
        }
        await changeEmbedOrigins(ctx.db, actorOf(request), {
          partnerId: member.partnerId,
          environment: env,
          change: 'remove',
          origins: [origin],
        });
        showAt(reply, `${ctx.base()}/${env}/embed`);
        return sendPage(
          reply,
          await settingsPage(member, env, reply.generateCsrf(), {
            notice: html`<code>${origin}</code> is removed: pages there can no longer frame your ${env} embed.`,
          }),
        );
      },
    );
  };
}
