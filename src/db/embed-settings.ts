/**
 * Repository of embed_settings: per partner environment, the public embed id and the parent
 * origins allowed to frame the embed. Every partner environment has its row (created by trigger
 * with the partner); this repository reads it and replaces its origin list.
 */
import { BaseError } from '../errors.ts';
import type { Queryable } from './client.ts';
import type { Environment } from './products.ts';

export interface EmbedSettings {
  partnerId: string;
  partnerName: string;
  environment: Environment;
  /** Public: it names a partner environment, it grants nothing. */
  embedId: string;
  /** Exact origins (`scheme://host[:port]`), sorted. */
  allowedOrigins: string[];
  updatedAt: Date;
}

interface Row {
  partner_id: string;
  partner_name: string;
  environment: Environment;
  embed_id: string;
  allowed_origins: string[];
  updated_at: Date;
}

const toSettings = (r: Row): EmbedSettings => ({
  partnerId: r.partner_id,
  partnerName: r.partner_name,
  environment: r.environment,
  embedId: r.embed_id,
  allowedOrigins: [...r.allowed_origins].sort(),
  updatedAt: r.updated_at,
});

const SELECT = `SELECT s.*, p.name AS partner_name FROM embed_settings s JOIN partners p ON p.id = s.partner_id`;

/** Hosts that never leave the machine: plain http:// is accepted for them only (local pages). */
export function isLoopbackHost(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

/**
 * An origin as the browser sends it: `https://host[:port]`, or `http://` for a loopback host
 * (a developer's page); no path, query, fragment or credentials; default ports dropped, host
 * lowercased. Anything else is refused with the reason. The CLI and the portal both check with it.
 */
export function normaliseOrigin(raw: string): { origin: string } | { error: string } {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return { error: `"${raw}" is not a URL; write an origin such as https://wallet.example.com` };
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') {
    return { error: `"${raw}" must start with https:// (or http:// for a local page)` };
  }
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    return { error: `"${raw}" is not an origin: no path, query, fragment or credentials` };
  }
  if (raw.includes('*')) return { error: `"${raw}": wildcards are not accepted, list each origin` };
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) {
    return {
      error: `"${raw}" must use https://; http:// is accepted only for a local page (localhost, 127.0.0.1, [::1])`,
    };
  }
  return { origin: u.origin };
}

/**
 * Most origins one environment allows: the embed sends all of them in its CSP header on every
 * page, and a partner's pages live on a handful of origins.
 */
export const MAX_ALLOWED_ORIGINS = 50;

export class TooManyOriginsError extends BaseError<'too_many_origins'> {
  override name = 'TooManyOriginsError';
  constructor() {
    super(
      'too_many_origins',
      `an environment allows at most ${MAX_ALLOWED_ORIGINS} origins; remove one no longer used first`,
    );
  }
}

export function createEmbedSettingsRepo(db: Queryable) {
  return {
    async get(partnerId: string, environment: Environment): Promise<EmbedSettings | undefined> {
      const { rows } = await db.query<Row>(
        `${SELECT} WHERE s.partner_id = $1 AND s.environment = $2`,
        [partnerId, environment],
      );
      return rows[0] && toSettings(rows[0]);
    },

    async findByEmbedId(embedId: string): Promise<EmbedSettings | undefined> {
      const { rows } = await db.query<Row>(`${SELECT} WHERE s.embed_id = $1`, [embedId]);
      return rows[0] && toSettings(rows[0]);
    },

    /**
     * Adds origins (already normalised) to the list in one statement, so two changes at once do
     * not lose each other; an origin already there stays once. Answers the row as stored; throws
     * TooManyOriginsError (nothing changed) past MAX_ALLOWED_ORIGINS.
     */
    async addOrigins(
      partnerId: string,
      environment: Environment,
      origins: readonly string[],
    ): Promise<EmbedSettings | undefined> {
      const { rows } = await db.query<{ partner_id: string }>(
        `UPDATE embed_settings SET updated_at = now(), allowed_origins = ARRAY(
           SELECT DISTINCT o FROM unnest(allowed_origins || $3::text[]) AS o ORDER BY o)
         WHERE partner_id = $1 AND environment = $2
           AND (SELECT count(DISTINCT o) FROM unnest(allowed_origins || $3::text[]) AS o) <= $4
         RETURNING partner_id`,
        [partnerId, environment, [...origins], MAX_ALLOWED_ORIGINS],
      );
      if (rows[0]) return this.get(partnerId, environment);
      const exists = await this.get(partnerId, environment);
      if (exists) throw new TooManyOriginsError();
      return undefined;
    },

    /** Removes origins from the list in one statement; answers the row as stored. */
    async removeOrigins(
      partnerId: string,
      environment: Environment,
      origins: readonly string[],
    ): Promise<EmbedSettings | undefined> {
      const { rows } = await db.query<{ partner_id: string }>(
        `UPDATE embed_settings SET updated_at = now(), allowed_origins = ARRAY(
           SELECT o FROM unnest(allowed_origins) AS o WHERE o <> ALL($3::text[]) ORDER BY o)
         WHERE partner_id = $1 AND environment = $2 RETURNING partner_id`,
        [partnerId, environment, [...origins]],
      );
      return rows[0] ? this.get(partnerId, environment) : undefined;
    },

    /** Replaces the allowed origins (already normalised; at most MAX_ALLOWED_ORIGINS). */
    async setOrigins(
      partnerId: string,
      environment: Environment,
      origins: readonly string[],
    ): Promise<EmbedSettings | undefined> {
      const unique = [...new Set(origins)].sort();
      if (unique.length > MAX_ALLOWED_ORIGINS) throw new TooManyOriginsError();
      const { rows } = await db.query<{ partner_id: string }>(
        `UPDATE embed_settings SET allowed_origins = $3::text[], updated_at = now()
         WHERE partner_id = $1 AND environment = $2 RETURNING partner_id`,
        [partnerId, environment, unique],
      );
      return rows[0] ? this.get(partnerId, environment) : undefined;
    },
  };
}

export type EmbedSettingsRepo = ReturnType<typeof createEmbedSettingsRepo>;
