/**
 * What the SDK's runtime suites run in each runtime (Node, Deno, Bun, Chromium): the built package,
 * given as `sdk`, verifies a webhook signed by the service's own signer, refuses a tampered one,
 * signs an inbound body, and calls the service (health, products, a typed 404 with its request
 * id, an inbound event). Web APIs only (fetch, Web Crypto, TextEncoder), no Node module, so the
 * same code runs everywhere; the test compares the results it returns with what the service and
 * its signer say.
 *
 * @param {typeof import('../../src/index.ts')} sdk
 * @param {{
 *   baseUrl: string, apiKey: string, inboundSecret: string, idempotencyKey: string,
 *   webhook: { body: string, headers: Record<string, string>, secrets: string[] },
 *   inboundBody: string,
 * }} input
 */
export async function exercise(sdk, input) {
  const bytes = new TextEncoder().encode(input.webhook.body);
  const event = await sdk.verifyWebhook(bytes, input.webhook.headers, input.webhook.secrets);
  const tampered = new TextEncoder().encode(input.webhook.body.replace('}', ',"x":1}'));
  const tamperedError = await sdk
    .verifyWebhook(tampered, input.webhook.headers, input.webhook.secrets)
    .then(
      () => 'accepted',
      (e) => (e instanceof sdk.WebhookVerificationError ? e.code : String(e)),
    );
  const inboundSignature = await sdk.signInbound(input.inboundBody, input.inboundSecret);

  // One attempt: a failure here is the runtime's, not something a retry should hide.
  const client = new sdk.PartnerYieldClient({
    baseUrl: input.baseUrl,
    apiKey: input.apiKey,
    inboundSecret: input.inboundSecret,
    timeoutMs: 60_000,
    retry: { maxAttempts: 1 },
  });
  const health = await client.health();
  const products = await client.listProducts();
  const notFound = await client.getProduct('no-such-product').then(
    () => undefined,
    (e) =>
      e instanceof sdk.ApiError
        ? { status: e.status, code: e.code, hasRequestId: typeof e.requestId === 'string' }
        : { error: String(e) },
  );
  const ack = await client.sendInbound({
    type: 'ping',
    data: { from: 'runtime-suite' },
    idempotencyKey: input.idempotencyKey,
    // A key of the caller's comes with the time kept beside it (a resend is then the same body).
    occurred_at: new Date(),
  });
  return {
    event: { type: event.type, known: event.known, id: event.id, data: event.data },
    tamperedError,
    inboundSignature,
    health: health.status,
    products: products.map((p) => p.slug),
    notFound,
    ack,
  };
}
