/**
 * The partner's side of a rehearsal: an HTTPS webhook receiver on loopback with a certificate made
 * for the run (a self-signed one for localhost and 127.0.0.1, by the `openssl` command line tool),
 * which the service trusts through WEBHOOK_CA_FILE exactly as it would trust a private CA. It
 * records every request and answers 200.
 */
import { execFile } from 'node:child_process';
import { chmodSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
}

export interface WebhookReceiver {
  /** https://localhost:<port>/webhooks */
  url: string;
  /** The certificate, PEM: the CA file the service is given. */
  caFile: string;
  received: ReceivedWebhook[];
  close(): Promise<void>;
}

/**
 * A self-signed certificate (P-256, one day) for localhost and 127.0.0.1 in `dir`; the key is
 * readable by its owner only.
 */
export async function makeCertificate(dir: string): Promise<{ keyFile: string; certFile: string }> {
  const keyFile = path.join(dir, 'receiver-key.pem');
  const certFile = path.join(dir, 'receiver-cert.pem');
  try {
    await run(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
      ],
      { timeout: 20_000 },
    );
  } catch (err) {
    const why =
      (err as { code?: unknown }).code === 'ENOENT' ? 'openssl is not installed' : 'openssl failed';
    throw new Error(
      `cannot make the receiver's certificate: ${why} (install the openssl package, e.g. apt-get install openssl)`,
    );
  }
  chmodSync(keyFile, 0o600);
  return { keyFile, certFile };
}

export async function startWebhookReceiver(dir: string): Promise<WebhookReceiver> {
  const { keyFile, certFile } = await makeCertificate(dir);
  const received: ReceivedWebhook[] = [];
  const server = createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certFile) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          headers: req.headers,
          body: Buffer.concat(chunks),
          receivedAt: Date.now(),
        });
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}/webhooks`,
    caFile: certFile,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
