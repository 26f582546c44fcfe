/**
 * The outbound event catalogue is the one list of event types: its examples fit its schemas, the
 * emitters' builder refuses a payload that does not, and the OpenAPI `webhooks` section, the CLI's
 * list and docs/webhooks-events.md are exactly the catalogue.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolBin } from '../../scripts/tools.mjs';
import type { buildApp } from '../../src/server/app.ts';
import {
  assertOutboundPayload,
  OUTBOUND_EVENT_TYPES,
  OUTBOUND_EVENTS,
  OutboundPayloadError,
  outboundPayload,
  outboundPayloadError,
  SUBSCRIBABLE_EVENT_TYPES,
} from '../../src/webhooks/event-catalogue.ts';
import { renderEventsMarkdown } from '../../src/webhooks/event-docs.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

describe('the outbound event catalogue', () => {
  it('holds every event type of the spec and DECISIONS', () => {
    expect(OUTBOUND_EVENT_TYPES).toEqual([
      'deposit.confirmed',
      'redeem.requested',
      // Issue #34: a redeem request became claimable.
      'redeem.claimable',
      'redeem.confirmed',
      'apy_change',
      'tvl_alert',
      'vault_pause',
      'product.deployed',
      // Issue #27: a chain event whose log a deep reorganisation removed.
      'chain_event.retracted',
      'ping',
    ]);
    // A test event is not subscribable: `--events` offers every other type.
    expect(SUBSCRIBABLE_EVENT_TYPES).toEqual(OUTBOUND_EVENT_TYPES.filter((t) => t !== 'ping'));
  });

  it('has an example that fits its schema, a description and a dedupe key for every type', () => {
    for (const type of OUTBOUND_EVENT_TYPES) {
      const e = OUTBOUND_EVENTS[type];
      expect(outboundPayloadError(type, e.example), type).toBeUndefined();
      expect(e.description.length, type).toBeGreaterThan(20);
      expect(e.dedupeKey, type).toMatch(/^\(event_type, /);
    }
  });

  it('refuses payloads that miss, add or mistype a field, naming it', () => {
    const good = OUTBOUND_EVENTS['deposit.confirmed'].example;
    const { amount: _dropped, ...missing } = good;
    expect(outboundPayloadError('deposit.confirmed', missing)).toMatch(/amount/);
    expect(outboundPayloadError('deposit.confirmed', { ...good, amout: '1' })).toMatch(/amout/);
    expect(outboundPayloadError('deposit.confirmed', { ...good, amount: 1250.5 })).toMatch(
      /amount|string/,
    );
    expect(outboundPayloadError('deposit.confirmed', { ...good, amount: '1e3' })).toBeDefined();
    expect(
      outboundPayloadError('deposit.confirmed', { ...good, occurred_at: '2026-03-01 12:00:07' }),
    ).toBeDefined();
    expect(
      outboundPayloadError('apy_change', {
        ...OUTBOUND_EVENTS.apy_change.example,
        previous_apy: '0.05',
      }),
    ).toBeDefined();
    expect(outboundPayloadError('vault_pause', { slug: 'x', status: 'active' })).toBeDefined();
    expect(outboundPayloadError('pong', {})).toMatch(/not an event type/);
    expect(outboundPayloadError('ping', { destination_id: 'whk_x' })).toMatch(/sent_at/);
    expect(() => assertOutboundPayload('vault_pause', { slug: 'x' })).toThrow(OutboundPayloadError);
    // The emitters' builder: the payload itself when it fits, a throw when it does not.
    const p = { slug: 'acme', status: 'paused' } as const;
    expect(outboundPayload('vault_pause', p)).toBe(p);
    expect(() =>
      outboundPayload('tvl_alert', {
        slug: 'acme',
        previous_tvl: '-1',
        current_tvl: '2',
        change_pct: 1,
        date: '2026-03-01',
      }),
    ).toThrow(/previous_tvl|pattern/);
  });

  it('renders docs/webhooks-events.md (regenerate with npm run docs:webhooks)', () => {
    const committed = readFileSync(
      new URL('../../docs/webhooks-events.md', import.meta.url),
      'utf8',
    );
    // The file is the rendering as biome formats it (the script formats what it writes).
    const biome = toolBin('biome'); // a maintainers' tool, installed on demand (scripts/tools.mjs)
    const rendered = execFileSync(biome, ['format', '--stdin-file-path=docs/webhooks-events.md'], {
      input: renderEventsMarkdown(),
      encoding: 'utf8',
    });
    expect(committed).toBe(rendered);
    for (const type of OUTBOUND_EVENT_TYPES) expect(committed).toContain(`## ${type}\n`);
  });

  describe('the OpenAPI webhooks section', () => {
    let t: TestDatabase;
    let app: Awaited<ReturnType<typeof buildApp>>;
    beforeAll(async () => {
      t = await freshDatabase('pglite');
      app = await buildTestApp({ db: t.db });
      await app.ready();
    });
    afterAll(async () => {
      await app.close();
      await t.drop();
    });

    it('lists exactly the catalogue, each with its schema, example and signature headers', async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json() as {
        openapi: string;
        webhooks: Record<
          string,
          {
            post: {
              parameters: Array<{ name: string; in: string; required: boolean }>;
              requestBody: {
                content: { 'application/json': { schema: unknown; example: unknown } };
              };
              responses: Record<string, unknown>;
            };
          }
        >;
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.webhooks)).toEqual(OUTBOUND_EVENT_TYPES);
      for (const type of OUTBOUND_EVENT_TYPES) {
        const post = doc.webhooks[type]!.post;
        const body = post.requestBody.content['application/json'];
        expect(body.schema).toEqual(JSON.parse(JSON.stringify(OUTBOUND_EVENTS[type].schema)));
        expect(body.example).toEqual(OUTBOUND_EVENTS[type].example);
        expect(post.parameters.filter((p) => p.in === 'header').map((p) => p.name)).toEqual(
          expect.arrayContaining([
            'X-Service-Event',
            'X-Service-Signature',
            'X-Service-Event-Id',
            'webhook-id',
            'webhook-timestamp',
            'webhook-signature',
          ]),
        );
        expect(Object.keys(post.responses)).toEqual(['2XX']);
      }
    });
  });
});
