/**
 * A portal under test: the real app (buildApp with the portal) on a fresh database, a partner,
 * mail written to a temporary outbox, and a small browser-like client over `inject` that keeps
 * cookies and reads the CSRF token and one-time links the way a member would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import type { MemberRole } from '../../src/db/portal-members.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { Redis } from '../../src/redis.ts';
import { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { type EngineName, freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

export const PUBLIC_URL = 'http://localhost/portal';

export interface Harness {
  t: TestDatabase;
  app: Awaited<ReturnType<typeof buildApp>>;
  partner: Partner;
  outbox: string;
  logLines: () => string[];
  /** Adds a member by the operator's path and returns a signed-in client for them. */
  /**
   * A member signed in by a link (`follow`: the browser then opens the first page). Forms' tokens
   * are bound to the session they were shown in: open a page before posting its form.
   */
  signedIn(
    email: string,
    role?: MemberRole,
    partner?: Partner,
    options?: { follow?: boolean },
  ): Promise<Client>;
  /** A fresh browser with no cookies. */
  client(): Client;
  /** The sign-in links mailed to an address so far, oldest first. */
  mailedLinks(email: string): string[];
  close(): Promise<void>;
}

export async function portalHarness(
  opts: {
    engine?: EngineName;
    idleMs?: number;
    signInLimit?: { max: number; windowMs: number };
    redis?: Redis;
    /** The master key of the secret box (random by default): a CLI beside it needs the same one. */
    masterKey?: Buffer;
    publicUrl?: string;
    /** WEBHOOK_ALLOWED_CIDRS of the destination forms' address policy (none by default). */
    allowedCidrs?: string;
  } = {},
): Promise<Harness> {
  // PORTAL_TEST_ENGINE=postgres runs the portal's server tests on PostgreSQL (TEST_DATABASE_URL).
  const t = await freshDatabase(
    opts.engine ?? (process.env.PORTAL_TEST_ENGINE === 'postgres' ? 'postgres' : 'pglite'),
  );
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-outbox-'));
  const logs = captureLogger();
  const publicUrl = opts.publicUrl ?? PUBLIC_URL;
  const app = await buildApp({
    db: t.db,
    logger: logs.logger,
    redis: opts.redis,
    // One box for the API and the portal: an inbound secret set in the portal verifies requests.
    secretBox: createSecretBox(opts.masterKey ?? randomBytes(32)),
    portal: {
      mailer: createOutboxMailer(outbox, 'Portal <portal@test>'),
      publicUrl: () => publicUrl,
      idleMs: opts.idleMs ?? 60 * 60_000,
      addresses: createAddressPolicy(parseCidrList(opts.allowedCidrs ?? '')),
      ...(opts.signInLimit ? { signInLimit: opts.signInLimit } : {}),
    },
  });
  await app.ready();
  const partner = await createPartnersRepo(t.db).create(
    `partner-${Math.random().toString(36).slice(2, 8)}`,
  );
  const mailedLinks = (email: string) =>
    readdirSync(outbox)
      .sort()
      .map((f) => readFileSync(path.join(outbox, f), 'utf8'))
      .filter((m) => m.includes(`To: ${email}\r\n`))
      .map((m) => /https?:\/\/\S+\/sign-in\/link\?token=[\w-]+(&return_to=[\w%.~-]+)?/.exec(m)?.[0])
      .filter((l): l is string => !!l);
  const harness: Harness = {
    t,
    app,
    partner,
    outbox,
    logLines: logs.lines,
    mailedLinks,
    client: () => new Client(app, publicUrl),
    async signedIn(email, role = 'owner', p = partner, options = {}) {
      const member = await inviteMember(t.db, { partnerId: p.id, email, role });
      const url = await issueSignInUrl(t.db, publicUrl, member.id);
      const client = new Client(app, publicUrl);
      await client.signInWithLink(url, options);
      return client;
    },
    async close() {
      await app.close();
      await t.drop();
      rmSync(outbox, { recursive: true, force: true });
    },
  };
  return harness;
}

type App = Harness['app'];

