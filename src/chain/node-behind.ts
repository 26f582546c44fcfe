/**
 * Answers from a node that is behind the block asked about. Behind one provider URL, requests reach
 * nodes at different heights: a read pinned to a block the node has not seen yet fails ("header not
 * found", "unknown block") or, for a block by number, answers null. Another node of the same
 * provider usually has it, so such a request is asked again a few times before the failure counts;
 * the reads stay pinned, so a lagging node can delay an answer but never change it.
 */
import type { Transport } from 'viem';
import { errorMessages } from './error-messages.ts';

const BEHIND =
  /header not found|unknown block|block not found|could not find block|no block found|block #?\d+ not found|requested block .* (is )?(not available|ahead)|after last accepted block|beyond current head|cannot query unfinalized data/i;

/** Whether `err` says that the node does not have the block the request named. */
export function isNodeBehind(err: unknown): boolean {
  return BEHIND.test(errorMessages(err).join('\n'));
}

/** A request for one block by number or hash, whose null answer means "this node lacks it". */
function asksForBlock(method: string, params: unknown): boolean {
  if (method !== 'eth_getBlockByNumber' && method !== 'eth_getBlockByHash') return false;
  const tag = Array.isArray(params) ? params[0] : undefined;
  // 'latest', 'safe', 'finalized' always exist; a hex number or a hash may not, yet.
  return typeof tag === 'string' && tag.startsWith('0x');
}

/**
 * Wraps a transport so each request that a lagging node could not answer is asked again, at most
 * `attempts` times in all, `delayMs` apart. Batching inside the wrapped transport is untouched.
 */
export function retryWhileBehind(
  transport: Transport,
  options: { attempts?: number; delayMs?: number } = {},
): Transport {
  const attempts = Math.max(1, options.attempts ?? 4);
  const delayMs = options.delayMs ?? 50;
  return ((config) => {
    const inner = transport(config);
    const request = (async (args: { method: string; params?: unknown }, opts?: unknown) => {
      for (let attempt = 1; ; attempt++) {
        try {
          const answer = await (inner.request as (a: unknown, o?: unknown) => Promise<unknown>)(
            args,
            opts,
          );
          if (answer === null && attempt < attempts && asksForBlock(args.method, args.params)) {
            await new Promise((r) => setTimeout(r, delayMs));
            continue;
          }
          return answer;
        } catch (err) {
          if (attempt >= attempts || !isNodeBehind(err)) throw err;
          await new Promise((r) => setTimeout(r, delayMs));
        }
      }
    }) as typeof inner.request;
    return { ...inner, request };
  }) as Transport;
}
