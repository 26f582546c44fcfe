/**
 * The baselines of `npm run bench:api`: bare Fastify routes returning constant JSON, nothing else.
 * `/bare` is the spec's baseline (a small body); `/bare-bytes` returns the bytes of the file
 * BARE_BODY_FILE names (the bench stores a real fee-stats answer there), so a large endpoint can
 * also be compared with a route that sends the same number of bytes and does nothing else.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { success: true, data: { status: 'ok' } };
app.get('/bare', async () => body);
const bytesFile = process.env.BARE_BODY_FILE;
if (bytesFile) {
  const bytes = readFileSync(bytesFile);
  app.get('/bare-bytes', (_req, reply) => {
    reply.type('application/json; charset=utf-8').send(bytes);
  });
}
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`bare listening on ${url}\n`);
process.on('SIGTERM', () => {
  app.close().then(() => process.exit(0));
});
