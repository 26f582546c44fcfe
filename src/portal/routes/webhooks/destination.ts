/** GET of one destination's page: its health, settings, actions and delivery log (paged). */
import type { FastifyPluginAsync } from 'fastify';
import {
  createWebhookDeliveriesRepo,
  DELIVERY_STATUSES,
  type DeliveryStatus,
} from '../../../db/webhook-deliveries.ts';
import { createWebhookHealthRepo } from '../../../db/webhook-health.ts';
import { isId } from '../../../ids.ts';
import { permits } from '../../access.ts';
import { type PortalContext, sendPage, signedIn } from '../../context.ts';
import { html } from '../../html.ts';
import { page, time, when } from '../../layout.ts';
import { destinationBody } from './destination-view.ts';
import { LOG_PAGE, ownOr404, parseUtcTime } from './shared.ts';

export function destinationPageRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const deliveries = createWebhookDeliveriesRepo(ctx.db);
    const health = createWebhookHealthRepo(ctx.db);

    app.get<{
      Params: { env: string; id: string };
      Querystring: {
        status?: string;
        type?: string;
        since?: string;
        before?: string;
        notice?: string;
        queued?: string;
        failed_since?: string;
      };
    }>('/:env/webhooks/:id', { config: { requires: 'member' } }, async (request, reply) => {
      const { member, env } = signedIn(request);
      const id = request.params.id;
      const q = request.query;
      const status = DELIVERY_STATUSES.includes(q.status as DeliveryStatus)
        ? (q.status as DeliveryStatus)
        : undefined;
      const type =
        typeof q.type === 'string' && q.type !== '' && q.type.length <= 100 ? q.type : undefined;
      const since = parseUtcTime(q.since);
      const before = typeof q.before === 'string' && isId('dlv', q.before) ? q.before : undefined;
      // JSON, not joined with ':': a type or an id may contain ':' and must not reach another key.
      const key = `destination:${JSON.stringify([id, status, type, since?.toISOString(), before])}`;
      const read = await ctx.webhookPages.get(key, async () => {
        const at = new Date();
        // The destination and its figures in one statement, the log beside it; whose it is is
        // checked once both are in (a stranger's log is read and dropped, never shown).
        const [withStats, log] = await Promise.all([
          health.destinationWithStats(id, at),
          // One more than a page: whether there is an older one.
          deliveries.list({
            destinationId: id,
            ...(status ? { status } : {}),
            ...(type ? { eventType: type } : {}),
            ...(since ? { createdSince: since } : {}),
            ...(before ? { before } : {}),
            limit: LOG_PAGE + 1,
          }),
        ]);
        return withStats && { found: withStats.destination, h: withStats.health, log, at };
      });
      // A removed destination's page stays, read-only: its delivery log is kept.
      const d = ownOr404(read?.found, member, env, id, { removed: true });
      const { h, at } = read!;
      const rows = read!.log.slice(0, LOG_PAGE);
      const older = read!.log.length > LOG_PAGE ? rows.at(-1)!.id : undefined;
      const csrf = reply.generateCsrf();
      const manage = permits(member.role, 'webhooks.manage', env) && !d.removedAt;
      const here = `${base()}/${env}/webhooks/${d.id}`;
      const notice = {
        pinged:
          'Test event sent. It appears below; this page refreshes until it is delivered or fails.',
        rotated: undefined,
        enabled: 'Re-enabled. What failed while it was disabled is being sent again.',
        updated: 'Saved. The changes apply to what is sent from now on.',
        disabled:
          'Disabled. Nothing is sent to it until you re-enable it; what fails meanwhile is kept for then.',
        replayed: 'Replay queued: the event is sent again as a new delivery, listed below.',
        'replayed-failed': replayedFailed(q.queued, q.failed_since),
      }[q.notice ?? ''];
      const pendingPing = q.notice === 'pinged' && rows.some((r) => r.status === 'pending');
      const removed = d.removedAt
        ? html`<strong>Removed</strong> ${time(d.removedAt)}: nothing is sent to it any more. Its delivery log is kept and shown here, read-only.`
        : undefined;
      return sendPage(
        reply,
        page({
          title: 'Webhook destination',
          base: base(),
          csrf,
          member,
          env,
          section: 'webhooks',
          notice: removed ?? notice,
          body: destinationBody(d, h, rows, {
            at,
            csrf,
            manage,
            here,
            status,
            type,
            since,
            before,
            older,
            pendingPing,
          }),
        }),
      );
    });
  };
}

/** What "Replay failed" did: how many deliveries it queued, or that there was nothing to replay. */
function replayedFailed(queued: string | undefined, since: string | undefined): string {
  const count = Number(queued);
  const at = since && !Number.isNaN(Date.parse(since)) ? new Date(since) : undefined;
  const after = at ? ` since ${when(at)}` : '';
  if (!Number.isInteger(count) || count < 0) return 'Replay done.';
  if (count === 0) {
    return `Nothing to replay: no failed delivery${after} that is not already pending or delivered again.`;
  }
  return `${count} ${count === 1 ? 'delivery' : 'deliveries'} queued: every event that failed${after} is sent again, listed below.`;
}
