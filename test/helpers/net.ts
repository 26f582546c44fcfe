/** Network helpers for tests: loopback only. */
import { createServer } from 'node:net';

/** A loopback port with nothing listening: a real "server down" for connection-failure tests. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
