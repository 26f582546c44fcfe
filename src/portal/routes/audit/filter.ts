/**
 * The audit log's filter, as the page's form and the CSV link carry it: who, what, and a range of
 * UTC days (from and to, both inclusive). Anything else in the query is a 400 in words.
 */
import type { AuditAction, AuditFilter } from '../../../db/portal-audit.ts';
import { parseDay } from '../../../http/date-range.ts';
import { ApiError } from '../../../http/errors.ts';
import { PortalError } from '../../context.ts';

/** Every action, as the log says it; a Record, so a new action cannot be left unnamed. */
export const ACTION_LABEL: Record<AuditAction, string> = {
  'member.signed_in': 'Signed in',
  'member.signed_out_everywhere': 'Signed out everywhere',
  'member.invited': 'Invited a member',
  'member.invite_resent': 'Resent an invitation',
  'member.invite_cancelled': 'Cancelled an invitation',
  'member.removed': 'Removed a member',
  'key.created': 'Created a key',
  'key.rolled': 'Rolled a key',
  'key.revoked': 'Revoked a key',
  'passkey.registered': 'Added a passkey',
  'passkey.removed': 'Removed a passkey',
  'webhook.added': 'Added a webhook destination',
  'webhook.rotated': 'Rotated a webhook secret',
  'webhook.removed': 'Removed a webhook destination',
  'webhook.updated': 'Edited a webhook destination',
  'webhook.disabled': 'Disabled a webhook destination',
  'webhook.enabled': 'Re-enabled a webhook destination',
  'webhook.pinged': 'Sent a test event',
  'webhook.replayed': 'Replayed deliveries',
  'inbound.secret_set': 'Set the inbound secret',
  'embed.origin_added': 'Allowed an embed origin',
  'embed.origin_removed': 'Removed an embed origin',
};

export interface AuditQuery {
  who?: string;
  what?: string;
  from?: string;
  to?: string;
  before?: string;
}

/** The form's values, kept to redraw it, and the repository's filter they mean. */
export interface ParsedAuditQuery {
  form: { who: string; what: string; from: string; to: string };
  filter: AuditFilter;
  /** Days that do not make a range, in words; the page shows it on the form (the CSV refuses). */
  dateError?: string | undefined;
}

const DAY_MS = 86_400_000;
const text = (v: unknown, max: number) => (typeof v === 'string' ? v.slice(0, max) : '');

export function parseAuditQuery(q: AuditQuery): ParsedAuditQuery {
  const form = {
    who: text(q.who, 254),
    what: text(q.what, 64),
    from: text(q.from, 10),
    to: text(q.to, 10),
  };
  if (form.what && !(form.what in ACTION_LABEL)) {
    throw new PortalError(400, 'No such action', 'Choose what happened from the list.');
  }
  let since: number | undefined;
  let until: number | undefined;
  let dateError: string | undefined;
  try {
    since = parseDay(form.from || undefined);
    const to = parseDay(form.to || undefined);
    until = to === undefined ? undefined : to + DAY_MS;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    dateError = `${err.message} Use the date pickers.`;
  }
  if (!dateError && since !== undefined && until !== undefined && since >= until) {
    dateError = 'The first day is after the last one: choose a From day on or before the To day.';
  }
  const before =
    typeof q.before === 'string' && /^aud_\w{1,64}$/.test(q.before) ? q.before : undefined;
  return {
    form,
    dateError,
    filter: {
      actor: form.who || undefined,
      action: (form.what || undefined) as AuditAction | undefined,
      since: since === undefined ? undefined : new Date(since),
      until: until === undefined ? undefined : new Date(until),
      before,
    },
  };
}

/** The query string of a filter (and a page), for links: the CSV, older entries. */
export function auditQueryString(form: ParsedAuditQuery['form'], before?: string): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) if (v) p.set(k, v);
  if (before) p.set('before', before);
  const qs = p.toString();
  return qs ? `?${qs}` : '';
}
