/**
 * docs/webhooks-events.md, rendered from the event catalogue (`npm run docs:webhooks` writes it; a
 * test keeps the committed file equal to this rendering).
 */
import {
  OUTBOUND_EVENT_TYPES,
  OUTBOUND_EVENTS,
  type OutboundEventDefinition,
} from './event-catalogue.ts';

interface PropertySchema {
  type?: string;
  const?: unknown;
  anyOf?: PropertySchema[];
  description?: string;
}

/** A field's type as the table shows it: its constant, the constants it may be, or its JSON type. */
function typeOf(p: PropertySchema): string {
  if (p.const !== undefined) return `\`${JSON.stringify(p.const)}\``;
  if (p.anyOf) return p.anyOf.map(typeOf).join(' or ');
  if (p.type) return p.type;
  throw new Error(`no way to show the type of ${JSON.stringify(p)}`);
}

export function renderEventsMarkdown(): string {
  const out: string[] = [
    '# Outbound webhook events',
    '',
    '<!-- Generated from the outbound event catalogue by `npm run docs:webhooks`; do not edit. -->',
    '',
    'Every event is a `POST` of exactly the payload below (no envelope) with the headers described in',
    '[webhooks-outbound.md](webhooks-outbound.md). New event types are added over time: treat an',
    "unknown `X-Service-Event` as a no-op and answer `2xx`. The same list is the OpenAPI document's",
    '`webhooks` section (`/openapi.json`) and, but for the test event `ping` (sent to one',
    'destination on request: `yield-service webhook ping`, the portal\'s "send a test event"),',
    '`yield-service webhook add --events`.',
    '',
    '| event type | when | dedupe key |',
    '|---|---|---|',
    ...OUTBOUND_EVENT_TYPES.map((type) => {
      const e = OUTBOUND_EVENTS[type];
      return `| [\`${type}\`](#${type.replace(/\W/g, '')}) | ${e.description} | ${e.dedupeKey} |`;
    }),
  ];
  for (const type of OUTBOUND_EVENT_TYPES) {
    const e: OutboundEventDefinition = OUTBOUND_EVENTS[type];
    const properties = (e.schema as { properties: Record<string, PropertySchema> }).properties;
    out.push(
      '',
      `## ${type}`,
      '',
      e.description,
      '',
      `Dedupe key: ${e.dedupeKey}.`,
      '',
      '| field | type | meaning |',
      '|---|---|---|',
      ...Object.entries(properties).map(
        ([name, p]) => `| \`${name}\` | ${typeOf(p)} | ${p.description ?? ''} |`,
      ),
      '',
      'Example:',
      '',
      '```json',
      JSON.stringify(e.example, null, 2),
      '```',
    );
  }
  return `${out.join('\n')}\n`;
}
