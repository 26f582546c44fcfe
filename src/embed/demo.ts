/**
 * The demo's embeds: each demo partner environment allows the second loopback origin of this
 * server (127.0.0.1 ↔ localhost) to frame its embed, and its credentials gain
 * `embed: { url, host_example_url }` — the iframe URL of its active product and a page on that
 * other origin that frames it with the host helper, so a newcomer sees the embed in one click.
 */
import type { Database } from '../db/client.ts';
import { createEmbedSettingsRepo } from '../db/embed-settings.ts';
import { createPartnersRepo } from '../db/partners.ts';
import { DEMO } from '../operations/actor.ts';
import { changeEmbedOrigins } from '../operations/embed-origins.ts';
import type { DemoPartnerCredentials } from '../sync/demo.ts';
import { otherLoopbackOrigin } from './public-url.ts';

export async function provisionDemoEmbeds(
  db: Database,
  partners: readonly DemoPartnerCredentials[],
  embedUrl: string,
): Promise<DemoPartnerCredentials[]> {
  const hostOrigin = otherLoopbackOrigin(embedUrl);
  const embedPath = new URL(embedUrl).pathname.replace(/\/+$/, '');
  const settings = createEmbedSettingsRepo(db);
  const partnersRepo = createPartnersRepo(db);
  const out: DemoPartnerCredentials[] = [];
  for (const partner of partners) {
    const record = await partnersRepo.findByName(partner.name);
    if (!record) throw new Error(`demo partner ${partner.name} is missing`);
    const next = { ...partner };
    for (const env of ['live', 'test'] as const) {
      let s = await settings.get(record.id, env);
      if (!s) throw new Error(`no embed settings for ${partner.name} ${env}`);
      // The portal's own operation, as the actor `demo`: audited where the origin is new.
      if (hostOrigin) {
        s =
          (await changeEmbedOrigins(db, DEMO, {
            partnerId: record.id,
            environment: env,
            change: 'set',
            origins: [hostOrigin],
          })) ?? s;
      }
      const slug = partner[env].products.active;
      const pagePath = `${s.embedId}/${slug}`;
      next[env] = {
        ...partner[env],
        embed: {
          url: `${embedUrl}/${pagePath}`,
          host_example_url: `${hostOrigin ?? new URL(embedUrl).origin}${embedPath}/host-example/${pagePath}`,
        },
      };
    }
    out.push(next);
  }
  return out;
}
