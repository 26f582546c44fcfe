/**
 * A JSON-RPC proxy in front of a real anvil that behaves like a hosted provider behind a load
 * balancer: each HTTP request is answered by one of two "nodes", the current one (anvil as it is)
 * or a lagging one that answers as if the chain ended `lag` blocks ago (no block, no state and no
 * log past its head, and eth_getLogs over a range past its head quietly answers what it has). It can
 * also cap eth_getLogs spans and result counts with real providers' messages, answer 429 and 5xx,
 * and add latency. It counts every JSON-RPC call it receives (each element of a batch counts, as
 * providers bill them).
 *
 * Only the lagging node is an imitation: anvil has one head. Everything the current node answers is
 * anvil's own answer.
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Hex } from 'viem';

export interface ProviderBehaviour {
  /** Blocks the lagging node is behind (0: no lagging node). */
  lagBlocks: number;
  /** Share of HTTP requests the lagging node answers. */
  lagShare: number;
  /** eth_getLogs spans above this are refused (null: none). */
  maxLogSpan: number | null;
  /** The refusal's message for a span over the cap ({max} is replaced by the cap). */
  spanMessage: string;
  /** eth_getLogs answers with more logs than this are refused (null: none). */
  maxLogResults: number | null;
  resultsMessage: string;
  /** Share of HTTP requests answered 429 Too Many Requests. */
  rateLimitShare: number;
  /** Share of HTTP requests answered 502/503. */
  serverErrorShare: number;
  /** Added to every answer, in ms. */
  latencyMs: number;
  /**
   * HTTP batches longer than this are refused as a whole, one `Invalid request` with a null id, as
   * anvil refuses a body over its size limit and providers a batch over their length cap (null: none).
   */
  maxBatch: number | null;
  /** Methods this provider does not offer, refused as providers do (-32601). */
  unsupportedMethods: readonly string[];
}

const DEFAULTS: ProviderBehaviour = {
  lagBlocks: 0,
  lagShare: 0,
  maxLogSpan: null,
  spanMessage: 'eth_getLogs is limited to a {max} range',
  maxLogResults: null,
  resultsMessage: 'query returned more than {max} results',
  rateLimitShare: 0,
  serverErrorShare: 0,
  latencyMs: 0,
  maxBatch: null,
  unsupportedMethods: [],
};

export interface ProviderProxy {
  url: string;
  set(behaviour: Partial<ProviderBehaviour>): void;
  /** JSON-RPC calls received, by method (batch elements counted one by one). */
  readonly calls: Map<string, number>;
  totalCalls(): number;
  resetCounts(): void;
  /** What the imitation did: answers by the lagging node, logs it left out, refusals sent. */
  readonly stats: {
    laggingAnswers: number;
    logsWithheld: number;
    spanRefusals: number;
    resultRefusals: number;
    rateLimited: number;
    serverErrors: number;
    batchRefusals: number;
  };
  close(): Promise<void>;
}

interface Call {
  jsonrpc?: string;
  id: number | string | null;
  method: string;
  params?: unknown[];
}

interface Answer {
  jsonrpc: '2.0';
  id: number | string | null;
  result?: unknown;
  error?: { code: number; message: string };
}

