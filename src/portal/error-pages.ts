/**
 * The portal's error pages: a refusal, an expired form, an outage or a fault, in words, as a page
 * (or, for the page's own scripts, the JSON envelope); never a stack or the API's JSON to a person.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { answerOutage } from '../http/error-mapping.ts';
import { type PortalContext, PortalError, sendPage } from './context.ts';
import { html } from './html.ts';
import { barePage } from './layout.ts';

export function portalErrorHandler(ctx: PortalContext) {
  return (err: FastifyError | PortalError, request: FastifyRequest, reply: FastifyReply) => {
    let status: number;
    let title: string;
    let message: string;
    if (err instanceof PortalError) {
      ({ status, title, message } = err);
    } else if (err.code === 'FST_CSRF_INVALID_TOKEN' || err.code === 'FST_CSRF_MISSING_SECRET') {
      status = 403;
      title = 'This form has expired';
      message = 'The form was older than your session. Go back, reload the page and try again.';
    } else if (err.statusCode === 413) {
      status = 413;
      title = 'Too much data';
      message = 'The form sent more than the portal accepts. Shorten the values and try again.';
    } else if (answerOutage(err, request, reply)) {
      // The database or Redis (sessions) is unreachable: logged once per outage, not per page.
      status = 503;
      title = 'The portal is briefly unavailable';
      message = 'Nothing was changed. Try again in a few seconds.';
    } else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      status = 400;
      title = 'That did not work';
      message = 'The request was not understood. Go back, reload the page and try again.';
    } else {
      request.log.error({ err }, 'portal error');
      status = 500;
      title = 'Something went wrong on our side';
      message = 'Nothing was changed. Try again in a minute; if it keeps failing, contact support.';
    }
    if (request.routeOptions.config?.portalJson) {
      return reply.code(status).send({ success: false, code: codeFor(status), message });
    }
    return sendPage(reply, errorPage(ctx, request, title, message), status);
  };
}

export function portalNotFound(ctx: PortalContext) {
  return (request: FastifyRequest, reply: FastifyReply) =>
    sendPage(
      reply,
      errorPage(ctx, request, 'Page not found', 'There is no page at this address.'),
      404,
    );
}

function codeFor(status: number): string {
  return (
    {
      400: 'invalid_request',
      401: 'unauthorized',
      403: 'forbidden',
      429: 'rate_limited',
      503: 'service_unavailable',
    }[status] ?? 'internal_error'
  );
}

function errorPage(ctx: PortalContext, _request: FastifyRequest, title: string, message: string) {
  return barePage({
    base: ctx.base(),
    title,
    body: html`<p>${message}</p><p><a href="${ctx.base()}/">Go to the portal</a></p>`,
  });
}
