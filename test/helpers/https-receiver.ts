/**
 * A real HTTPS webhook receiver for tests: node:https with the test leaf certificate (localhost,
 * 127.0.0.1, 127.0.0.2, ::1, *.webhooks.test) signed by the test CA in test/fixtures/tls. It records
 * every request and answers with a programmable handler (200 by default).
 */
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TLS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'tls');

/** The test CA, to give the sender as extraCa. */
export function testCaPem(): string {
  return readFileSync(path.join(TLS_DIR, 'ca.pem'), 'utf8');
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
}

export interface ReceiverResponse {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
}

export type ReceiverHandler = (req: {
  headers: IncomingHttpHeaders;
  body: Buffer;
}) => ReceiverResponse | Promise<ReceiverResponse>;

export interface HttpsReceiver {
  /** https://<host>:<port> ; `localhost` unless another host was given. */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far (pooling shows as few connections for many requests). */
  connectionCount(): number;
  /** Connections open now. */
  openConnections(): Promise<number>;
  close(): Promise<void>;
}

export async function startHttpsReceiver(options?: {
  /** Interface to bind and name in `url`; default localhost bound on 127.0.0.1. */
  host?: string;
  /** Port to bind; default a free one. */
  port?: number;
  handler?: ReceiverHandler;
}): Promise<HttpsReceiver> {
  const handler: ReceiverHandler = options?.handler ?? (() => ({ status: 200, body: 'ok' }));
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer(
    {
      key: readFileSync(path.join(TLS_DIR, 'localhost-key.pem')),
      cert: readFileSync(path.join(TLS_DIR, 'localhost-cert.pem')),
      keepAliveTimeout: 30_000,
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        requests.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body,
          receivedAt: Date.now(),
        });
        Promise.resolve(handler({ headers: req.headers, body })).then(
          (answer) => {
            const reply = () => {
              if (res.destroyed) return;
              res.writeHead(answer.status, answer.headers);
              res.end(answer.body ?? '');
            };
            if (answer.delayMs) {
              const t = setTimeout(() => {
                timers.delete(t);
                reply();
              }, answer.delayMs);
              timers.add(t);
            } else reply();
          },
          () => {
            res.writeHead(500);
            res.end('handler failed');
          },
        );
      });
    },
  );
  server.on('connection', () => {
    connections++;
  });
  const host = options?.host ?? 'localhost';
  const bind = host === 'localhost' ? '127.0.0.1' : host.replace(/^\[|\]$/g, '');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options?.port ?? 0, bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = bind.includes(':') ? `[${bind}]` : host;
  return {
    url: `https://${urlHost}:${port}`,
    port,
    requests,
    connectionCount: () => connections,
    openConnections: () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
      ),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
