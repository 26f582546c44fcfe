/**
 * The `testing` entry point, used as a partner's test suite would: a webhook signed by
 * signTestWebhook verifies with verifyWebhook and with the `standardwebhooks` library, its service
 * signature is the HMAC of the body; the mock API answers the client's reads from its fixtures,
 * refuses a missing key and an unknown product, and plays scripted failures the retry policy sees.
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, PartnerYieldClient, verifyWebhook } from '../src/index.ts';
import { type MockApi, signTestWebhook, startMockApi } from '../src/testing/index.ts';

const SECRET = `whsec_${Buffer.from('a test destination secret, 32 b!').toString('base64')}`;

describe('signTestWebhook', () => {
  it('signs a delivery that verifyWebhook and the standardwebhooks library both accept', async () => {
    const payload = { slug: 'acme-usdc-core', amount: '250', tx_hash: `0x${'ab'.repeat(32)}` };
    const signed = await signTestWebhook({
      secret: SECRET,
      type: 'deposit.confirmed',
      payload,
      id: 'evt_test_1',
    });
    const event = await verifyWebhook(signed.body, signed.headers, SECRET);
    expect(event).toMatchObject({
      id: 'evt_test_1',
      type: 'deposit.confirmed',
      known: true,
      data: payload,
    });
    expect(new Webhook(SECRET.slice(6)).verify(signed.body, signed.headers)).toEqual(payload);
    expect(signed.headers['x-service-signature']).toBe(
      createHmac('sha256', SECRET).update(signed.body).digest('hex'),
    );
    // Another secret does not verify it.
    const other = `whsec_${Buffer.from('another destination secret, 32b!').toString('base64')}`;
    await expect(verifyWebhook(signed.body, signed.headers, other)).rejects.toMatchObject({
      code: 'webhook_signature_mismatch',
    });
  });
});

describe('startMockApi', () => {
  let mock: MockApi;
  const waits: number[] = [];
  let client: PartnerYieldClient;
  beforeAll(async () => {
    mock = await startMockApi({ apiKey: 'svc_test_mock' });
    client = new PartnerYieldClient({
      baseUrl: mock.url,
      apiKey: 'svc_test_mock',
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0,
    });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('answers the reads from its fixtures, in the envelope the client expects', async () => {
    const products = await client.listProducts();
    expect(products.map((p) => p.slug)).toEqual(['acme-usdc-core']);
    const slug = products[0]!.slug;
    expect((await client.getApyHistory(slug, { days: 7 })).length).toBe(7);
    expect((await client.getFeeStats(slug)).length).toBe(30);
    // The API's formulas: a year at the APY, a month at (1 + APY)^(1/12) − 1 (1.0527^(1/12) =
    // 1.004289029...), toward zero to the asset's 6 decimals.
    expect(await client.calculateYield(slug, { amount: '1000' })).toEqual({
      principal: '1000',
      net_apy_for_user: '0.052700',
      apy_basis: 'engine',
      apy_window: '1d',
      annual_yield: '52.700000',
      monthly_yield: '4.289029',
    });
    expect(
      (await client.calculateYield(slug, { amount: '1000', apy_window: '7d' })).net_apy_for_user,
    ).toBe('0.052600');
    expect(
      await client.getPosition(slug, '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
    ).toMatchObject({ shares: '1000.000000000000', assets: '1052.700000' });
    expect((await client.getProductHealth(slug)).underlying_ok).toBe(true);
    expect((await client.getFeeSchedule(slug)).scheduled_change).toBeNull();
  });

  it('refuses a wrong key and an unknown product as the service does', async () => {
    const stranger = new PartnerYieldClient({ baseUrl: mock.url, apiKey: 'svc_test_other' });
    await expect(stranger.listProducts()).rejects.toMatchObject({
      status: 401,
      code: 'invalid_api_key',
    });
    const err = await client.getProduct('no-such-product').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('plays scripted failures: a 503 with Retry-After is retried after it, then the fixture answers', async () => {
    waits.length = 0;
    mock.failNext('listProducts', { status: 503, code: 'service_unavailable', retryAfter: '2' });
    expect((await client.listProducts()).length).toBe(1);
    expect(waits).toEqual([2000]);
    mock.failNext('getProduct', { status: 503, code: 'product_paused' });
    await expect(client.getProduct('acme-usdc-core')).rejects.toMatchObject({
      code: 'product_paused',
    });
    expect(mock.requests.at(-1)?.headers['user-agent']).toMatch(/^partner-yield-sdk\//);
  });
});
