/**
 * The demo's way into the portal: each demo partner gets an owner (`owner@<partner>.example`), and
 * at every start demo-credentials.json gains, per partner, `"portal": { url, email, login_url }`
 * with a fresh one-time sign-in URL (a link lives 15 minutes, so an older one would be spent or
 * expired). After that, the sign-in page mails a new link to the outbox under DATA_DIR. The owner is
 * invited as the actor `demo` (operations/team.ts), audited like the demo's keys (sync/demo.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Database } from '../db/client.ts';
import { createPartnersRepo } from '../db/partners.ts';
import { createPortalMembersRepo } from '../db/portal-members.ts';
import { DEMO } from '../operations/actor.ts';
import { inviteMember } from '../operations/team.ts';
import { demoCredentialsFile, writeDemoCredentials } from '../sync/demo-credentials.ts';
import { issueSignInUrl } from './sign-in-links.ts';

export interface DemoPortalAccess {
  url: string;
  email: string;
  login_url: string;
}

export function demoOwnerEmail(partnerName: string): string {
  const slug = partnerName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return `owner@${slug || 'partner'}.example`;
}

/** Adds or refreshes the `portal` entry of every partner in demo-credentials.json, if it exists. */
export async function refreshDemoPortalAccess(options: {
  db: Database;
  dataDir: string;
  publicUrl: string;
}): Promise<boolean> {
  const file = demoCredentialsFile(options.dataDir);
  if (!existsSync(file)) return false;
  const content = JSON.parse(readFileSync(file, 'utf8')) as Parameters<
    typeof writeDemoCredentials
  >[1] & { partners: Array<{ name: string; portal?: DemoPortalAccess }> };
  const partners = createPartnersRepo(options.db);
  const members = createPortalMembersRepo(options.db);
  for (const entry of content.partners) {
    const partner = await partners.findByName(entry.name);
    if (!partner) continue;
    const email = demoOwnerEmail(partner.name);
    const member =
      (await members.findActiveByEmail(email)) ??
      (await inviteMember(options.db, DEMO, { partnerId: partner.id, email, role: 'owner' }));
    if (member.partnerId !== partner.id) continue;
    entry.portal = {
      url: options.publicUrl,
      email,
      login_url: await issueSignInUrl(options.db, options.publicUrl, member.id),
    };
  }
  writeDemoCredentials(options.dataDir, content);
  return true;
}
