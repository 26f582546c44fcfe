/**
 * A member's passkeys: removing one, with its audit row, in one transaction. Once removed it signs
 * nobody in (the sign-in looks the credential up and finds nothing). Registration stays with the
 * WebAuthn ceremony (portal/routes/passkeys.ts), which is the member's own browser talking to us.
 */
import type { Database } from '../db/client.ts';
import type { Member } from '../db/portal-members.ts';
import { createPortalPasskeysRepo, type Passkey } from '../db/portal-passkeys.ts';
import { type Actor, recordChange } from './actor.ts';

/** The removed passkey, or undefined when the member has no passkey with this id. */
export function removePasskey(
  db: Database,
  actor: Actor,
  member: Pick<Member, 'id' | 'partnerId'>,
  passkeyId: string,
): Promise<Passkey | undefined> {
  return db.transaction(async (tx) => {
    const passkeys = createPortalPasskeysRepo(tx);
    const passkey = await passkeys.get(passkeyId);
    if (!passkey || passkey.memberId !== member.id) return undefined;
    await passkeys.remove(member.id, passkeyId);
    await recordChange(tx, actor, {
      partnerId: member.partnerId,
      action: 'passkey.removed',
      target: passkey.name,
    });
    return passkey;
  });
}
