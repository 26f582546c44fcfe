/**
 * The audit log as CSV, with the page's filter, every matching entry (up to 100,000), newest first:
 * for a team's own records and reviews. Times are ISO 8601 (UTC) for machines; a cell that a
 * spreadsheet would run as a formula (=, +, -, @ first) is prefixed with an apostrophe.
 */
import type { FastifyPluginAsync } from 'fastify';
import { type PortalContext, PortalError, signedIn } from '../../context.ts';
import { type AuditQuery, parseAuditQuery } from './filter.ts';

const MAX_ROWS = 100_000;
const COLUMNS = ['time', 'actor', 'action', 'environment', 'details', 'ip'] as const;

/** RFC 4180 quoting, and no formula a spreadsheet would evaluate. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function auditCsvRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string }; Querystring: AuditQuery }>(
      '/:env/audit.csv',
      { config: { requires: 'audit.view' } },
      async (request, reply) => {
        const { member } = signedIn(request);
        const { filter, dateError } = parseAuditQuery(request.query);
        if (dateError) throw new PortalError(400, 'Those dates do not work', dateError);
        const entries = await ctx.audit.list(member.partnerId, {
          ...filter,
          before: undefined,
          limit: MAX_ROWS,
        });
        const lines = [
          COLUMNS.join(','),
          ...entries.map((e) =>
            [
              e.createdAt.toISOString(),
              e.actor,
              e.action,
              e.environment ?? '',
              e.target ?? '',
              e.ip ?? '',
            ]
              .map(csvCell)
              .join(','),
          ),
        ];
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="audit-log.csv"')
          .header('cache-control', 'no-store')
          .send(`${lines.join('\r\n')}\r\n`);
      },
    );
  };
}
