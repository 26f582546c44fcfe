/**
 * What every portal route reads: repositories, the session store, the mailer, the public address,
 * and the request's signed-in member. Built once by the plugin.
 */

import type { FastifyReply, FastifyRequest } from 'fastify';
import { createApiKeysRepo } from '../db/api-keys.ts';
import type { Database } from '../db/client.ts';
import { createPortalAuditRepo, type NewAuditEntry } from '../db/portal-audit.ts';
import { createPortalMembersRepo, type Member } from '../db/portal-members.ts';
import { createPortalPasskeysRepo } from '../db/portal-passkeys.ts';
import type { SessionStore } from '../db/portal-sessions.ts';
import { createSignInTokensRepo } from '../db/portal-sign-in-tokens.ts';
import { createProductsRepo, type Environment, type ProductsRepo } from '../db/products.ts';
import { createSnapshotReads, type SnapshotReads } from '../db/snapshot-reads.ts';
import { BaseError } from '../errors.ts';
import type { ReadCache } from '../http/read-cache.ts';
import type { Logger } from '../logger.ts';
import type { Actor } from '../operations/actor.ts';
import { type ChangeCache, uncached } from './change-cache.ts';
import type { Mailer } from './mailer.ts';

export interface PortalSession {
  member: Member;
  sessionId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in member, set by the portal's session hook on signed-in routes. */
    portal?: PortalSession;
  }
}

export class PortalError extends BaseError<'portal_error'> {
  override name = 'PortalError';
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super('portal_error', message);
  }
}

export const SESSION_COOKIE = 'portal_session';

export function createPortalContext(deps: {
  db: Database;
  logger: Logger;
  sessions: SessionStore;
  /** Evicts cached sign-ins of a member around a change to them (signed-in-cache.ts). */
  changingMember?: <T>(memberId: string, change: () => Promise<T>) => Promise<T>;
  /** The API's cached reads of products and snapshots (same figures, same invalidation). */
  reads?:
    | { products: ProductsRepo; snapshots: SnapshotReads; cache: Pick<ReadCache, 'get'> }
    | undefined;
  /** What the webhook pages, and the keys, team and audit pages, read, kept until it changes
   * (change-cache.ts); without them, read every time. */
  webhookPages?: ChangeCache | undefined;
  teamPages?: ChangeCache | undefined;
  mailer: Mailer;
  publicUrl: () => string;
  /** Clock of the dashboards' day windows (tests pin it). */
  now?: (() => Date) | undefined;
}) {
  const publicUrl = deps.publicUrl;
  const members = createPortalMembersRepo(deps.db);
  const changing = deps.changingMember ?? ((_id, change) => change());
  return {
    ...deps,
    /** Runs a change to a member with their cached sign-ins evicted around it. */
    changingMember: changing,
    members: {
      ...members,
      remove: (partnerId: string, id: string) => changing(id, () => members.remove(partnerId, id)),
    },
    tokens: createSignInTokensRepo(deps.db),
    passkeys: createPortalPasskeysRepo(deps.db),
    audit: createPortalAuditRepo(deps.db),
    keys: createApiKeysRepo(deps.db),
    products: deps.reads?.products ?? createProductsRepo(deps.db),
    snapshots: deps.reads?.snapshots ?? createSnapshotReads(deps.db),
    /** The API's read cache, for what the pages build from the read model alone. */
    cache: deps.reads?.cache,
    webhookPages: deps.webhookPages ?? uncached,
    teamPages: deps.teamPages ?? uncached,
    now: deps.now ?? (() => new Date()),
    /** The path prefix the browser sees (`/portal`, or `` when the portal has its own origin). */
    base: () => new URL(publicUrl()).pathname.replace(/\/+$/, ''),
    secure: () => new URL(publicUrl()).protocol === 'https:',
    /** Audit a change by the request's member (or the anonymous sign-in's member). */
    async record(
      request: FastifyRequest,
      member: Member,
      entry: Omit<NewAuditEntry, 'partnerId' | 'memberId' | 'actor' | 'ip'>,
    ) {
      await createPortalAuditRepo(deps.db).record({
        ...entry,
        partnerId: member.partnerId,
        memberId: member.id,
        actor: member.email,
        ip: request.ip,
      });
    },
  };
}

export type PortalContext = ReturnType<typeof createPortalContext>;

/** Who makes a change from this request: its signed-in member, from the client's address. */
export function actorOf(request: FastifyRequest): Actor {
  const { member } = sessionOf(request);
  return { kind: 'member', id: member.id, email: member.email, ip: request.ip };
}

/** The signed-in member of a route behind the session hook. */
export function sessionOf(request: FastifyRequest): PortalSession {
  if (!request.portal) throw new Error('sessionOf() called on a route without the session hook');
  return request.portal;
}

/** The opening of every page under /:env/: the signed-in member and the environment shown. */
export function signedIn(request: FastifyRequest): { member: Member; env: Environment } {
  return { member: sessionOf(request).member, env: envParam(request) };
}

export function envParam(request: FastifyRequest): Environment {
  const env = (request.params as { env?: string }).env;
  if (env !== 'live' && env !== 'test') {
    throw new PortalError(404, 'Page not found', 'There is no such environment: use live or test.');
  }
  return env;
}

/** See-other redirect; htmx-boosted requests follow it and show the page it lands on. */
export function seeOther(reply: FastifyReply, location: string) {
  return reply.code(303).header('location', location).send();
}

/**
 * The address the browser shows for a page answered to a form (htmx's `HX-Push-Url`): after a
 * change made from a confirmation page, the list's address, not the action's, so that reloading or
 * going back there does not offer the change again.
 */
export function showAt(reply: FastifyReply, url: string) {
  return reply.header('hx-push-url', url);
}

export function sendPage(reply: FastifyReply, body: { toString(): string }, status = 200) {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(body.toString());
}
