/**
 * The demo's host page: what a partner's own page looks like with the embed in it. It loads the
 * host helper from the embed's origin, frames the embed with it and lists the events it receives.
 * With `?bridge=1` it passes its own `window.ethereum` to the helper (bridge mode).
 */
import { escapeHtml } from '../http/escape-html.ts';

export function renderHostExample(o: {
  embedBase: string;
  embedId: string;
  slug: string;
  nonce: string;
}): string {
  const src = `${o.embedBase}/${o.embedId}/${o.slug}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Host page example · embed</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
  header { padding: 1rem 1.5rem; background: #1d2330; color: #fff; }
  main { display: grid; grid-template-columns: minmax(340px, 440px) minmax(0, 1fr); gap: 1.5rem; padding: 1.5rem; }
  h1 { font-size: 1.1rem; margin: 0; }
  h2 { font-size: 1rem; }
  ol { font: 0.85rem ui-monospace, monospace; padding-left: 1.2rem; overflow-wrap: anywhere; }
  @media (max-width: 720px) { main { grid-template-columns: 1fr; } }
</style>
<script src="${escapeHtml(o.embedBase)}/host.js"></script>
</head>
<body>
<header><h1>Example wallet app: this page frames the embed from another origin</h1></header>
<main>
  <section aria-label="Deposit widget"><div id="embed"></div></section>
  <section aria-label="Events">
    <h2>Events from the embed</h2>
    <ol id="events"></ol>
  </section>
</main>
<script nonce="${o.nonce}">
  const params = new URLSearchParams(location.search);
  const log = document.getElementById('events');
  window.embedEvents = [];
  window.embedHandle = YieldEmbed.mount(document.getElementById('embed'), {
    src: ${JSON.stringify(src).replace(/</g, '\\u003c')},
    theme: params.get('theme') || undefined,
    accent: params.get('accent') || undefined,
    provider: params.get('bridge') === '1' ? window.ethereum : undefined,
    onEvent(event) {
      window.embedEvents.push(event);
      const li = document.createElement('li');
      li.textContent = event.type + ' ' + JSON.stringify(event.data || {});
      log.appendChild(li);
    },
  });
</script>
</body>
</html>
`;
}
