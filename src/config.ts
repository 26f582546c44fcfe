/**
 * All settings of the service: one declarative table, parsed once at start into a frozen, typed
 * object. The same table renders the README's configuration section (a test keeps them in step), so
 * a setting cannot exist without being documented.
 *
 * Sources, later wins: built-in defaults → the JSON file named by CONFIG_FILE → environment variables.
 */

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseError, type BaseErrorOptions } from './errors.ts';
import { registerUrlPassword } from './url-secrets.ts';
import { parseCidrList } from './webhooks/address-policy.ts';
import { parseMasterKey } from './webhooks/secret-box.ts';

export class ConfigError extends BaseError<'config_invalid'> {
  override name = 'ConfigError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('config_invalid', message, options);
  }
}

type Parser<T> = (raw: string) => T;

interface Setting<T> {
  /** What the README says the setting does. */
  describe: string;
  /** What a valid value looks like; used in the error line. */
  expects: string;
  parse: Parser<T>;
  /** Raw default, or undefined for an optional setting. */
  default?: string;
  /** Rendered in the README in place of the raw default. */
  defaultNote?: string;
  /** Never echoed in an error line (a key or a URL that may carry a password). */
  secret?: boolean;
}

const integer =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    if (!/^-?\d+$/.test(raw)) throw new Error('not an integer');
    const n = Number(raw);
    if (n < min || n > max) throw new Error('out of range');
    return n;
  };

const oneOf =
  <const T extends string>(values: readonly T[]): Parser<T> =>
  (raw) => {
    if (!(values as readonly string[]).includes(raw)) throw new Error('not allowed');
    return raw as T;
  };

const url =
  (protocols: readonly string[]): Parser<string> =>
  (raw) => {
    const u = new URL(raw);
    if (!protocols.includes(u.protocol)) throw new Error('wrong protocol');
    return raw;
  };

const boolean: Parser<boolean> = (raw) => {
  if (raw !== 'true' && raw !== 'false') throw new Error('not a boolean');
  return raw === 'true';
};
const nonEmpty: Parser<string> = (raw) => {
  if (raw.trim() === '') throw new Error('empty');
  return raw;
};

const ROLE_NAMES = ['api', 'worker'] as const;
export type Role = (typeof ROLE_NAMES)[number];

const roles: Parser<readonly Role[]> = (raw) => {
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0) throw new Error('empty');
  for (const r of list) oneOf(ROLE_NAMES)(r);
  return [...new Set(list)] as Role[];
};

