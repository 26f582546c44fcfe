/**
 * The inbound endpoint's bare baseline for `npm run bench:webhooks` (issue #33 item 6): a Fastify
 * route in its own process that does what any signed-webhook endpoint must — read the JSON body,
 * verify its HMAC-SHA256 in constant time, answer 200 — and nothing else (no key lookup, no rate
 * limit, no idempotency store, no database). The service's endpoint is measured against it in the
 * same run, with the same body, signature and load. Prints `listening <port>` on stdout.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import Fastify from 'fastify';

const secret = process.env.BARE_SECRET ?? '';
const app = Fastify({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) =>
  done(null, body),
);
app.post('/api/partner/webhooks/inbound', async (req, reply) => {
  const body = req.body as Buffer;
  const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''), 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return reply.code(401).send({ success: false, code: 'invalid_signature', message: 'bad' });
  }
  JSON.parse(body.toString('utf8'));
  return reply.code(200).send({ success: true, data: { received: true } });
});
const address = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening ${address}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
