/**
 * Every page of the portal, one module per page (or per group of a page's changes). Each route
 * declares who may open it (`config.requires`, access.ts); the plugin refuses one that does not.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { AddressPolicy } from '../../webhooks/address-policy.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import type { PortalContext } from '../context.ts';
import { accountRoutes } from './account.ts';
import { auditCsvRoutes } from './audit/csv.ts';
import { auditRoutes } from './audit/page.ts';
import { embedSettingsRoutes } from './embed-settings.ts';
import { keyChangeRoutes } from './keys/changes.ts';
import { keysListRoutes } from './keys/list.ts';
import { passkeyRemovalRoutes } from './passkey-removal.ts';
import { passkeyRoutes } from './passkeys.ts';
import { productDetailRoutes } from './products/detail.ts';
import { feeStatsCsvRoutes } from './products/fee-stats-csv.ts';
import { productsListRoutes } from './products/list.ts';
import { signInRoutes } from './sign-in.ts';
import { teamChangeRoutes } from './team/changes.ts';
import { teamPageRoutes } from './team/page.ts';
import { destinationChangeRoutes } from './webhooks/changes.ts';
import { deliveryRoutes } from './webhooks/deliveries.ts';
import { destinationPageRoutes } from './webhooks/destination.ts';
import { webhookEditRoutes } from './webhooks/edit.ts';
import { inboundRoutes } from './webhooks/inbound.ts';
import { inboundSecretRoutes } from './webhooks/inbound-secret.ts';
import { webhooksListRoutes } from './webhooks/list.ts';

export function pageRoutes(
  ctx: PortalContext,
  opts: {
    box: SecretBox;
    addresses: AddressPolicy;
    signInLimit: { max: number; windowMs: number };
    embedUrl: () => string;
  },
): FastifyPluginAsync {
  const { box, addresses, signInLimit } = opts;
  return async (app) => {
    await app.register(signInRoutes(ctx, signInLimit));
    await app.register(passkeyRoutes(ctx, box, signInLimit));
    await app.register(accountRoutes(ctx));
    await app.register(passkeyRemovalRoutes(ctx));
    await app.register(productsListRoutes(ctx));
    await app.register(productDetailRoutes(ctx));
    await app.register(feeStatsCsvRoutes(ctx));
    await app.register(keysListRoutes(ctx));
    await app.register(keyChangeRoutes(ctx));
    await app.register(teamPageRoutes(ctx));
    await app.register(teamChangeRoutes(ctx));
    await app.register(auditRoutes(ctx));
    await app.register(auditCsvRoutes(ctx));
    await app.register(webhooksListRoutes(ctx, box, addresses));
    await app.register(inboundRoutes(ctx, box));
    await app.register(inboundSecretRoutes(ctx, box));
    await app.register(destinationPageRoutes(ctx));
    await app.register(deliveryRoutes(ctx, box));
    await app.register(destinationChangeRoutes(ctx, box));
    await app.register(webhookEditRoutes(ctx, box, addresses));
    await app.register(embedSettingsRoutes(ctx, opts.embedUrl));
  };
}
