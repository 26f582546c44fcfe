/**
 * Docs that stand alone (#14): a partner who clones the repository has nothing beside it, so README
 * and docs/ link only inside the repository (relative links to files that exist, anchors that name
 * a heading, or the local service), name no sibling folder, and mention only example or loopback hosts. The partner
 * API reference lists every code of the error catalogue. Partner pages are written for partners
 * (#30): they name no source file, migration or issue number; those belong in docs/maintainers/.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../src/http/errors.ts';
import { headingAnchors } from './helpers/markdown.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith('.md') ? [full] : [];
  });
}

const FILES = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
/** Hosts a doc may name: loopback, and the reserved example names (RFC 2606). */
const ALLOWED_HOST =
  /^(127\.0\.0\.1|localhost|host|…|([a-z0-9-]+\.)*example(\.(com|org|net))?)(:|\/|$|\[)/;

describe('README and docs/', () => {
  it('link only inside the repository', () => {
    const problems: string[] = [];
    for (const file of FILES) {
      const text = readFileSync(file, 'utf8');
      const where = path.relative(ROOT, file);
      if (text.includes('../shared')) problems.push(`${where}: names ../shared`);
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (target.startsWith('#')) {
          if (!headingAnchors(text).has(target.slice(1))) {
            problems.push(`${where}: no heading for ${target}`);
          }
          continue;
        }
        if (/^https?:\/\//.test(target)) {
          const host = target.replace(/^https?:\/\//, '');
          if (!/^(127\.0\.0\.1|localhost)(:|\/|$)/.test(host)) {
            problems.push(`${where}: links outside the repository: ${target}`);
          }
          continue;
        }
        if (/^[a-z]+:/.test(target)) {
          problems.push(`${where}: links outside the repository: ${target}`);
          continue;
        }
        const resolved = path.resolve(path.dirname(file), target.split('#')[0]!);
        if (!resolved.startsWith(ROOT + path.sep) || !existsSync(resolved)) {
          problems.push(`${where}: broken or outside link: ${target}`);
          continue;
        }
        const fragment = target.split('#')[1];
        if (fragment && resolved.endsWith('.md')) {
          if (!headingAnchors(readFileSync(resolved, 'utf8')).has(fragment)) {
            problems.push(`${where}: no heading for ${target}`);
          }
        }
      }
      for (const m of text.matchAll(/https?:\/\/([^\s)`'"<>]+)/g)) {
        if (!ALLOWED_HOST.test(m[1]!)) problems.push(`${where}: names an outside address: ${m[0]}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the partner API reference lists every error code of the catalogue', () => {
    const guide = readFileSync(path.join(ROOT, 'docs/partner-api.md'), 'utf8');
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      expect(guide, code).toMatch(new RegExp(`\\| \`${code}\` +\\| ${status} +\\|`));
    }
  });

  it('partner pages name no source file, migration or issue number', () => {
    const partnerPages = readdirSync(path.join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md') && name !== 'portal.md')
      .map((name) => path.join(ROOT, 'docs', name));
    expect(partnerPages.map((f) => path.basename(f))).toContain('partner-guide.md');
    const problems: string[] = [];
    for (const file of partnerPages) {
      const lines = readFileSync(file, 'utf8').split('\n');
      for (const [i, line] of lines.entries()) {
        const where = `${path.relative(ROOT, file)}:${i + 1}`;
        if (/(^|[\s`(/])(src|test)\//.test(line)) {
          if (!/test\/fixtures\/tls\//.test(line)) problems.push(`${where}: names code: ${line}`);
        }
        if (/migration|\.sql\b/i.test(line)) problems.push(`${where}: names a migration: ${line}`);
        if (/(^|[\s(])#\d+\b/.test(line)) problems.push(`${where}: names an issue: ${line}`);
        if (/\]\(maintainers\//.test(line)) {
          problems.push(`${where}: sends partners to maintainers' pages: ${line}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
