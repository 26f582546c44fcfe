/**
 * verifyWebhook against the standardwebhooks package (a client nobody here wrote): deliveries it
 * signs verify here, and signatures made here verify there. Then every refusal: a parsed body, a
 * changed byte, a wrong secret, a stale or future timestamp, missing headers; rotation with several
 * secrets and several signatures; unknown event types returned, not rejected.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { hmacSha256, toBase64, utf8 } from '../src/crypto.ts';
import { verifyWebhook, WebhookVerificationError } from '../src/index.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const NOW = Date.parse('2026-11-22T20:00:00Z');
const now = () => NOW;
const deposit = {
  slug: 'acme-live-usdc-core',
  chain_id: 31337,
  tx_hash: `0x${'ab'.repeat(32)}`,
  block_number: 42,
  log_index: 3,
  user_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  amount: '1250.5',
  shares: '1250.499999999999',
  asset_symbol: 'USDC',
  occurred_at: '2026-11-22T19:59:58.000Z',
};

/** A delivery signed by the standardwebhooks package. */
function delivery(secret: string, body: string, type = 'deposit.confirmed', at = new Date(NOW)) {
  const id = `evt_${randomBytes(8).toString('hex')}`;
  return {
    'content-type': 'application/json',
    'x-service-event': type,
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

describe('verifyWebhook', () => {
  const secret = newSecret();
  const body = JSON.stringify(deposit);

  it('verifies a delivery the standardwebhooks package signed and returns the typed event', async () => {
    const headers = delivery(secret, body);
    const event = await verifyWebhook(body, headers, secret, { now });
    expect(event).toEqual({
      id: headers['webhook-id'],
      timestamp: new Date(NOW),
      known: true,
      type: 'deposit.confirmed',
      data: deposit,
    });
    if (event.known && event.type === 'deposit.confirmed') {
      // Narrowed: the payload is typed.
      expect(event.data.amount).toBe('1250.5');
    }
  });

  it('takes the body as a string, a Buffer, a Uint8Array or an ArrayBuffer, and Fetch Headers', async () => {
    const headers = delivery(secret, body);
    const bytes = new TextEncoder().encode(body);
    for (const raw of [body, Buffer.from(body), bytes, bytes.buffer]) {
      await expect(verifyWebhook(raw, headers, secret, { now })).resolves.toMatchObject({
        known: true,
      });
    }
    await expect(verifyWebhook(body, new Headers(headers), secret, { now })).resolves.toMatchObject(
      {
        type: 'deposit.confirmed',
      },
    );
    const upper = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]]),
    );
    await expect(verifyWebhook(body, upper, secret, { now })).resolves.toMatchObject({
      known: true,
    });
  });

  it('refuses a parsed body with a message that says to pass the raw bytes', async () => {
    const err = await verifyWebhook(deposit as never, delivery(secret, body), secret, {
      now,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect(err).toMatchObject({
      code: 'webhook_body_not_raw',
      message: expect.stringContaining('raw request body'),
    });
  });

  it('refuses a body re-serialised with other spacing, and any changed byte', async () => {
    const headers = delivery(secret, body);
    for (const changed of [
      JSON.stringify(deposit, null, 2),
      body.replace('1250.5', '1250.6'),
      `${body} `,
    ]) {
      await expect(verifyWebhook(changed, headers, secret, { now })).rejects.toMatchObject({
        code: 'webhook_signature_mismatch',
      });
    }
  });

  it('refuses another secret, and a forged webhook-id', async () => {
    const headers = delivery(secret, body);
    await expect(verifyWebhook(body, headers, newSecret(), { now })).rejects.toMatchObject({
      code: 'webhook_signature_mismatch',
    });
    await expect(
      verifyWebhook(body, { ...headers, 'webhook-id': 'evt_other' }, secret, { now }),
    ).rejects.toMatchObject({ code: 'webhook_signature_mismatch' });
  });

  it('refuses a timestamp outside the tolerance (default 5 min), either way, and accepts one inside', async () => {
    for (const offset of [-301_000, 301_000]) {
      const headers = delivery(secret, body, 'deposit.confirmed', new Date(NOW + offset));
      await expect(verifyWebhook(body, headers, secret, { now })).rejects.toMatchObject({
        code: 'webhook_timestamp_out_of_tolerance',
      });
    }
    const old = delivery(secret, body, 'deposit.confirmed', new Date(NOW - 299_000));
    await expect(verifyWebhook(body, old, secret, { now })).resolves.toMatchObject({ known: true });
    await expect(
      verifyWebhook(body, old, secret, { now, toleranceSeconds: 60 }),
    ).rejects.toMatchObject({
      code: 'webhook_timestamp_out_of_tolerance',
    });
    await expect(
      verifyWebhook(body, { ...old, 'webhook-timestamp': 'yesterday' }, secret, { now }),
    ).rejects.toMatchObject({ code: 'webhook_timestamp_out_of_tolerance' });
  });

  it('refuses a delivery without its headers', async () => {
    const headers = delivery(secret, body);
    for (const name of [
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'x-service-event',
    ] as const) {
      const { [name]: _dropped, ...rest } = headers;
      await expect(verifyWebhook(body, rest, secret, { now })).rejects.toMatchObject({
        code: 'webhook_missing_headers',
      });
    }
  });

  it('refuses a secret that is not a whsec_ secret', async () => {
    await expect(
      verifyWebhook(body, delivery(secret, body), 'hunter2', { now }),
    ).rejects.toMatchObject({
      code: 'webhook_invalid_secret',
    });
  });

  it('skips unset entries of a list of secrets, and names a bad one', async () => {
    // The README's rotation sample with no rotation in progress: WHSEC_OLD unset. Every genuine
    // delivery was refused before (found following the SDK README).
    const headers = delivery(secret, body);
    await expect(
      verifyWebhook(body, headers, [secret, undefined, ''], { now }),
    ).resolves.toMatchObject({ known: true });
    await expect(verifyWebhook(body, headers, [undefined, ''], { now })).rejects.toMatchObject({
      code: 'webhook_invalid_secret',
      message: expect.stringMatching(/No secret given .*environment variable/),
    });
    await expect(verifyWebhook(body, headers, [secret, 'hunter2'], { now })).rejects.toMatchObject({
      code: 'webhook_invalid_secret',
      message: expect.stringMatching(/^Entry 2 of the secrets/),
    });
  });

  it('verifies during a rotation: several secrets, several signatures in the header', async () => {
    const previous = newSecret();
    const headers = delivery(previous, body);
    // The sender signs with both secrets during the grace period: "v1,<new> v1,<old>".
    const withNew = new Webhook(secret).sign(headers['webhook-id'], new Date(NOW), body);
    const both = { ...headers, 'webhook-signature': `${withNew} ${headers['webhook-signature']}` };
    await expect(verifyWebhook(body, both, previous, { now })).resolves.toMatchObject({
      known: true,
    });
    await expect(verifyWebhook(body, both, secret, { now })).resolves.toMatchObject({
      known: true,
    });
    await expect(verifyWebhook(body, headers, [secret, previous], { now })).resolves.toMatchObject({
      known: true,
    });
    await expect(
      verifyWebhook(body, headers, [secret, newSecret()], { now }),
    ).rejects.toMatchObject({
      code: 'webhook_signature_mismatch',
    });
  });

  it('accepts a URL-safe base64 secret', async () => {
    const key = randomBytes(32);
    const id = 'evt_1';
    const ts = String(NOW / 1000);
    const sig = toBase64(await hmacSha256(new Uint8Array(key), utf8(`${id}.${ts}.${body}`)));
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': ts,
      'webhook-signature': `v1,${sig}`,
      'x-service-event': 'deposit.confirmed',
    };
    await expect(
      verifyWebhook(body, headers, `whsec_${key.toString('base64url')}`, { now }),
    ).resolves.toMatchObject({ known: true });
  });

  it('signs exactly as standardwebhooks verifies', async () => {
    const id = 'evt_2';
    const at = Math.floor(Date.now() / 1000);
    const key = Buffer.from(secret.slice(6), 'base64');
    const sig = toBase64(await hmacSha256(new Uint8Array(key), utf8(`${id}.${at}.${body}`)));
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(at),
      'webhook-signature': `v1,${sig}`,
    };
    expect(new Webhook(secret).verify(body, headers)).toEqual(deposit);
  });

  it('returns an event type it does not know as unknown, with its data', async () => {
    const data = { slug: 'x', something: 'new' };
    const raw = JSON.stringify(data);
    const event = await verifyWebhook(raw, delivery(secret, raw, 'product.renamed'), secret, {
      now,
    });
    expect(event).toMatchObject({ known: false, type: 'product.renamed', data });
  });

  it('refuses a signed body that is not JSON', async () => {
    await expect(
      verifyWebhook('not json', delivery(secret, 'not json'), secret, { now }),
    ).rejects.toMatchObject({
      code: 'webhook_invalid_payload',
    });
  });
});
