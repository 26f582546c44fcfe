/**
 * The benchmark's partner receiver, in its own process so it does not share the dispatcher's event
 * loop: an HTTPS server with the test certificate that answers 200 at once and records, per event
 * (the payload's `n`), when it arrived. The parent asks over IPC for the count and the receipts.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const tls = new URL('../test/fixtures/tls/', import.meta.url);
const receipts: Array<[number, number]> = [];
const server = createServer(
  {
    key: readFileSync(new URL('localhost-key.pem', tls)),
    cert: readFileSync(new URL('localhost-cert.pem', tls)),
    keepAliveTimeout: 30_000,
  },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const n = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { n: number }).n;
      receipts.push([n, at]);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  },
);
server.listen(0, () => {
  const address = server.address();
  process.send?.({
    type: 'listening',
    port: typeof address === 'object' && address ? address.port : 0,
  });
});
process.on('message', (m: { type: string }) => {
  if (m.type === 'count') process.send?.({ type: 'count', count: receipts.length });
  if (m.type === 'receipts') process.send?.({ type: 'receipts', receipts: receipts.splice(0) });
  if (m.type === 'exit') server.close(() => process.exit(0));
});
