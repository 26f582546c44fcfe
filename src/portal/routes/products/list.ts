/** The products of an environment: status, APYs, TVL and a health badge per product. */
import type { FastifyPluginAsync } from 'fastify';
import { type PortalContext, sendPage, signedIn } from '../../context.ts';
import { money } from '../../format.ts';
import { html } from '../../html.ts';
import { page } from '../../layout.ts';
import { badge, ESTIMATE_BASIS, healthOf, STATUS_LABEL, shownApys } from './shared.ts';

export function productsListRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    app.get<{ Params: { env: string } }>(
      '/:env/products',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const list = await ctx.products.listForPartner(member.partnerId, env);
        const latest = await ctx.snapshots.latestFor(list.map((p) => p.id));
        const now = ctx.now();
        let anyEstimate = false;
        const rows = list.map((p) => {
          const s = latest.get(p.id);
          const apys = shownApys(s);
          anyEstimate ||= apys.estimated;
          return html`<tr>
  <th scope="row" data-label="Product"><a href="${base()}/${env}/products/${p.slug}" hx-boost="false">${p.displayName}</a><br><span class="hint"><code>${p.slug}</code></span></th>
  <td data-label="Status">${STATUS_LABEL[p.status]}</td>
  <td data-label="Net APY" class="num">${apys.net}</td>
  <td data-label="Underlying APY" class="num">${apys.underlying}</td>
  <td data-label="TVL" class="num">${s ? money(s.engineTotalAssets, p.assetDecimals, p.assetSymbol) : '—'}</td>
  <td data-label="Health">${badge(healthOf(p, s, now))}</td>
</tr>`;
        });
        return sendPage(
          reply,
          page({
            title: 'Products',
            base: base(),
            csrf: reply.generateCsrf(),
            member,
            env,
            section: 'products',
            body: html`<p class="lead">Your ${env} products with their latest daily figures. APYs are over the last finished day; TVL is what the engine holds.</p>
${
  list.length === 0
    ? html`<div class="empty"><strong>No ${env} products yet</strong>We set products up with you; they appear here once provisioned.</div>`
    : html`<table class="stack">
  <caption class="visually-hidden">${env} products</caption>
  <thead><tr><th scope="col">Product</th><th scope="col">Status</th><th scope="col" class="num">Net APY</th><th scope="col" class="num">Underlying APY</th><th scope="col" class="num">TVL</th><th scope="col">Health</th></tr></thead>
  <tbody>${rows}</tbody>
</table>
${anyEstimate ? html`<p class="hint" id="estimate-note"><span class="badge badge-neutral">Estimate</span>: ${ESTIMATE_BASIS}. The API marks these <code>apy_basis: "underlying_estimate"</code>.</p>` : ''}`
}`,
          }),
        );
      },
    );
  };
}
