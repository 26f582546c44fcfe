/**
 * The audit log, newest first: owners and admins see every change made in their team's portal (and
 * by the operator for it), filtered by who, what and which days, 50 entries a page with a link to
 * older ones, and the same selection as CSV. Both environments.
 */
import type { FastifyPluginAsync } from 'fastify';
import { type PortalContext, sendPage, signedIn } from '../../context.ts';
import { type Html, html } from '../../html.ts';
import { page, time } from '../../layout.ts';
import { ACTION_LABEL, type AuditQuery, auditQueryString, parseAuditQuery } from './filter.ts';

/** Entries on a page of the log. */
export const AUDIT_PAGE = 50;

/** The actions' options, with one selected: the same few strings for every page, made once. */
const optionsBySelected = new Map<string, Html>();
function actionOptions(selected: string): Html {
  let options = optionsBySelected.get(selected);
  if (!options) {
    options = html`<option value="">Anything</option>${Object.entries(ACTION_LABEL).map(([a, label]) => html`<option value="${a}" ${selected === a ? 'selected' : ''}>${label}</option>`)}`;
    // Only known actions reach here (the filter refuses others): at most 23 entries.
    optionsBySelected.set(selected, options);
  }
  return options;
}

export function auditRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string }; Querystring: AuditQuery }>(
      '/:env/audit',
      { config: { requires: 'audit.view' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const { form, filter, dateError } = parseAuditQuery(request.query);
        const here = `${ctx.base()}/${env}/audit`;
        // One more than a page: whether there is an older one. JSON keys: nothing of one filter
        // can reach another's entry.
        const key = `audit:${member.partnerId}:${JSON.stringify(filter)}`;
        // The rows are rendered once per read (they depend on nothing of the member's session).
        const { shown, rows, older } = dateError
          ? { shown: 0, rows: html``, older: undefined }
          : await ctx.teamPages.get(key, async () => {
              const entries = await ctx.audit.list(member.partnerId, {
                ...filter,
                limit: AUDIT_PAGE + 1,
              });
              const shown = entries.slice(0, AUDIT_PAGE);
              return {
                shown: shown.length,
                rows: html`${shown.map(
                  (e) =>
                    html`<tr><td data-label="When">${time(e.createdAt)}</td><td data-label="Who">${e.actor}</td><td data-label="What">${ACTION_LABEL[e.action] ?? e.action}</td><td data-label="Env">${e.environment ?? '—'}</td><td data-label="Details"><code class="wrap">${e.target ?? ''}</code></td><td data-label="From">${e.ip ?? '—'}</td></tr>`,
                )}`,
                older: entries.length > AUDIT_PAGE ? shown.at(-1)!.id : undefined,
              };
            });
        const filtered = Boolean(form.who || form.what || form.from || form.to);
        const dateInvalid = dateError ? html` aria-invalid="true"` : '';
        return sendPage(
          reply,
          page({
            title: 'Audit log',
            base: ctx.base(),
            csrf: reply.generateCsrf(),
            member,
            env,
            section: 'audit',
            errors: dateError ? [dateError] : undefined,
            body: html`<p class="lead">Every change made in your team's portal, and by our operators for your team, newest first. Both environments.</p>
<form method="get" action="${here}" class="inline filters" aria-label="Filter the audit log">
  <div class="field"><label for="f-who">Who</label><input type="text" id="f-who" name="who" value="${form.who}" placeholder="an email, or operator" aria-describedby="f-who-hint"><p class="hint" id="f-who-hint">A member’s email, <code>operator</code>, or <code>demo</code> (a demo’s first keys and owner); empty: anyone.</p></div>
  <div class="field"><label for="f-what">What</label><select id="f-what" name="what">${actionOptions(form.what)}</select></div>
  <div class="field"><label for="f-from">From (UTC day)</label><input type="date" id="f-from" name="from" value="${form.from}"${dateInvalid}></div>
  <div class="field"><label for="f-to">To (UTC day)</label><input type="date" id="f-to" name="to" value="${form.to}"${dateInvalid}></div>
  <div class="field"><button type="submit" class="secondary">Filter</button></div>
</form>
${
  dateError
    ? ''
    : html`<p><a href="${here}.csv${auditQueryString(form)}" download hx-boost="false">Download ${filtered ? 'these entries' : 'the whole log'} as CSV</a></p>`
}
${
  dateError
    ? html`<div class="empty"><strong>No entries shown</strong>Correct the days above, or <a href="${here}">show everything</a>.</div>`
    : shown === 0
      ? html`<div class="empty"><strong>${filtered ? 'No entries match these filters' : 'Nothing yet'}</strong>${filtered ? html`<a href="${here}">Show everything</a>` : 'Sign-ins and changes to keys and the team appear here.'}</div>`
      : html`<table class="stack audit">
  <caption class="visually-hidden">Audit log</caption>
  <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Env</th><th scope="col">Details</th><th scope="col">From</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
${
  filter.before || older
    ? html`<nav class="pager" aria-label="Audit log pages">${filter.before ? html`<a href="${here}${auditQueryString(form)}">Newest entries</a>` : ''}${older ? html`<a class="older" href="${here}${auditQueryString(form, older)}">Older entries</a>` : ''}</nav>`
    : ''
}`,
          }),
          dateError ? 400 : 200,
        );
      },
    );
  };
}
