/**
 * The webhook sender against real HTTPS receivers on loopback (test CA given as extraCa), a real
 * UDP DNS server for rebinding and mixed answers, and the real address policy. Nothing is mocked.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import {
  createSender,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_USER_AGENT,
  type Sender,
  type SenderOptions,
} from '../../src/webhooks/sender.ts';
import { type DnsServer, resolverFor, startDnsServer } from '../helpers/dns-server.ts';
import { type HttpsReceiver, startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { deadPort } from '../helpers/net.ts';

const CA = testCaPem();
const allowLoopback = createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128'));
const strict = createAddressPolicy();
const SECRET = 'whsec_dGVzdC1vbmx5LXNlY3JldC10ZXN0LW9ubHktc2VjcmV0';

/** An independent verifier: HMAC-SHA256 of the raw bytes, lowercase hex, constant-time compare. */
function verify(secret: string, raw: Buffer, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string' || !/^[0-9a-f]{64}$/.test(presented)) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(presented, 'hex'));
}
const sign = (body: string) => createHmac('sha256', SECRET).update(body, 'utf8').digest('hex');

const event = (url: string, body = '{"slug":"usdc-core","amount":"1.5"}') => ({
  url,
  eventType: 'deposit.confirmed',
  body,
  signature: sign(body),
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
async function receiver(
  options?: Parameters<typeof startHttpsReceiver>[0],
): Promise<HttpsReceiver> {
  const r = await startHttpsReceiver(options);
  cleanup.push(() => r.close());
  return r;
}
function sender(options: Partial<SenderOptions> = {}): Sender {
  const s = createSender({ policy: allowLoopback, extraCa: CA, ...options });
  cleanup.push(() => s.close());
  return s;
}
async function eventually(check: () => Promise<boolean>, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('sender defaults', () => {
  it('times out after 10 s and names itself', () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(10_000);
    expect(DEFAULT_USER_AGENT).toBe('partner-yield-service-webhooks/1.0');
  });
});

describe('sender over HTTPS', () => {
  it('POSTs the exact body with exactly the spec headers, signature verifiable', async () => {
    const rx = await receiver();
    const body = '{"slug":"eur-ö","note":"€ — ✓","amount":"1.000000"}';
    const result = await sender().send(event(`${rx.url}/hooks/in?x=1`, body));
    expect(result).toMatchObject({ ok: true, statusCode: 200, bodyExcerpt: 'ok', error: null });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(rx.requests).toHaveLength(1);
    const got = rx.requests[0]!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/hooks/in?x=1');
    expect(got.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-service-event']).toBe('deposit.confirmed');
    expect(got.headers['user-agent']).toBe('partner-yield-service-webhooks/1.0');
    expect(got.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(verify(SECRET, got.body, got.headers['x-service-signature'])).toBe(true);
    expect(verify('whsec_other', got.body, got.headers['x-service-signature'])).toBe(false);
    const extra = Object.keys(got.headers).filter(
      (h) =>
        ![
          'host',
          'connection',
          'content-type',
          'content-length',
          'user-agent',
          'x-service-event',
          'x-service-signature',
        ].includes(h),
    );
    expect(extra).toEqual([]);
  });

  it('uses a configured user agent', async () => {
    const rx = await receiver();
    await sender({ userAgent: 'custom/2' }).send(event(rx.url));
    expect(rx.requests[0]?.headers['user-agent']).toBe('custom/2');
  });

  it('a 500 is a failure with its status and body excerpt', async () => {
    const rx = await receiver({ handler: () => ({ status: 500, body: 'boom: db down' }) });
    const result = await sender().send(event(rx.url));
    expect(result).toMatchObject({
      ok: false,
      statusCode: 500,
      bodyExcerpt: 'boom: db down',
      error: null,
    });
  });

  it('any 2xx is success; 4xx is a failure with a response', async () => {
    const codes = [201, 204, 299, 400, 410];
    let i = 0;
    const rx = await receiver({ handler: () => ({ status: codes[i++]! }) });
    const s = sender();
    const results = [];
    for (const _ of codes) results.push(await s.send(event(rx.url)));
    expect(results.map((r) => [r.statusCode, r.ok, r.error])).toEqual([
      [201, true, null],
      [204, true, null],
      [299, true, null],
      [400, false, null],
      [410, false, null],
    ]);
  });

  it('keeps exactly the first 1024 bytes of a long body and the sender keeps working', async () => {
    const long = 'x'.repeat(3000) + 'y'.repeat(200_000);
    let n = 0;
    const rx = await receiver({
      handler: () =>
        n++ === 1 ? { status: 200, body: long.slice(0, 5000) } : { status: 200, body: long },
    });
    const s = sender();
    const first = await s.send(event(rx.url));
    expect(first.ok).toBe(true);
    expect(Buffer.byteLength(first.bodyExcerpt ?? '')).toBe(1024);
    expect(first.bodyExcerpt).toBe('x'.repeat(1024));
    const second = await s.send(event(rx.url));
    expect(second.bodyExcerpt).toBe('x'.repeat(1024));
    const third = await s.send(event(rx.url));
    expect(third).toMatchObject({ ok: true, statusCode: 200 });
    expect(rx.requests).toHaveLength(3);
  });

  it('does not follow a redirect', async () => {
    const target = await receiver();
    const rx = await receiver({
      handler: () => ({
        status: 302,
        headers: { location: `${target.url}/elsewhere` },
        body: 'moved',
      }),
    });
    const result = await sender().send(event(rx.url));
    expect(result).toMatchObject({ ok: false, statusCode: 302, bodyExcerpt: 'moved', error: null });
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(target.connectionCount()).toBe(0);
  });

  it('a receiver slower than the timeout is a failure, and its socket is closed', async () => {
    const rx = await receiver({ handler: () => ({ status: 200, delayMs: 5_000 }) });
    const started = Date.now();
    const result = await sender({ timeoutMs: 1_000 }).send(event(rx.url));
    const took = Date.now() - started;
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      bodyExcerpt: null,
      error: 'timed out after 1000 ms',
    });
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(2_500);
    expect(result.durationMs).toBeGreaterThanOrEqual(950);
    expect(rx.requests).toHaveLength(1);
    await eventually(async () => (await rx.openConnections()) === 0);
  });

  it('the timeout also covers a body that trickles', async () => {
    // Headers at once, then a body that never finishes.
    const { createServer } = await import('node:https');
    const { readFileSync } = await import('node:fs');
    const key = readFileSync(new URL('../fixtures/tls/localhost-key.pem', import.meta.url));
    const cert = readFileSync(new URL('../fixtures/tls/localhost-cert.pem', import.meta.url));
    const server = createServer({ key, cert }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          server.close(() => r());
          server.closeAllConnections();
        }),
    );
    const port = (server.address() as { port: number }).port;
    const result = await sender({ timeoutMs: 800 }).send(event(`https://localhost:${port}`));
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'timed out after 800 ms' });
    expect(result.durationMs).toBeLessThan(1_500);
    await eventually(
      () => new Promise<boolean>((r) => server.getConnections((_e, n) => r(n === 0))),
    );
  });

  it("an aborted caller's signal ends the attempt", async () => {
    const rx = await receiver({ handler: () => ({ status: 200, delayMs: 5_000 }) });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const result = await sender().send(event(rx.url), controller.signal);
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'aborted' });
    expect(result.durationMs).toBeLessThan(2_000);
    const again = await sender().send(event(rx.url), AbortSignal.abort());
    expect(again).toMatchObject({ ok: false, error: 'aborted' });
  });

  it('refuses a certificate the system and extraCa do not trust', async () => {
    const rx = await receiver();
    const result = await createSender({ policy: allowLoopback }).send(event(rx.url));
    expect(result).toMatchObject({ ok: false, statusCode: null, bodyExcerpt: null });
    expect(result.error).toMatch(/certificate/i);
    expect(rx.requests).toHaveLength(0);
  });

  it('checks the certificate against the URL host name', async () => {
    const rx = await receiver();
    const dns = await startDnsServer(() => ['127.0.0.1']);
    cleanup.push(() => dns.close());
    const s = sender({ resolve: resolverFor(dns) });
    const wrongName = await s.send(event(`https://not-in-cert.example:${rx.port}`));
    expect(wrongName.ok).toBe(false);
    expect(wrongName.error).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altnames/);
    const rightName = await s.send(event(`https://hooks.webhooks.test:${rx.port}`));
    expect(rightName).toMatchObject({ ok: true, statusCode: 200 });
    expect(rx.requests).toHaveLength(1);
  });

  it('network failures are results, never exceptions', async () => {
    const s = sender();
    const refused = await s.send(event(`https://127.0.0.1:${await deadPort()}`));
    expect(refused).toMatchObject({ ok: false, statusCode: null, bodyExcerpt: null });
    expect(refused.error).toMatch(/ECONNREFUSED/);
    expect((await s.send(event('not a url'))).error).toBe('invalid URL');
    const plain = await s.send(event('http://localhost:1/'));
    expect(plain).toMatchObject({ ok: false, statusCode: null });
    expect(plain.error).toMatch(/only https/);
    const dns = await startDnsServer(() => null);
    cleanup.push(() => dns.close());
    const missing = await sender({ resolve: resolverFor(dns) }).send(
      event('https://nowhere.webhooks.test/'),
    );
    expect(missing).toMatchObject({ ok: false, statusCode: null });
    expect(missing.error).toMatch(/ENOTFOUND/);
  });

  describe('beforeBody: the gate between an open connection and the first byte', () => {
    /** A raw TLS server (the test certificate) that records when bytes of a request arrive. */
    async function rawTlsServer() {
      const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'tls');
      const seen = { secured: 0, bytes: 0, text: '' };
      const server = tls.createServer(
        {
          key: readFileSync(path.join(dir, 'localhost-key.pem')),
          cert: readFileSync(path.join(dir, 'localhost-cert.pem')),
        },
        (socket) => {
          seen.secured++;
          socket.on('data', (chunk: Buffer) => {
            seen.bytes += chunk.length;
            seen.text += chunk.toString('utf8');
            if (seen.text.includes('\r\n\r\n{"slug"'))
              socket.end('HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n');
          });
          socket.on('error', () => {});
        },
      );
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
      return { url: `https://localhost:${(server.address() as AddressInfo).port}`, seen };
    }

    it('runs once the TLS connection is open, and no byte of the request is written before it resolves', async () => {
      const rx = await rawTlsServer();
      let atGate: { secured: number; bytes: number } | undefined;
      const result = await sender().send({
        ...event(rx.url),
        beforeBody: async () => {
          // Give a request written early the time to arrive.
          await new Promise((r) => setTimeout(r, 300));
          atGate = { secured: rx.seen.secured, bytes: rx.seen.bytes };
        },
      });
      expect(atGate).toEqual({ secured: 1, bytes: 0 });
      expect(result).toMatchObject({ ok: true, statusCode: 204 });
      expect(result.notSent).toBeUndefined();
      // One whole request, with its length declared (not chunked).
      expect(rx.seen.text).toMatch(/^POST \/ HTTP\/1\.1\r\n/);
      expect(rx.seen.text.toLowerCase()).toContain('content-length: 35\r\n');
      expect(rx.seen.text.toLowerCase()).not.toContain('transfer-encoding');
      expect(rx.seen.text.endsWith('\r\n\r\n{"slug":"usdc-core","amount":"1.5"}')).toBe(true);
    });

    it('a refusing gate sends nothing and says so', async () => {
      const rx = await rawTlsServer();
      const result = await sender().send({
        ...event(rx.url),
        // Refused once the server has seen the handshake through (a gate refused at once closes
        // the socket before the server's side of it completes).
        beforeBody: async () => {
          await new Promise((r) => setTimeout(r, 100));
          throw new Error('lease lost');
        },
      });
      expect(result).toMatchObject({ ok: false, statusCode: null, notSent: true });
      expect(result.error).toMatch(/not sent: lease lost/);
      await new Promise((r) => setTimeout(r, 100));
      expect(rx.seen).toMatchObject({ secured: 1, bytes: 0 });
    });

    it('is not asked when the connection fails, and the failure is an attempt', async () => {
      let asked = 0;
      const result = await sender().send({
        ...event(`https://127.0.0.1:${await deadPort()}`),
        beforeBody: async () => {
          asked++;
        },
      });
      expect(asked).toBe(0);
      expect(result).toMatchObject({ ok: false, statusCode: null });
      expect(result.notSent).toBeUndefined();
      expect(result.error).toMatch(/ECONNREFUSED/);
    });

    it('a gated request through a pooled connection is delivered whole', async () => {
      const rx = await receiver();
      const s = sender({ connections: 2 });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          s.send({ ...event(rx.url, `{"n":${i}}`), beforeBody: () => Promise.resolve() }),
        ),
      );
      expect(results.every((r) => r.ok)).toBe(true);
      expect(rx.requests.map((r) => r.body.toString()).sort()).toEqual(
        Array.from({ length: 50 }, (_, i) => `{"n":${i}}`).sort(),
      );
      expect(rx.connectionCount()).toBeLessThanOrEqual(2);
    });
  });

  it('pools keep-alive connections per origin', async () => {
    const rx = await receiver();
    const s = sender({ connections: 4 });
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => s.send(event(rx.url, `{"n":${i}}`))),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect(rx.requests).toHaveLength(300);
    expect(rx.connectionCount()).toBeLessThanOrEqual(4);
    await s.send(event(rx.url));
    expect(rx.connectionCount()).toBeLessThanOrEqual(4);
  });
});

