/**
 * Answers from a node that no longer keeps the state of the block asked about: a full (non-archive)
 * node past its pruning window ("missing trie node", "historical state … is not available"), or the
 * local chain after a reload without its historical states (anvil: "BlockOutOfRangeError"). Unlike
 * a node that is behind (node-behind.ts), asking again never helps; the reader decides what a
 * figure it cannot have means.
 */
import { errorMessages } from './error-messages.ts';

const PRUNED =
  /BlockOutOfRange|missing trie node|historical state .*(not available|unavailable)|state (is )?(not available|unavailable|pruned)|required historical state/i;

/** Whether `err` says that the node has no state for the block the request named. */
export function isStateUnavailable(err: unknown): boolean {
  return PRUNED.test(errorMessages(err).join('\n'));
}