const settings = {
  ROLES: {
    describe:
      'Which roles this process runs: `api` (HTTP), `worker` (chain sync, webhooks), or both.',
    expects: 'a comma-separated list of api, worker',
    parse: roles,
    default: 'api,worker',
  },
  HOST: {
    describe: 'Interface the HTTP server binds to.',
    expects: 'a host name or IP address',
    parse: nonEmpty,
    default: '127.0.0.1',
  },
  PORT: {
    describe: 'TCP port of the HTTP server (0 picks a free port).',
    expects: 'an integer from 0 to 65535',
    parse: integer(0, 65535),
    default: '3000',
  },
  DATA_DIR: {
    describe:
      'Directory for embedded state: the PGlite database (when no DATABASE_URL), the local chain and demo credentials.',
    expects: 'a directory path',
    parse: (raw) => path.resolve(nonEmpty(raw)),
    default: './data',
  },
  DATABASE_URL: {
    describe:
      "PostgreSQL connection URL. Unset: embedded PGlite under `DATA_DIR/pglite`, one process's database; `start` refuses it (exit 78) when the setup looks live: CHAINS_FILE names a chain other than a local development chain, or ROLES runs one role alone (see ALLOW_EMBEDDED_DATABASE).",
    expects: 'a postgres:// or postgresql:// URL',
    parse: url(['postgres:', 'postgresql:']),
  },
  ALLOW_EMBEDDED_DATABASE: {
    describe:
      '`true` lets `start` use the embedded PGlite database although the setup looks live (DATABASE_URL): for a rehearsal or a test on purpose, never for a service people rely on.',
    expects: 'true or false',
    parse: boolean,
    default: 'false',
  },
  DATABASE_POOL_MAX: {
    describe: 'Maximum connections in the PostgreSQL pool.',
    expects: 'an integer from 1 to 200',
    parse: integer(1, 200),
    default: '10',
  },
  DATABASE_PREPARED_STATEMENTS: {
    describe:
      'Whether PostgreSQL statements are prepared once per connection (faster). Set `false` behind a pooler that cannot keep them, such as PgBouncer in transaction mode before 1.21.',
    expects: 'true or false',
    parse: boolean,
    default: 'true',
  },
  REDIS_URL: {
    describe:
      'Redis connection URL. Set it when several API processes must share rate-limit budgets and cache invalidation.',
    expects: 'a redis:// or rediss:// URL',
    parse: url(['redis:', 'rediss:']),
  },
  METRICS_PORT: {
    describe:
      'TCP port of the Prometheus metrics endpoint (`GET /metrics`), a server of its own, apart from the API port (0 picks a free port). Unset: no metrics endpoint. See docs/maintainers/operations.md.',
    expects: 'an integer from 0 to 65535',
    parse: integer(0, 65535),
  },
  METRICS_HOST: {
    describe:
      'Interface the metrics endpoint binds to. Keep it private: loopback, or an address only the scraper reaches.',
    expects: 'a host name or IP address',
    parse: nonEmpty,
    default: '127.0.0.1',
  },
  LOG_LEVEL: {
    describe: 'Minimum level of the JSON logs on stdout.',
    expects: 'one of fatal, error, warn, info, debug, trace, silent',
    parse: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    default: 'info',
  },
  // The worker's polling; the defaults are worker/jobs.ts's DEFAULT_INTERVALS (a test keeps them equal).
  CHAIN_POLL_INTERVAL_MS: {
    describe:
      'How often the worker role polls each chain for product lifecycle changes and new logs (after a failure it backs off, up to 30 s).',
    expects: 'an integer from 100 to 600000',
    parse: integer(100, 600_000),
    default: '2000',
  },
  DAILY_METRICS_INTERVAL_MS: {
    describe:
      "How often the worker role looks for finished days to compute the products' daily snapshots.",
    expects: 'an integer from 1000 to 3600000',
    parse: integer(1_000, 3_600_000),
    default: '60000',
  },
  SHUTDOWN_TIMEOUT_MS: {
    describe:
      'On SIGTERM/SIGINT, how long in-flight requests and jobs may take before the process exits anyway.',
    expects: 'an integer from 100 to 600000',
    parse: integer(100, 600_000),
    default: '10000',
  },
  CHAINS_FILE: {
    describe:
      'JSON file listing the chains to follow (chain_id, name, rpc_urls, confirmation_depth or finality (`finalized`/`safe`), block_range_limit, evm, deployer_private_key). Unset: the embedded local anvil chain. Per-network settings, providers and quotas: docs/maintainers/operations.md#chains-and-providers.',
    expects: 'a path to a readable JSON file',
    parse: nonEmpty,
  },
  LOCAL_CHAIN_PORT: {
    describe: 'Port of the embedded local anvil chain on 127.0.0.1 (0 picks a free port).',
    expects: 'an integer from 0 to 65535',
    parse: integer(0, 65535),
    default: '8545',
  },
  LOCAL_CHAIN_SEED: {
    describe: "Seed of the local chain's simulated history: the same seed gives the same history.",
    expects: 'a non-empty string',
    parse: nonEmpty,
    default: 'demo',
  },
  LOCAL_CHAIN_DAYS: {
    describe: 'Days of history the local chain simulates on its first start.',
    expects: 'an integer from 2 to 730',
    parse: integer(2, 730),
    default: '200',
  },
  MASTER_KEY: {
    describe:
      'Key that encrypts webhook secrets at rest (AES-256-GCM). Every process sharing a database needs the same one. Unset: created once in `DATA_DIR/master.key` (mode 0600).',
    expects: '64 hex characters or the base64 of 32 bytes',
    parse: (raw) => {
      parseMasterKey(raw);
      return raw;
    },
    secret: true,
  },
  WEBHOOK_ALLOWED_CIDRS: {
    describe:
      'Comma-separated CIDRs that outbound webhooks may reach although they are not public (loopback, private…): for development and tests only.',
    expects: 'a comma-separated list of CIDRs such as 127.0.0.0/8,::1/128',
    parse: (raw) => parseCidrList(raw),
    default: '',
    defaultNote: 'none',
  },
  WEBHOOK_CA_FILE: {
    describe:
      'PEM file of extra certificate authorities that outbound webhooks trust besides the system ones (a development or test CA).',
    expects: 'a path to a readable PEM file',
    parse: nonEmpty,
  },
  WEBHOOK_DISABLE_AFTER_DAYS: {
    describe:
      'An outbound destination whose delivery attempts have all failed for this many days is disabled (its pending deliveries failed, a reason shown to the partner); re-enabling replays what failed meanwhile.',
    expects: 'an integer from 1 to 90',
    parse: integer(1, 90),
    default: '5',
  },
  WEBHOOK_ATTEMPT_RETENTION_DAYS: {
    describe:
      'Outbound delivery attempts, finished deliveries and their response excerpts older than this are deleted by the worker, in small batches.',
    expects: 'an integer from 1 to 3650',
    parse: integer(1, 3650),
    default: '90',
  },
  INBOUND_IDEMPOTENCY_RETENTION_DAYS: {
    describe:
      'Inbound webhook events, and so their `Idempotency-Key`s, are kept this many days (at least 30, DECISIONS) before the worker deletes them in small batches; a key reused within it still answers as a duplicate.',
    expects: 'an integer from 30 to 3650',
    parse: integer(30, 3650),
    default: '30',
  },
  EVENTS_FEED_RETENTION_DAYS: {
    describe:
      'The events feed (`GET /api/partner/events`) lists the events stored within this many days; older ones stay stored (deliveries and replays refer to them) but are no longer listed.',
    expects: 'an integer from 1 to 3650',
    parse: integer(1, 3650),
    default: '30',
  },
  PORTAL_PUBLIC_URL: {
    describe:
      'Public address of the partner portal, which the api role serves under `/portal`: sign-in links, passkeys and cookies use it. Set it when the portal has its own origin (a proxy in front of `/portal`); HTTPS makes its cookies Secure. Unset: `/portal` of the address the service listens on (`localhost` for a loopback host, so passkeys work).',
    expects: 'an http:// or https:// URL',
    parse: (raw) => url(['http:', 'https:'])(raw.replace(/\/+$/, '')),
  },
  PORTAL_SESSION_IDLE_MINUTES: {
    describe: 'A portal session ends after this many minutes without a request.',
    expects: 'an integer from 5 to 10080',
    parse: integer(5, 10_080),
    default: '60',
  },
  SMTP_URL: {
    describe:
      "SMTP server that mails the portal's one-time sign-in links (`smtp://user:pass@host:587`, `smtps://…`). Unset: each message is written to `DATA_DIR/portal-outbox/` (mode 0600), never to the logs.",
    expects: 'an smtp:// or smtps:// URL',
    parse: url(['smtp:', 'smtps:']),
    secret: true,
  },
  PORTAL_MAIL_FROM: {
    describe: "Sender of the portal's mail.",
    expects: 'an address such as "Partner portal <portal@example.com>"',
    parse: nonEmpty,
    default: 'Partner portal <portal@localhost>',
  },
  EMBED_PUBLIC_URL: {
    describe:
      'Public address of the embed (`{embed_url}`), which the api role serves under `/embed`. Set it when the embed has its own origin (a proxy in front of `/embed`). Unset: `/embed` of the address the service listens on.',
    expects: 'an http:// or https:// URL',
    parse: (raw) => url(['http:', 'https:'])(raw.replace(/\/+$/, '')),
  },
  EMBED_RATE_LIMIT_PER_MINUTE: {
    describe:
      "Embed requests per client address per minute (pages, product reads, transaction reports; not the static files). Embed traffic carries no key and never counts against a partner's API budget.",
    expects: 'an integer from 10 to 100000',
    parse: integer(10, 100_000),
    default: '600',
  },
  DEMO: {
    describe:
      'With the local chain, provision the demo partners, products and keys on a fresh database.',
    expects: 'true or false',
    parse: boolean,
    default: 'true',
  },
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof settings;
export type SettingName = keyof Settings;

type ValueOf<S> = S extends Setting<infer T> ? T : never;
type Parsed = {
  [K in SettingName]: Settings[K] extends { default: string }
    ? ValueOf<Settings[K]>
    : ValueOf<Settings[K]> | undefined;
};

export type Config = Readonly<Parsed & { CONFIG_FILE: string | undefined }>;

/** The documented settings, in table order, for the README and its test. */
export function describeSettings(): Array<{
  name: string;
  default: string | undefined;
  describe: string;
  expects: string;
}> {
  const rows: Array<{
    name: string;
    default: string | undefined;
    describe: string;
    expects: string;
  }> = [
    {
      name: 'CONFIG_FILE',
      default: undefined,
      describe:
        'Optional JSON file of settings (an object keyed by these names); environment variables override it.',
      expects: 'a path to a readable JSON file',
    },
  ];
  for (const [name, s] of Object.entries(settings) as Array<[string, Setting<unknown>]>) {
    rows.push({
      name,
      default: s.defaultNote ?? s.default,
      describe: s.describe,
      expects: s.expects,
    });
  }
  return rows;
}

function readConfigFile(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new ConfigError(
      `CONFIG_FILE: cannot read "${file}"; expected a path to a readable JSON file`,
    );
  }
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    throw new ConfigError(`CONFIG_FILE: "${file}" is not valid JSON`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new ConfigError(`CONFIG_FILE: "${file}" must hold a JSON object of settings`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (!(k in settings)) throw new ConfigError(`CONFIG_FILE: unknown setting "${k}" in "${file}"`);
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw new ConfigError(`${k}: in "${file}" must be a string, number or boolean`);
    }
    out[k] = String(v);
  }
  return out;
}

/**
 * Parse settings from an environment (process.env by default). Throws ConfigError with one line that
 * names the variable and what it expects; the caller prints it and exits.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const configFile = env.CONFIG_FILE?.trim() || undefined;
  const fromFile = configFile ? readConfigFile(configFile) : {};
  const out: Record<string, unknown> = { CONFIG_FILE: configFile };
  for (const [name, s] of Object.entries(settings) as Array<[string, Setting<unknown>]>) {
    const fromEnv = env[name];
    const raw = fromEnv !== undefined && fromEnv !== '' ? fromEnv : (fromFile[name] ?? s.default);
    if (raw === undefined) {
      out[name] = undefined;
      continue;
    }
    try {
      out[name] = s.parse(raw.trim());
    } catch {
      // Never echo a URL (it may carry a password) or a key back.
      const shown = name.endsWith('_URL') || s.secret ? '' : ` (got "${raw}")`;
      throw new ConfigError(`${name}: expected ${s.expects}${shown}`);
    }
  }
  // Passwords and keys inside the service's own URLs never reach a log line (src/url-secrets.ts).
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'SMTP_URL'] as const) {
    if (typeof out[name] === 'string') registerUrlPassword(out[name] as string);
  }
  return Object.freeze(out) as Config;
}
