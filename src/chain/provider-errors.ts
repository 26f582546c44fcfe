/**
 * What a JSON-RPC provider's refusal means, read from its status, code and message: providers say
 * "ask for fewer blocks", "your answer would be too big" and "slow down" in their own words, and
 * often under the same code (-32005 is a result cap at one provider and a rate limit at another).
 * Each kind calls for a different answer:
 *
 * - `range`: the span of blocks is over the provider's cap. Ask for smaller spans; when the message
 *   names the cap (`maxBlocks`) or a range that works, ask for that at once instead of halving.
 * - `results`: the answer would hold too many logs or bytes. Halve the span.
 * - `rate_limit`: too many requests for the plan. Back off and ask again later; a smaller range would
 *   only cost more requests.
 * - `unavailable`: the provider (or every node behind it) is down for now. Back off.
 *
 * The messages come from real providers (the table in test/chain/provider-errors.test.ts holds one
 * of each, with its source). An unknown refusal is `undefined`: the caller's usual retry applies.
 */
import { errorMessages } from './error-messages.ts';

export type ProviderRefusal =
  | { kind: 'range'; maxBlocks?: bigint }
  | { kind: 'results'; maxBlocks?: bigint }
  | { kind: 'rate_limit' }
  | { kind: 'unavailable' };

const int = (s: string): bigint => BigInt(s.replace(/[,._]/g, ''));

/** A range the provider suggests, `[0x…, 0x…]`, as a span in blocks. */
function suggestedSpan(text: string): bigint | undefined {
  const m =
    /(?:block range should work|Try with this block range):?\s*\[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]/i.exec(
      text,
    );
  if (!m) return undefined;
  const span = BigInt(m[2]!) - BigInt(m[1]!) + 1n;
  return span > 0n ? span : undefined;
}

/** Messages that name the block cap: the number in the first group is the most blocks allowed. */
const RANGE_WITH_CAP: readonly RegExp[] = [
  /limited to an? ([\d,.]+)(?: block)? range/i, // QuickNode, 1RPC, Blast: "eth_getLogs is limited to a 10,000 range"
  /limited to ([\d,.]+) blocks?/i, // BlockPI
  /Maximum allowed number of requested blocks is ([\d,.]+)/i, // thirdweb
  /ranges over ([\d,.]+) blocks are not supported/i,
  /maximum is set to ([\d,.]+)/i, // Avalanche: "requested too many blocks from 0 to 5000, maximum is set to 2048"
  /Max range: ([\d,.]+)/i, // Cloudflare
  /please limit the query to at most ([\d,.]+) blocks/i, // Coinbase (Base)
  /maximum block range:? ([\d,.]+)/i, // PublicNode
  /query exceeds max block range ([\d,.]+)/i,
  /block range greater than ([\d,.]+) max/i,
  /block range exceeds ([\d,.]+)/i,
  /block range is too wide \(maximum ([\d,.]+)\)/i,
  /up to a ([\d,.]+) block range/i, // Aurora
  /exceeds the range allowed for your plan \(\d+ > (\d+)\)/i, // Blast (paid)
  /maximum \[from, to\] blocks distance: (\d+)/i, // Ankr
];

/** Messages that refuse the span without naming the cap. */
const RANGE_WITHOUT_CAP: readonly RegExp[] = [
  /block range (is )?too (large|wide|big)/i, // Base, OP Mainnet, Ankr
  /range (is )?too (large|wide|big)/i,
  /Block range limit exceeded/i, // Chainstack
  /too many blocks/i,
  /eth_getLogs range is too large/i,
  /exceed(s|ed)? (the )?max(imum)? block range/i,
];

/** Messages that refuse the size of the answer. */
const TOO_MANY_RESULTS: readonly RegExp[] = [
  /Log response size exceeded/i, // Alchemy (with a suggested range)
  /query returned more than [\d,.]+ results/i, // Infura, zkEVM (with a suggested range)
  /query exceeds max results/i, // LlamaRPC, Ankr
  /logs matched by query exceeds limit/i, // Arbitrum
  /backend response too large/i, // OP Mainnet
  /response size should not greater than/i, // 1RPC
  /too many (results|logs)/i,
  /more than [\d,.]+ (results|logs)/i,
  /response (size|is too)/i,
  // The HTTP client's own cap on a response body (viem: 10 MiB): a smaller range answers smaller.
  /body exceeded the size limit/i,
];

/** Messages that ask the caller to slow down (checked first: some share a code with range caps). */
const RATE_LIMITED: readonly RegExp[] = [
  /too many requests/i,
  /rate ?limit/i, // "rate limited", "rate limit exceeded", "ratelimit"
  /request rate exceeded/i, // Infura: "project ID request rate exceeded"
  /daily request count exceeded/i, // Infura
  /compute units per second/i, // Alchemy: "exceeded its compute units per second capacity"
  /exceeded .*(quota|credits|capacity)/i,
  /(quota|credits?) (exceeded|exhausted)/i,
  /throughput/i,
  /requests? per second/i,
  /request limit reached/i, // QuickNode (-32007): "N/second request limit reached"
];

const UNAVAILABLE: readonly RegExp[] = [
  /no backend is currently healthy/i, // Base
  /service (temporarily )?unavailable/i,
  /bad gateway/i,
  /gateway time-?out/i,
  /upstream (connect )?error/i,
];

/** The HTTP status a refusal came with, when it came over HTTP (viem's HttpRequestError). */
function httpStatus(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    const status = (e as { status?: unknown }).status;
    if (typeof status === 'number') return status;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The JSON-RPC error code along the cause chain. */
function rpcCode(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function classifyProviderError(err: unknown): ProviderRefusal | undefined {
  const text = errorMessages(err).join('\n');
  const status = httpStatus(err);
  const code = rpcCode(err);
  if (
    status === 429 ||
    code === 429 ||
    code === -32007 ||
    RATE_LIMITED.some((re) => re.test(text))
  ) {
    return { kind: 'rate_limit' };
  }
  const suggested = suggestedSpan(text);
  if (TOO_MANY_RESULTS.some((re) => re.test(text))) {
    return suggested ? { kind: 'results', maxBlocks: suggested } : { kind: 'results' };
  }
  for (const re of RANGE_WITH_CAP) {
    const m = re.exec(text);
    if (m) {
      const cap = int(m[1]!);
      return cap > 0n ? { kind: 'range', maxBlocks: cap } : { kind: 'range' };
    }
  }
  if (suggested) return { kind: 'range', maxBlocks: suggested };
  if (RANGE_WITHOUT_CAP.some((re) => re.test(text))) return { kind: 'range' };
  if (UNAVAILABLE.some((re) => re.test(text))) return { kind: 'unavailable' };
  if (status !== undefined && status >= 500) return { kind: 'unavailable' };
  // -32005 is EIP-1474's "limit exceeded": a rate limit at some providers, a result cap at others.
  // Named causes were matched above; a bare one is taken as a rate limit (backing off costs a
  // little time; shrinking a range that was never the problem costs requests on every tick).
  if (code === -32005) return { kind: 'rate_limit' };
  return undefined;
}
