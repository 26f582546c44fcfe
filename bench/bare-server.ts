/**
 * The baselines of `npm run bench:api`: bare Fastify routes returning constant JSON, nothing else.
 * `/bare` is the spec's baseline (a small body); `/bare-bytes/<i>` returns the bytes of the i-th
 * file BARE_BODY_FILES names (the bench stores real answers of the list endpoints there), so a
 * large endpoint can also be compared with a route that sends as many bytes and does nothing else.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { success: true, data: { status: 'ok' } };
app.get('/bare', async () => body);
const files = process.env.BARE_BODY_FILES?.split(path.delimiter) ?? [];
for (const [i, file] of files.entries()) {
  const bytes = readFileSync(file);
  app.get(`/bare-bytes/${i}`, (_req, reply) => {
    reply.type('application/json; charset=utf-8').send(bytes);
  });
}
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`bare listening on ${url}\n`);
process.on('SIGTERM', () => {
  app.close().then(() => process.exit(0));
});
