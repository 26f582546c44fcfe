/**
 * Editing a webhook destination (its URL, HTTPS only and checked as on creation, and its event
 * types from the catalogue) and disabling it by hand: operations/webhook-destinations.ts, the same
 * the operator's `webhook update` and `webhook disable` call. Re-enabling is the destination
 * page's button (changes.ts), the same for both kinds of disabling.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import {
  createWebhookDestinationsRepo,
  DestinationEventTypesError,
  type WebhookDestination,
} from '../../../db/webhook-destinations.ts';
import { MAX_DISABLE_NOTE_LENGTH, WebhookHealthError } from '../../../db/webhook-health.ts';
import { disableDestination, updateDestination } from '../../../operations/webhook-destinations.ts';
import type { AddressPolicy } from '../../../webhooks/address-policy.ts';
import { DestinationUrlError } from '../../../webhooks/destination-url.ts';
import type { SecretBox } from '../../../webhooks/secret-box.ts';
import { confirmView } from '../../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  signedIn,
} from '../../context.ts';
import { html } from '../../html.ts';
import { page } from '../../layout.ts';
import { eventTypePicker, fieldList, ownDestination } from './shared.ts';

export function webhookEditRoutes(
  ctx: PortalContext,
  box: SecretBox,
  addresses: AddressPolicy,
): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const destinations = createWebhookDestinationsRepo(ctx.db, box);
    const manage = { config: { requires: 'webhooks.manage' as const } };
    /** The destination (the role was checked before: a viewer learns nothing more). */
    const manageable = (member: Member, env: Environment, id: string) =>
      ownDestination(destinations, member, env, id);

    function editPage(
      member: Member,
      env: Environment,
      csrf: string,
      d: WebhookDestination,
      form: { url: string; types: readonly string[]; errors?: string[] },
    ) {
      const here = `${base()}/${env}/webhooks/${d.id}`;
      return page({
        title: 'Edit a destination',
        base: base(),
        csrf,
        member,
        env,
        section: 'webhooks',
        errors: form.errors,
        body: html`<p class="lead">Changes apply to what is sent from now on: deliveries still pending or retrying go to the new URL, and events are matched against the new types as they happen. The signing secret stays the same.</p>
<form method="post" action="${here}/edit" class="panel">
  <input type="hidden" name="_csrf" value="${csrf}">
  <div class="field"><label for="dest-url">Endpoint URL (HTTPS)</label>
    <input type="url" id="dest-url" name="url" required maxlength="2048" value="${form.url}" ${form.errors?.length ? html`aria-invalid="true" aria-describedby="url-hint"` : html`aria-describedby="url-hint"`}>
    <p class="hint" id="url-hint">Only https:// URLs. A new URL restarts the automatic-disable clock: failures at the old URL no longer count towards disabling it. The health figures (last 24 h) still include the old URL's deliveries.</p></div>
  ${eventTypePicker(form.types)}
  <div class="buttons"><button type="submit">Save changes</button><a href="${here}">Cancel</a></div>
</form>`,
      });
    }

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/edit',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await manageable(member, env, request.params.id);
        return sendPage(
          reply,
          editPage(member, env, reply.generateCsrf(), d, { url: d.url, types: d.eventTypes ?? [] }),
        );
      },
    );

    app.post<{
      Params: { env: string; id: string };
      Body: { url?: unknown; event_types?: unknown };
    }>('/:env/webhooks/:id/edit', manage, async (request, reply) => {
      const { member, env } = signedIn(request);
      const d = await manageable(member, env, request.params.id);
      const url = typeof request.body?.url === 'string' ? request.body.url.trim() : '';
      const types = fieldList(request.body?.event_types);
      const again = (errors: string[]) =>
        sendPage(
          reply,
          editPage(member, env, reply.generateCsrf(), d, { url, types, errors }),
          400,
        );
      let updated: WebhookDestination | undefined;
      try {
        updated = await updateDestination(ctx.db, box, addresses, actorOf(request), d.id, {
          url,
          eventTypes: types,
        });
      } catch (err) {
        if (err instanceof DestinationUrlError) {
          return again([`That URL does not work: ${err.message}.`]);
        }
        if (err instanceof DestinationEventTypesError) {
          return again([`There is no event type ${err.unknown.join(', ')}: pick from the list.`]);
        }
        throw err;
      }
      if (!updated)
        throw new PortalError(404, 'Destination not found', 'It was removed meanwhile.');
      return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=updated`);
    });

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/webhooks/:id/disable',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await manageable(member, env, request.params.id);
        const here = `${base()}/${env}/webhooks/${d.id}`;
        if (d.disabledAt) return seeOther(reply, here);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Disable a destination',
            base: base(),
            csrf,
            member,
            env,
            section: 'webhooks',
            body: confirmView({
              action: `${here}/disable`,
              csrf,
              question: html`<p>While <code>${d.url}</code> is disabled nothing is sent to it. Deliveries waiting to be sent or retried are marked failed and kept, and so are the events that happen meanwhile. When you re-enable it, all of them are sent again. A test event can still be sent, to check the endpoint first.</p>`,
              fields: html`<div class="field"><label for="disable-note">Note for your team <span class="hint">(optional)</span></label>
    <input type="text" id="disable-note" name="note" maxlength="${MAX_DISABLE_NOTE_LENGTH}" aria-describedby="disable-note-hint">
    <p class="hint" id="disable-note-hint">Shown with the destination while it is disabled, for example “receiver moving to a new host”.</p></div>`,
              button: 'Disable destination',
              cancel: here,
            }),
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string }; Body: { note?: unknown } }>(
      '/:env/webhooks/:id/disable',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const d = await manageable(member, env, request.params.id);
        const note = typeof request.body?.note === 'string' ? request.body.note : '';
        try {
          await disableDestination(ctx.db, box, actorOf(request), d.id, { by: member.email, note });
        } catch (err) {
          if (!(err instanceof WebhookHealthError)) throw err;
          if (err.code === 'already_disabled') {
            throw new PortalError(409, 'Already disabled', 'This destination is already disabled.');
          }
          if (err.code === 'invalid_note') {
            throw new PortalError(
              400,
              'That note is too long',
              `Keep the note to ${MAX_DISABLE_NOTE_LENGTH} characters, then disable again.`,
            );
          }
          throw new PortalError(404, 'Destination not found', 'It was removed meanwhile.');
        }
        return seeOther(reply, `${base()}/${env}/webhooks/${d.id}?notice=disabled`);
      },
    );
  };
}
