/** The baseline of `npm run bench:api`: a bare Fastify route returning constant JSON, nothing else. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { success: true, data: { status: 'ok' } };
app.get('/bare', async () => body);
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`bare listening on ${url}\n`);
process.on('SIGTERM', () => {
  app.close().then(() => process.exit(0));
});
