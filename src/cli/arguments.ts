/**
 * The argument parsers every operator command shares: commander calls them with the raw text and
 * shows an InvalidArgumentError's message beside the option's name, so each refusal reads the same
 * in every command. A parser used by one command only stays beside that command.
 */
import { InvalidArgumentError } from 'commander';
import type { Queryable } from '../db/client.ts';
import { createPartnersRepo, type Partner } from '../db/partners.ts';
import type { Environment } from '../db/products.ts';
import { CommandError } from './shared.ts';

export type { Environment };

/** `--env live|test`: a partner environment. */
export function environment(raw: string): Environment {
  if (raw !== 'live' && raw !== 'test') throw new InvalidArgumentError('must be live or test');
  return raw;
}

/** A whole number from min to max (decimal digits only: no sign, exponent or fraction). */
export function integerInRange(min: number, max: number): (raw: string) => number {
  return (raw) => {
    const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return n;
  };
}

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))?$/;

/**
 * An ISO 8601 moment: a date (midnight UTC), or a date and time with its offset (`Z` or ±hh:mm),
 * so that no reading depends on the operator's local time zone.
 */
export function parseIsoMoment(raw: string): Date {
  const m = ISO_DATE_TIME.exec(raw.trim());
  const [, y, mo, d, hh, , , zone] = m ?? [];
  if (!m || (hh !== undefined && zone === undefined)) {
    throw new InvalidArgumentError(
      'must be an ISO 8601 date (2025-01-31) or date-time with offset (2025-01-31T12:00:00Z)',
    );
  }
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (
    day.getUTCFullYear() !== Number(y) ||
    day.getUTCMonth() !== Number(mo) - 1 ||
    day.getUTCDate() !== Number(d)
  ) {
    throw new InvalidArgumentError(`${y}-${mo}-${d} is not a calendar date`);
  }
  const at = new Date(raw.trim());
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError('is not a valid date-time');
  return at;
}

/** The partner a `--partner NAME` names; an unknown name is an operator error (exit 1). */
export async function partnerNamed(db: Queryable, name: string): Promise<Partner> {
  const partner = await createPartnersRepo(db).findByName(name);
  if (!partner) throw new CommandError(`no partner named "${name}"`, 'not_found');
  return partner;
}