/** A small seeded PRNG (mulberry32): the same seed, the same sequence of node choices. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (n: bigint): Hex => `0x${n.toString(16)}`;
const BLOCK_TAGS = new Set(['latest', 'pending', 'safe', 'finalized']);

export async function startProviderProxy(
  target: string,
  options: { seed?: number } = {},
): Promise<ProviderProxy> {
  let b: ProviderBehaviour = { ...DEFAULTS };
  const random = prng(options.seed ?? 1);
  const calls = new Map<string, number>();
  const stats = {
    laggingAnswers: 0,
    logsWithheld: 0,
    spanRefusals: 0,
    resultRefusals: 0,
    rateLimited: 0,
    serverErrors: 0,
    batchRefusals: 0,
  };
  const sockets = new Set<Socket>();

  async function upstream(list: Call[]): Promise<Answer[]> {
    if (list.length === 0) return [];
    const res = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(list.map((c, i) => ({ ...c, jsonrpc: '2.0', id: i }))),
    });
    const got = (await res.json()) as Answer[];
    const byId = new Map(got.map((g) => [g.id, g]));
    return list.map((c, i) => ({ ...(byId.get(i) as Answer), id: c.id }));
  }
  const one = async (method: string, params: unknown[]): Promise<unknown> => {
    const [a] = await upstream([{ id: 0, method, params }]);
    if (a?.error) throw new Error(a.error.message);
    return a?.result;
  };

  /** The lagging node's view of one call: a rewritten call, or its own answer. */
  async function lagging(call: Call, lagHead: bigint): Promise<Call | Answer> {
    const p = call.params ?? [];
    const err = (message: string): Answer => ({
      jsonrpc: '2.0',
      id: call.id,
      error: { code: -32000, message },
    });
    const ok = (result: unknown): Answer => ({ jsonrpc: '2.0', id: call.id, result });
    const beyond = (tag: unknown) =>
      typeof tag === 'string' && tag.startsWith('0x') && BigInt(tag) > lagHead;
    switch (call.method) {
      case 'eth_blockNumber':
        return ok(hex(lagHead));
      case 'eth_getBlockByNumber': {
        if (p[0] === 'latest' || p[0] === 'pending')
          return { ...call, params: [hex(lagHead), p[1]] };
        if (beyond(p[0])) return ok(null);
        return call;
      }
      case 'eth_getBlockByHash': {
        const block = (await one('eth_getBlockByHash', [p[0], false])) as { number: Hex } | null;
        if (block && BigInt(block.number) > lagHead) return ok(null);
        return call;
      }
      case 'eth_getTransactionReceipt': {
        const r = (await one('eth_getTransactionReceipt', p)) as { blockNumber: Hex } | null;
        if (r && BigInt(r.blockNumber) > lagHead) return ok(null);
        return call;
      }
      case 'eth_getLogs': {
        const f = (p[0] ?? {}) as { fromBlock?: string; toBlock?: string; blockHash?: Hex };
        if (f.blockHash) {
          const block = (await one('eth_getBlockByHash', [f.blockHash, false])) as {
            number: Hex;
          } | null;
          if (!block || BigInt(block.number) > lagHead) return err('unknown block');
          return call;
        }
        const from = f.fromBlock && !BLOCK_TAGS.has(f.fromBlock) ? BigInt(f.fromBlock) : lagHead;
        const to = f.toBlock && !BLOCK_TAGS.has(f.toBlock) ? BigInt(f.toBlock) : lagHead;
        if (to <= lagHead) return call;
        // The silent answer: what the node has, nothing past its head, no error.
        const [full] = await upstream([call]);
        const kept =
          from > lagHead
            ? []
            : ((full?.result as { blockNumber: Hex }[] | undefined) ?? []).filter(
                (l) => BigInt(l.blockNumber) <= lagHead,
              );
        const all = (full?.result as unknown[] | undefined)?.length ?? 0;
        stats.logsWithheld += all - kept.length;
        return ok(kept);
      }
      case 'eth_call':
      case 'eth_getBalance':
      case 'eth_getTransactionCount':
      case 'eth_getCode':
      case 'eth_getStorageAt': {
        const i = call.method === 'eth_call' ? 1 : p.length - 1;
        const tag = p[i];
        if (tag === 'latest' || tag === undefined) {
          const q = [...p];
          q[i] = hex(lagHead);
          return { ...call, params: q };
        }
        if (beyond(tag)) return err('header not found');
        if (tag && typeof tag === 'object' && 'blockHash' in tag) {
          const block = (await one('eth_getBlockByHash', [
            (tag as { blockHash: Hex }).blockHash,
            false,
          ])) as { number: Hex } | null;
          if (!block || BigInt(block.number) > lagHead) return err('header not found');
        }
        return call;
      }
      default:
        return call;
    }
  }

  /** Refusals a capped provider gives to eth_getLogs, on either node. */
  function capped(call: Call, answer: Answer): Answer {
    if (b.unsupportedMethods.includes(call.method)) {
      return {
        jsonrpc: '2.0',
        id: call.id,
        error: {
          code: -32601,
          message: `the method ${call.method} does not exist/is not available`,
        },
      };
    }
    if (call.method !== 'eth_getLogs' || answer.error) return answer;
    const f = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string };
    if (
      b.maxLogSpan !== null &&
      f.fromBlock?.startsWith('0x') &&
      f.toBlock?.startsWith('0x') &&
      BigInt(f.toBlock) - BigInt(f.fromBlock) + 1n > BigInt(b.maxLogSpan)
    ) {
      stats.spanRefusals++;
      return {
        jsonrpc: '2.0',
        id: call.id,
        error: {
          code: -32602,
          message: b.spanMessage.replace('{max}', b.maxLogSpan.toLocaleString('en-US')),
        },
      };
    }
    const n = Array.isArray(answer.result) ? answer.result.length : 0;
    if (b.maxLogResults !== null && n > b.maxLogResults) {
      stats.resultRefusals++;
      return {
        jsonrpc: '2.0',
        id: call.id,
        error: {
          code: -32005,
          message: b.resultsMessage.replace('{max}', String(b.maxLogResults)),
        },
      };
    }
    return answer;
  }

  async function handle(body: string): Promise<{ status: number; text: string }> {
    const parsed = JSON.parse(body) as Call | Call[];
    const list = Array.isArray(parsed) ? parsed : [parsed];
    for (const c of list) calls.set(c.method, (calls.get(c.method) ?? 0) + 1);
    if (b.latencyMs > 0) await new Promise((r) => setTimeout(r, b.latencyMs));
    if (b.maxBatch !== null && list.length > b.maxBatch) {
      stats.batchRefusals++;
      return {
        status: 200,
        text: JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: 'Invalid request' },
        }),
      };
    }
    const roll = random();
    if (roll < b.rateLimitShare) {
      stats.rateLimited++;
      return {
        status: 429,
        text: JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: 429,
            message: 'Too Many Requests: exceeded its compute units per second capacity',
          },
        }),
      };
    }
    if (roll < b.rateLimitShare + b.serverErrorShare) {
      stats.serverErrors++;
      return { status: random() < 0.5 ? 502 : 503, text: 'upstream connect error' };
    }
    const lag = b.lagBlocks > 0 && random() < b.lagShare;
    let answers: Answer[];
    if (lag) {
      stats.laggingAnswers++;
      const head = BigInt((await one('eth_blockNumber', [])) as Hex);
      const lagHead = head > BigInt(b.lagBlocks) ? head - BigInt(b.lagBlocks) : 0n;
      const views = await Promise.all(list.map((c) => lagging(c, lagHead)));
      const forward = views.filter((v): v is Call => 'method' in v);
      const got = await upstream(forward);
      let k = 0;
      answers = views.map((v) => ('method' in v ? got[k++]! : v));
    } else {
      answers = await upstream(list);
    }
    answers = answers.map((a, i) => capped(list[i]!, a));
    return { status: 200, text: JSON.stringify(Array.isArray(parsed) ? answers : answers[0]) };
  }

  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      handle(body).then(
        ({ status, text }) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(text);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    set(behaviour) {
      b = { ...b, ...behaviour };
    },
    calls,
    totalCalls: () => [...calls.values()].reduce((a, n) => a + n, 0),
    resetCounts() {
      calls.clear();
    },
    stats,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