describe('SSRF guard', () => {
  it('refuses a host name resolving to loopback without the allowlist, connecting to nothing', async () => {
    const rx = await receiver();
    const result = await sender({ policy: strict }).send(event(rx.url));
    expect(result).toMatchObject({ ok: false, statusCode: null, bodyExcerpt: null });
    expect(result.error).toMatch(/^address (127\.0\.0\.1|::1) \(loopback\) is not public/);
    expect(result.error).toContain('localhost');
    expect(rx.requests).toHaveLength(0);
    expect(rx.connectionCount()).toBe(0);
  });

  it.each([
    ['https://127.0.0.1:PORT/', 'address 127.0.0.1 (loopback) is not public'],
    ['https://[::ffff:127.0.0.1]:PORT/', 'address 127.0.0.1 (loopback) is not public'],
    ['https://[::ffff:7f00:1]:PORT/', 'address 127.0.0.1 (loopback) is not public'],
    ['https://[::1]:PORT/', 'address ::1 (loopback) is not public'],
    ['https://0x7f000001:PORT/', 'address 127.0.0.1 (loopback) is not public'],
    ['https://169.254.169.254:PORT/', 'address 169.254.169.254 (linkLocal) is not public'],
  ])('refuses the IP literal %s', async (template, error) => {
    const rx = await receiver();
    const result = await sender({ policy: strict }).send(
      event(template.replace('PORT', String(rx.port))),
    );
    expect(result).toMatchObject({ ok: false, statusCode: null, bodyExcerpt: null, error });
    expect(rx.requests).toHaveLength(0);
    expect(rx.connectionCount()).toBe(0);
  });

  it('delivers to allow-listed IP literals, IPv4 and IPv6', async () => {
    const v4 = await receiver({ host: '127.0.0.1' });
    const v6 = await receiver({ host: '::1' });
    const s = sender();
    expect(await s.send(event(v4.url))).toMatchObject({ ok: true, statusCode: 200 });
    expect(v6.url).toBe(`https://[::1]:${v6.port}`);
    expect(await s.send(event(v6.url))).toMatchObject({ ok: true, statusCode: 200 });
    expect(v4.requests).toHaveLength(1);
    expect(v6.requests).toHaveLength(1);
  });

  describe('with a programmable DNS server', () => {
    let dns: DnsServer;
    beforeAll(async () => {
      dns = await startDnsServer();
    });
    afterAll(async () => {
      await dns.close();
    });
    const queriesFor = (name: string, type: 'A' | 'AAAA') =>
      dns.queries.filter((q) => q.name === name && q.type === type).length;

    /** Receivers on 127.0.0.2 and 127.0.0.1 on the same port. */
    async function twoReceivers(): Promise<{ safe: HttpsReceiver; target: HttpsReceiver }> {
      for (let tries = 0; ; tries++) {
        const safe = await receiver({ host: '127.0.0.2' });
        try {
          const target = await receiver({ host: '127.0.0.1', port: safe.port });
          return { safe, target };
        } catch (err) {
          if (tries > 10) throw err;
        }
      }
    }

    it('DNS rebinding fails: the checked address is the one connected to, one lookup per connection', async () => {
      const { safe, target } = await twoReceivers();
      expect(safe.port).toBe(target.port);
      const name = 'rebind.webhooks.test';
      dns.setAnswer((n, type, count) => {
        if (n !== name || type !== 'A') return [];
        return count === 0 ? ['127.0.0.2'] : ['127.0.0.1'];
      });
      const policy = createAddressPolicy(parseCidrList('127.0.0.2/32'));
      const url = `https://${name}:${safe.port}/`;

      const first = await sender({ policy, resolve: resolverFor(dns) }).send(event(url));
      expect(first).toMatchObject({ ok: true, statusCode: 200, error: null });
      expect(safe.requests).toHaveLength(1);
      expect(target.requests).toHaveLength(0);
      expect(target.connectionCount()).toBe(0);
      expect(queriesFor(name, 'A')).toBe(1);
      expect(queriesFor(name, 'AAAA')).toBe(1);

      // A fresh connection resolves again, gets the rebound answer, and is refused.
      const second = await sender({ policy, resolve: resolverFor(dns) }).send(event(url));
      expect(second).toMatchObject({
        ok: false,
        statusCode: null,
        error: `address 127.0.0.1 (loopback) is not public (resolved from ${name})`,
      });
      expect(queriesFor(name, 'A')).toBe(2);
      expect(queriesFor(name, 'AAAA')).toBe(2);
      expect(safe.requests).toHaveLength(1);
      expect(target.requests).toHaveLength(0);
      expect(target.connectionCount()).toBe(0);
    });

    it('refuses a name resolving to a public and a loopback address, entirely', async () => {
      const rx = await receiver();
      const name = 'mixed.webhooks.test';
      dns.setAnswer((n, type) =>
        n !== name ? [] : type === 'A' ? ['8.8.8.8', '127.0.0.1'] : ['2606:4700::1111'],
      );
      const result = await sender({ policy: strict, resolve: resolverFor(dns) }).send(
        event(`https://${name}:${rx.port}/`),
      );
      expect(result).toMatchObject({
        ok: false,
        statusCode: null,
        error: `address 127.0.0.1 (loopback) is not public (resolved from ${name})`,
      });
      expect(rx.requests).toHaveLength(0);
      expect(rx.connectionCount()).toBe(0);
    });

    it('refuses an IPv4-mapped loopback AAAA answer', async () => {
      const rx = await receiver();
      const name = 'mapped.webhooks.test';
      dns.setAnswer((n, type) => (n === name && type === 'AAAA' ? ['::ffff:127.0.0.1'] : []));
      const result = await sender({ policy: strict, resolve: resolverFor(dns) }).send(
        event(`https://${name}:${rx.port}/`),
      );
      expect(result.error).toBe(
        `address 127.0.0.1 (loopback) is not public (resolved from ${name})`,
      );
      expect(rx.connectionCount()).toBe(0);
    });

    it('a pooled connection to an allowed host does not carry another host through', async () => {
      const { safe, target } = await twoReceivers();
      dns.setAnswer((n, type) => {
        if (type !== 'A') return [];
        return n === 'a.webhooks.test'
          ? ['127.0.0.2']
          : n === 'b.webhooks.test'
            ? ['127.0.0.1']
            : [];
      });
      const s = sender({
        policy: createAddressPolicy(parseCidrList('127.0.0.2/32')),
        resolve: resolverFor(dns),
      });
      expect(await s.send(event(`https://a.webhooks.test:${safe.port}/`))).toMatchObject({
        ok: true,
      });
      expect(await s.send(event(`https://a.webhooks.test:${safe.port}/`))).toMatchObject({
        ok: true,
      });
      const b = await s.send(event(`https://b.webhooks.test:${safe.port}/`));
      expect(b.ok).toBe(false);
      expect(b.error).toMatch(/127\.0\.0\.1 \(loopback\) is not public/);
      expect(safe.requests).toHaveLength(2);
      expect(target.connectionCount()).toBe(0);
    });
  });
});