export interface Page {
  status: number;
  body: string;
  location: string | undefined;
  headers: Record<string, unknown>;
}

/** A cookie-keeping client over inject; paths are given as the browser sees them (/portal/…). */
export class Client {
  cookies = new Map<string, string>();
  /** The CSRF token of the last page that had a form. */
  csrf = '';
  ip = '127.0.0.1';
  constructor(
    private readonly app: App,
    private readonly publicUrl: string,
  ) {}

  private path(url: string): string {
    if (url.startsWith('http')) {
      const u = new URL(url);
      return u.pathname + u.search;
    }
    return url;
  }

  private absorb(res: { headers: Record<string, unknown> }) {
    const set = res.headers['set-cookie'];
    for (const line of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair] = String(line).split(';');
      const [name, ...rest] = pair!.split('=');
      const value = rest.join('=');
      const expired =
        /expires=Thu, 01 Jan 1970/i.test(String(line)) || /max-age=0/i.test(String(line));
      if (expired || value === '') this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value);
    }
  }

  private cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string): Promise<Page> {
    const res = await this.app.inject({
      method: 'GET',
      url: this.path(url),
      headers: { cookie: this.cookieHeader() },
      remoteAddress: this.ip,
    });
    this.absorb(res);
    const m = /name="_csrf" value="([^"]+)"/.exec(res.body);
    if (m) this.csrf = m[1]!;
    return {
      status: res.statusCode,
      body: res.body,
      location: res.headers.location as string | undefined,
      headers: res.headers,
    };
  }

  /** Posts a form; `_csrf` is the last page's token unless the fields name one. */
  async post(
    url: string,
    fields: Record<string, string> = {},
    headers: Record<string, string> = {},
  ): Promise<Page> {
    const form = new URLSearchParams({ _csrf: this.csrf, ...fields });
    const res = await this.app.inject({
      method: 'POST',
      url: this.path(url),
      headers: {
        cookie: this.cookieHeader(),
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      payload: form.toString(),
      remoteAddress: this.ip,
    });
    this.absorb(res);
    const m = /name="_csrf" value="([^"]+)"/.exec(res.body);
    if (m) this.csrf = m[1]!;
    return {
      status: res.statusCode,
      body: res.body,
      location: res.headers.location as string | undefined,
      headers: res.headers,
    };
  }

  /** A JSON POST as the page's script sends it (CSRF token in a header). */
  async postJson(url: string, body: unknown, csrf = this.csrf): Promise<Page & { json: unknown }> {
    const res = await this.app.inject({
      method: 'POST',
      url: this.path(url),
      headers: { cookie: this.cookieHeader(), 'x-csrf-token': csrf },
      payload: body as object,
      remoteAddress: this.ip,
    });
    this.absorb(res);
    return {
      status: res.statusCode,
      body: res.body,
      json: res.json(),
      location: res.headers.location as string | undefined,
      headers: res.headers,
    };
  }

  /** Opens a one-time link and presses Continue, as a member does. */
  async signInWithLink(url: string, options: { follow?: boolean } = {}): Promise<Page> {
    const confirm = await this.get(url);
    if (confirm.status !== 200) return confirm;
    const token = new URL(url).searchParams.get('token')!;
    // The form's fields as a browser sends them: the token, and the return path if it has one.
    const back = /name="return_to" value="([^"]*)"/.exec(confirm.body)?.[1];
    const signedIn = await this.post('/portal/sign-in/link', {
      token,
      ...(back === undefined ? {} : { return_to: unescapeHtml(back) }),
    });
    // As a browser does, on request: follow to the first page, whose forms carry a token of the
    // new session (tokens are bound to the session they were shown in).
    if (options.follow === true && signedIn.status === 303 && signedIn.location) {
      await this.get(signedIn.location);
    }
    return signedIn;
  }

  get session(): string | undefined {
    return this.cookies.get('portal_session');
  }

  get base(): string {
    return new URL(this.publicUrl).pathname;
  }
}

/** An attribute's value as the browser reads it. */
export function unescapeHtml(value: string): string {
  return value
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The text of a page without tags, for assertions on what a member reads. */
export function text(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .trim();
}
