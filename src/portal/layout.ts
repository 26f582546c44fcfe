/**
 * The portal's page frame: a header with the partner's name, the navigation and the live/test
 * switch (always visible on signed-in pages), a main region, and a sign-out form. Pages pass their
 * content; error summaries and notices are rendered here so every page shows them the same way.
 */

import type { Member } from '../db/portal-members.ts';
import type { Environment } from '../db/products.ts';
import { ICON } from '../http/icon.ts';
import { formatUtc } from '../time-format.ts';
import { type Html, html } from './html.ts';
import { can } from './roles.ts';
import { assetUrl } from './static-assets.ts';

export type Section = 'products' | 'keys' | 'webhooks' | 'embed' | 'team' | 'audit' | 'account';

export interface PageFrame {
  title: string;
  /** The portal's own path prefix, as the browser sees it (links are built from it). */
  base: string;
  csrf: string;
  member: Member;
  env: Environment;
  section: Section;
  /** Errors to list at the top (GOV.UK-style summary), each a sentence that says what to do. */
  errors?: readonly string[];
  notice?: Html | string | undefined;
  body: Html;
  /**
   * Static files only this page needs (`uplot.css`, `charts.js`…), loaded at the end of the body.
   * Links to such a page opt out of htmx boosting (`hx-boost="false"`) so they load it whole.
   */
  assets?: readonly string[];
  /** The page has passkey buttons: load the passkey scripts (see head()). */
  passkeys?: boolean;
  /**
   * Load htmx (default). A page that every link loads whole (`hx-boost="false"`: the product
   * pages) and that has no htmx form does without it; its own links then load whole too.
   */
  htmx?: boolean;
}

/**
 * The head every page shares. The passkey scripts (SimpleWebAuthn's bundle and webauthn.js) load
 * only on the pages with a passkey button (sign-in, your account); links to those pages load them
 * whole (`hx-boost="false"`), as a boosted swap would not run a new head.
 *
 * htmx keeps no page snapshots (`historyCacheSize: 0`): a snapshot would hold a one-time secret
 * (a new key, a signing secret) in sessionStorage, readable after sign-out and brought back by
 * Back. Back and Forward reload the page from the server instead (`refreshOnHistoryMiss`), which
 * answers `no-store` and asks for a sign-in once signed out.
 */
function head(base: string, title: string, passkeys: boolean, htmx = true): Html {
  return html`<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Partner portal</title>
<link rel="icon" href="${ICON}">
<link rel="stylesheet" href="${assetUrl(base, 'portal.css')}">
${htmx ? html`<script src="${assetUrl(base, 'htmx.min.js')}" defer></script>` : ''}
<script src="${assetUrl(base, 'portal.js')}" defer></script>
${
  passkeys
    ? html`<script src="${assetUrl(base, 'simplewebauthn.js')}" defer></script>
<script src="${assetUrl(base, 'webauthn.js')}" defer></script>`
    : ''
}
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"historyCacheSize":0,"refreshOnHistoryMiss":true,"responseHandling":[{"code":"204","swap":false},{"code":"...","swap":true}]}'>`;
}

export function errorSummary(errors: readonly string[] | undefined): Html | '' {
  if (!errors?.length) return '';
  return html`<div class="error-summary" role="alert" tabindex="-1">
  <h2>There is a problem</h2>
  <ul>${errors.map((e) => html`<li>${e}</li>`)}</ul>
</div>`;
}

const NAV: Array<{ section: Section; label: string; show: (m: Member) => boolean }> = [
  { section: 'products', label: 'Products', show: () => true },
  { section: 'keys', label: 'API keys', show: () => true },
  { section: 'webhooks', label: 'Webhooks', show: () => true },
  { section: 'embed', label: 'Embed', show: () => true },
  { section: 'team', label: 'Team', show: () => true },
  { section: 'audit', label: 'Audit log', show: (m) => can(m.role, 'audit.view') },
  { section: 'account', label: 'Your account', show: () => true },
];

export function page(frame: PageFrame): Html {
  const { base, env, member } = frame;
  const other: Environment = env === 'live' ? 'test' : 'live';
  const here = (e: Environment) => `${base}/${e}/${frame.section}`;
  return html`<!doctype html>
<html lang="en">
<head>${head(base, frame.title, frame.passkeys ?? false, frame.htmx ?? true)}</head>
<body class="env-${env}" hx-boost="true">
<a class="skip-link" href="#main">Skip to content</a>
<header class="topbar">
  <div class="topbar-inner">
    <span class="brand">${member.partnerName}</span>
    <nav aria-label="Environment" class="env-switch">
      <a href="${here('live')}" ${env === 'live' ? html`aria-current="page"` : ''} class="env-live">Live</a>
      <a href="${here('test')}" ${env === 'test' ? html`aria-current="page"` : ''} class="env-test">Test</a>
    </nav>
    <nav aria-label="Sections" class="sections">
      <ul>
      ${NAV.filter((n) => n.show(member)).map(
        (n) =>
          html`<li><a href="${base}/${env}/${n.section}" ${n.section === frame.section ? html`aria-current="page"` : ''}${n.section === 'account' ? html` hx-boost="false"` : ''}>${n.label}</a></li>`,
      )}
      </ul>
    </nav>
    <form method="post" action="${base}/sign-out" class="sign-out" hx-boost="false">
      <input type="hidden" name="_csrf" value="${frame.csrf}">
      <span class="who">${member.email} · ${member.role}</span>
      <button type="submit" class="link-button">Sign out</button>
    </form>
  </div>
  ${env === 'test' ? html`<div class="test-banner" role="note">You are viewing <strong>test</strong> data. Keys here start with <code>svc_test_</code> and see only sandbox products. <a href="${here(other)}">Switch to live</a></div>` : ''}
</header>
<main id="main" tabindex="-1">
  <h1>${frame.title}</h1>
  ${errorSummary(frame.errors)}
  ${frame.notice ? html`<div class="notice" role="status">${frame.notice}</div>` : ''}
  ${frame.body}
</main>
${(frame.assets ?? []).map((a) =>
  a.endsWith('.css')
    ? html`<link rel="stylesheet" href="${assetUrl(base, a)}">`
    : html`<script src="${assetUrl(base, a)}"></script>`,
)}
</body>
</html>`;
}

/** A page without the signed-in frame: sign-in, link confirmation, errors before sign-in. */
export function barePage(opts: {
  base: string;
  title: string;
  errors?: readonly string[];
  body: Html;
  passkeys?: boolean;
}): Html {
  return html`<!doctype html>
<html lang="en">
<head>${head(opts.base, opts.title, opts.passkeys ?? false)}</head>
<body class="bare">
<main id="main" class="card">
  <p class="brand">Partner portal</p>
  <h1>${opts.title}</h1>
  ${errorSummary(opts.errors)}
  ${opts.body}
</main>
</body>
</html>`;
}

/** Dates as partners read them: UTC, to the minute, unambiguous. */
export function when(date: Date | null | undefined, none = '—'): string {
  return date ? formatUtc(date) : none;
}

/** A date in a table cell: kept on one line, machine-readable in `datetime`. */
export function time(date: Date | null | undefined, none = '—'): Html | string {
  if (!date) return none;
  return html`<time datetime="${date.toISOString()}">${when(date)}</time>`;
}
