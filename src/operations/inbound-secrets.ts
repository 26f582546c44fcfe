/**
 * The inbound secret of a partner environment: created, or rotated, with its audit row in one
 * transaction; the portal's inbound page and `webhook inbound-secret set` call this.
 */
import type { Database } from '../db/client.ts';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import type { Environment } from '../db/products.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { type Actor, recordChange } from './actor.ts';

export function setInboundSecret(
  db: Database,
  box: SecretBox,
  actor: Actor,
  input: { partnerId: string; environment: Environment },
): Promise<{ secret: string; rotated: boolean }> {
  return db.transaction(async (tx) => {
    const set = await createInboundSecretsRepo(tx, box).set(input.partnerId, input.environment);
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'inbound.secret_set',
      environment: input.environment,
      target: set.rotated ? 'rotated' : 'created',
    });
    return set;
  });
}
