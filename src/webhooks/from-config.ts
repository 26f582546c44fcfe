/** The outbound webhook parts a configuration describes: the sender's address policy and trust. */
import { readFileSync } from 'node:fs';
import type { Config } from '../config.ts';
import { type AddressPolicy, configuredAddressPolicy } from './address-policy.ts';
import { createSender, type Sender } from './sender.ts';

export function createConfiguredSender(
  config: Pick<Config, 'WEBHOOK_ALLOWED_CIDRS' | 'WEBHOOK_CA_FILE'>,
  policy: AddressPolicy = configuredAddressPolicy(config),
): Sender {
  return createSender({
    policy,
    extraCa: config.WEBHOOK_CA_FILE ? readFileSync(config.WEBHOOK_CA_FILE) : undefined,
  });
}
