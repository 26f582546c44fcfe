/**
 * A tiny real DNS server over UDP on 127.0.0.1 for tests: A and AAAA answers are programmable per
 * query, every query is recorded. Answers are hand-encoded (RFC 1035 §4.1); anything but A/AAAA gets
 * an empty NOERROR answer, and an answer of `null` is NXDOMAIN.
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import type { AddressInfo } from 'node:net';
import ipaddr from 'ipaddr.js';

export type QueryType = 'A' | 'AAAA' | 'OTHER';
export interface DnsQuery {
  name: string;
  type: QueryType;
  at: number;
}
/** `queryCount` counts earlier queries of the same name and type, so the first one sees 0. */
export type Answer = (name: string, type: QueryType, queryCount: number) => string[] | null;

export interface DnsServer {
  port: number;
  queries: DnsQuery[];
  /** Replace the answering function. */
  setAnswer(answer: Answer): void;
  close(): Promise<void>;
}

const TYPES: Record<number, QueryType> = { 1: 'A', 28: 'AAAA' };

export async function startDnsServer(answer: Answer = () => []): Promise<DnsServer> {
  let answerFn = answer;
  const queries: DnsQuery[] = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    // Question: labels from offset 12, then QTYPE and QCLASS.
    let at = 12;
    const labels: string[] = [];
    while (at < msg.length && msg[at] !== 0) {
      const len = msg[at]!;
      labels.push(msg.subarray(at + 1, at + 1 + len).toString('ascii'));
      at += 1 + len;
    }
    const questionEnd = at + 5;
    if (questionEnd > msg.length) return;
    const qtype = msg.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    const type = TYPES[qtype] ?? 'OTHER';
    const count = queries.filter((q) => q.name === name && q.type === type).length;
    queries.push({ name, type, at: Date.now() });
    const addresses = answerFn(name, type, count);
    const records = (addresses ?? [])
      .map((a) => ipaddr.parse(a))
      .filter((a) => (type === 'A' ? a.kind() === 'ipv4' : type === 'AAAA' && a.kind() === 'ipv6'))
      .map((a) => {
        const rdata = Buffer.from(a.toByteArray());
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question's name
        rr.writeUInt16BE(qtype, 2);
        rr.writeUInt16BE(1, 4); // class IN
        rr.writeUInt32BE(0, 6); // TTL 0: never cached
        rr.writeUInt16BE(rdata.length, 10);
        return Buffer.concat([rr, rdata]);
      });
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    const rd = msg[2]! & 0x01;
    header[2] = 0x80 | 0x04 | rd; // QR, AA, RD as asked
    header[3] = 0x80 | (addresses === null ? 3 : 0); // RA; NXDOMAIN or NOERROR
    header.writeUInt16BE(1, 4); // QDCOUNT
    header.writeUInt16BE(records.length, 6); // ANCOUNT
    const reply = Buffer.concat([header, msg.subarray(12, questionEnd), ...records]);
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: (socket.address() as AddressInfo).port,
    queries,
    setAnswer(next) {
      answerFn = next;
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** A `resolve` for the webhook sender that asks only this server (A and AAAA, merged). */
export function resolverFor(
  server: DnsServer,
): (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>> {
  const resolver = new dns.promises.Resolver({ timeout: 2_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${server.port}`]);
  const none = (err: NodeJS.ErrnoException): string[] => {
    if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [];
    throw err;
  };
  return async (hostname) => {
    const [v4, v6] = await Promise.all([
      resolver.resolve4(hostname).catch(none),
      resolver.resolve6(hostname).catch(none),
    ]);
    const out = [
      ...v4.map((address) => ({ address, family: 4 as const })),
      ...v6.map((address) => ({ address, family: 6 as const })),
    ];
    if (out.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`queryA ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      throw err;
    }
    return out;
  };
}
