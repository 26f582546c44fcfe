/**
 * The logs bloom of a block header (Ethereum yellow paper, section 4.3.1): a 2048-bit filter to
 * which every log of the block adds its address and each of its topics. For each item, the low 11
 * bits of the first three byte pairs of keccak256(item) name three bits to set (bit 0 is the last
 * bit of the 256-byte value). A bloom can say "maybe" for an absent item, never "no" for a present
 * one: a block whose bloom lacks an address or a topic has no such log.
 */
import { type Hex, hexToBytes, keccak256 } from 'viem';

const BLOOM_BYTES = 256;

/** The three (byte index, bit mask) pairs `item` sets in a bloom. */
function bloomBits(item: Hex): [number, number][] {
  const hash = hexToBytes(keccak256(item));
  const out: [number, number][] = [];
  for (let i = 0; i < 6; i += 2) {
    const bit = ((hash[i]! << 8) | hash[i + 1]!) & 0x7ff;
    out.push([BLOOM_BYTES - 1 - (bit >> 3), 1 << (bit & 7)]);
  }
  return out;
}

/** Whether `bloom` may contain `item` (an address or a topic). */
export function bloomMayContain(bloom: Uint8Array, item: Hex): boolean {
  return bloomBits(item).every(([byte, mask]) => (bloom[byte]! & mask) !== 0);
}

/**
 * A log filter as blooms see it: a block may hold a matching log only if its bloom may contain one
 * of the addresses and, at each filtered topic position, one of the topics there. Items are hashed
 * once per filter, not once per block.
 */
export function bloomFilter(filter: {
  addresses: readonly Hex[];
  topics?: readonly (readonly Hex[] | null)[];
}): (bloom: Hex) => boolean {
  const groups: [number, number][][][] = [
    filter.addresses.map(bloomBits),
    ...(filter.topics ?? [])
      .filter((t): t is readonly Hex[] => t !== null)
      .map((t) => t.map(bloomBits)),
  ];
  return (bloomHex) => {
    const bloom = hexToBytes(bloomHex);
    if (bloom.length !== BLOOM_BYTES) return true; // not a bloom: assume it may match
    return groups.every((anyOf) =>
      anyOf.some((bits) => bits.every(([byte, mask]) => (bloom[byte]! & mask) !== 0)),
    );
  };
}
