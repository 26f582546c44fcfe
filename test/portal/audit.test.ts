/**
 * The audit log (#31 item 3): filtered by who, what and which days (the filters applied by the
 * database), paged past 200 entries, and exported as CSV with the same filter, quoted so that a
 * comma, a quote or a would-be formula in a value stays one cell of text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPortalAuditRepo } from '../../src/db/portal-audit.ts';
import { csvCell } from '../../src/portal/routes/audit/csv.ts';
import { type Client, type Harness, portalHarness, text } from './harness.ts';

let h: Harness;
let owner: Client;
beforeAll(async () => {
  h = await portalHarness();
  owner = await h.signedIn('audit-owner@example.com', 'owner');
  const audit = createPortalAuditRepo(h.t.db);
  // 250 entries over three days: two operators' kinds of change, one with an awkward target.
  for (let i = 0; i < 250; i++) {
    const day = i < 100 ? '2026-03-01' : i < 200 ? '2026-03-02' : '2026-03-03';
    await audit.record({
      partnerId: h.partner.id,
      memberId: null,
      actor: i % 2 ? 'operator' : 'audit-owner@example.com',
      action: i % 5 === 0 ? 'key.revoked' : 'key.created',
      environment: 'test',
      target:
        i === 7 ? '=HYPERLINK("https://evil.example.com"), "quoted"' : `key_${i} svc_test_…abcd`,
    });
    await h.t.db.query(
      `UPDATE portal_audit_log SET created_at = $1::timestamptz + $2 * interval '1 second'
       WHERE id = (SELECT id FROM portal_audit_log ORDER BY created_at DESC, id DESC LIMIT 1)`,
      [`${day}T08:00:00Z`, i],
    );
  }
});
afterAll(async () => h?.close());

const rows = (body: string) =>
  [...body.matchAll(/<tbody>(.*?)<\/tbody>/gs)].flatMap((m) =>
    [...m[1]!.matchAll(/<tr>(.*?)<\/tr>/gs)].map((r) => text(r[1]!)),
  );

describe('the audit log', () => {
  it('pages past 200 entries, 50 a page, newest first, without repeating one', async () => {
    const seen: string[] = [];
    let url: string | undefined = '/portal/live/audit?what=key.created';
    while (url) {
      const page = await owner.get(url);
      expect(page.status).toBe(200);
      seen.push(...rows(page.body));
      const older = /<a class="older" href="([^"]+)"/
        .exec(page.body)?.[1]
        ?.replaceAll('&amp;', '&');
      url = older;
    }
    expect(seen).toHaveLength(200); // 250 entries, 50 of them key.revoked
    expect(new Set(seen).size).toBe(200);
    expect(seen[0]).toContain('2026-03-03');
    expect(seen.at(-1)).toContain('2026-03-01');
  });

  it('filters by who, what and days', async () => {
    const page = await owner.get(
      '/portal/live/audit?who=operator&what=key.revoked&from=2026-03-02&to=2026-03-02',
    );
    const found = rows(page.body);
    // Odd i (operator), i % 5 === 0, 100 <= i < 200: 105, 115, …, 195.
    expect(found).toHaveLength(10);
    for (const r of found)
      expect(r).toMatch(/^2026-03-02 \d\d:\d\d UTC operator Revoked a key test/);
    const bad = await owner.get('/portal/live/audit?who=operator&from=2026-03-05&to=2026-03-01');
    expect(bad.status).toBe(400);
    expect(text(bad.body)).toContain('The first day is after the last one');
    // On the audit page itself, with the values kept and the fields marked, not a bare error page.
    expect(bad.body).toContain('<h1>Audit log</h1>');
    expect(bad.body).toContain('class="error-summary"');
    expect(bad.body).toMatch(/name="from" value="2026-03-05" aria-invalid="true"/);
    expect(bad.body).toMatch(/name="to" value="2026-03-01" aria-invalid="true"/);
    expect(bad.body).toContain('value="operator"');
    expect(rows(bad.body)).toHaveLength(0);
    const garbled = await owner.get('/portal/live/audit?from=2026-13-45');
    expect(garbled.status).toBe(400);
    expect(garbled.body).toContain('<h1>Audit log</h1>');
    expect(garbled.body).toContain('value="2026-13-45"');
    expect((await owner.get('/portal/live/audit.csv?from=2026-03-05&to=2026-03-01')).status).toBe(
      400,
    );
    expect((await owner.get('/portal/live/audit?what=drop.tables')).status).toBe(400);
  });

  it('exports the same selection as CSV', async () => {
    const page = await owner.get('/portal/live/audit?who=operator&what=key.revoked');
    expect(page.body).toContain('href="/portal/live/audit.csv?who=operator&amp;what=key.revoked"');
    // The page boosts its links (hx-boost): a download must load whole, not be swapped in.
    const link = /<a href="\/portal\/live\/audit\.csv[^>]*>/.exec(page.body)?.[0];
    expect(link).toContain('hx-boost="false"');
    const whole = /<a href="\/portal\/live\/audit\.csv[^>]*>/.exec(
      (await owner.get('/portal/live/audit')).body,
    )?.[0];
    expect(whole).toContain('hx-boost="false"');
    const csv = await owner.get('/portal/live/audit.csv?who=operator&what=key.revoked');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; /);
    const lines = csv.body.trimEnd().split('\r\n');
    expect(lines[0]).toBe('time,actor,action,environment,details,ip');
    expect(lines).toHaveLength(1 + 25);
    expect(lines[1]).toMatch(/^2026-03-03T08:04:05\.000Z,operator,key\.revoked,test,key_245 /);
    const all = await owner.get('/portal/live/audit.csv?what=key.created');
    const awkward = all.body.split('\r\n').find((l) => l.includes('HYPERLINK'));
    expect(awkward).toContain(`,"'=HYPERLINK(""https://evil.example.com""), ""quoted""",`);
  });

  it('quotes cells as RFC 4180 says and defuses formulas', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell('@cmd')).toBe("'@cmd");
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
  });

  it('is for owners and admins only, CSV included', async () => {
    const dev = await h.signedIn('audit-dev@example.com', 'developer');
    expect((await dev.get('/portal/live/audit')).status).toBe(403);
    expect((await dev.get('/portal/live/audit.csv')).status).toBe(403);
  });
});
