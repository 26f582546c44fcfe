/**
 * A loopback TCP proxy the test owns, in front of PostgreSQL, Redis or a JSON-RPC node: a real
 * failure injector. `down` refuses connections (open ones are cut), `frozen` accepts and holds
 * them but passes nothing either way (a hung server), `drop` cuts open connections (a backend
 * killed, a network blip) while new ones still work. `silent` is a black hole: every byte of the
 * connections open or accepted meanwhile is swallowed, a FIN included, and those connections stay
 * dead after the proxy is `up` again (a peer lost behind a NAT or a load balancer); only new
 * connections work then.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type ProxyMode = 'up' | 'down' | 'frozen' | 'silent';

export interface TcpProxy {
  port: number;
  mode(): ProxyMode;
  setMode(mode: ProxyMode): Promise<void>;
  /** Cuts every open connection now; returns how many. */
  dropAll(): number;
  /** Cuts one open connection at random; returns whether there was one. */
  dropRandom(random?: () => number): boolean;
  /** Connections open now. */
  openCount(): number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
  /** Swallowed by `silent`: passes nothing, ever again. */
  dead?: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: ProxyMode = 'up';
  const pairs = new Set<Pair>();
  const cut = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.destroy();
    pair.upstream?.destroy();
  };
  const onClient = (client: Socket) => {
    const pair: Pair = { client, upstream: undefined, held: { toUpstream: [], toClient: [] } };
    pairs.add(pair);
    if (mode === 'silent') pair.dead = true;
    // Half-open sockets (allowHalfOpen): a FIN is passed on by hand, or swallowed when dead.
    client.on('end', () => {
      if (!pair.dead) pair.upstream?.end();
    });
    client.on('error', () => cut(pair));
    client.on('close', () => cut(pair));
    const connect = () => {
      const upstream = createConnection(target);
      pair.upstream = upstream;
      upstream.on('error', () => cut(pair));
      upstream.on('close', () => cut(pair));
      upstream.on('end', () => {
        if (!pair.dead) client.end();
      });
      upstream.on('data', (d) => {
        if (pair.dead) return;
        if (mode === 'frozen') pair.held.toClient.push(d);
        else client.write(d);
      });
      for (const d of pair.held.toUpstream.splice(0)) upstream.write(d);
    };
    client.on('data', (d) => {
      if (pair.dead) return;
      if (mode === 'frozen' || !pair.upstream) pair.held.toUpstream.push(d);
      else pair.upstream.write(d);
    });
    if (mode === 'up' || mode === 'silent') connect();
    else (pair as Pair & { connect?: () => void }).connect = connect;
  };
  const listen = () => createServer({ allowHalfOpen: true }, onClient);
  let server: Server = listen();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    port,
    mode: () => mode,
    async setMode(next) {
      if (next === mode) return;
      const previous = mode;
      mode = next;
      if (next === 'silent') {
        for (const p of pairs) p.dead = true;
        return;
      }
      if (next === 'down') {
        for (const p of [...pairs]) cut(p);
        await new Promise<void>((r) => server.close(() => r()));
        return;
      }
      if (previous === 'down') {
        server = listen();
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, '127.0.0.1', () => resolve());
        });
      }
      if (next === 'up') {
        // Connections accepted while frozen are cut (their requests timed out long ago); held
        // bytes of the others flow again.
        for (const p of [...pairs]) {
          if (p.dead) continue;
          const pending = (p as Pair & { connect?: () => void }).connect;
          if (pending || !p.upstream) {
            cut(p);
            continue;
          }
          for (const d of p.held.toUpstream.splice(0)) p.upstream.write(d);
          for (const d of p.held.toClient.splice(0)) p.client.write(d);
        }
      }
    },
    dropAll() {
      const n = pairs.size;
      for (const p of [...pairs]) cut(p);
      return n;
    },
    dropRandom(random = Math.random) {
      const list = [...pairs];
      if (list.length === 0) return false;
      cut(list[Math.floor(random() * list.length)]!);
      return true;
    },
    openCount: () => pairs.size,
    async close() {
      for (const p of [...pairs]) cut(p);
      if (mode !== 'down') await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
