/**
 * Lints an OpenAPI document with the two linters partners' tooling uses: Redocly's `recommended`
 * rules (@redocly/openapi-core, the engine of `redocly lint`) and Spectral's `oas` ruleset
 * (@stoplight/spectral-core with @stoplight/spectral-rulesets, the engine of `spectral lint`), both
 * run in process on the document as served. Exceptions are the rules turned off in
 * `openapi-lint-exceptions.ts`, each with its written reason.
 */
import type * as RedoclyCore from '@redocly/openapi-core';
import type * as SpectralCore from '@stoplight/spectral-core';
import type * as SpectralParsers from '@stoplight/spectral-parsers';
import type * as SpectralRulesets from '@stoplight/spectral-rulesets';
import { importTool } from '../../scripts/tools.mjs';
import { REDOCLY_EXCEPTIONS, SPECTRAL_EXCEPTIONS } from './openapi-lint-exceptions.ts';

export interface LintFinding {
  linter: 'redocly' | 'spectral';
  severity: 'error' | 'warning';
  rule: string;
  message: string;
  where: string;
}

export interface LintReport {
  findings: LintFinding[];
  count(linter: LintFinding['linter'], severity: LintFinding['severity']): number;
}

export async function lintOpenApi(
  doc: unknown,
  options: { withExceptions?: boolean } = {},
): Promise<LintReport> {
  const withExceptions = options.withExceptions ?? true;
  const source = JSON.stringify(doc, null, 2);
  const findings: LintFinding[] = [];
  // The linters are maintainers' tools, installed on demand in tools/ (scripts/tools.mjs).
  const { createConfig, lintFromString } =
    await importTool<typeof RedoclyCore>('@redocly/openapi-core');
  const spectralCore = (
    await importTool<{ default: typeof SpectralCore }>('@stoplight/spectral-core')
  ).default;
  const spectralParsers = (
    await importTool<{ default: typeof SpectralParsers }>('@stoplight/spectral-parsers')
  ).default;
  const { oas } = await importTool<typeof SpectralRulesets>('@stoplight/spectral-rulesets');

  const redoclyRules = withExceptions
    ? Object.fromEntries(Object.keys(REDOCLY_EXCEPTIONS).map((rule) => [rule, 'off' as const]))
    : {};
  const config = await createConfig({ extends: ['recommended'], rules: redoclyRules });
  const problems = await lintFromString({ source, absoluteRef: '/openapi.json', config });
  for (const p of problems) {
    if (p.severity !== 'error' && p.severity !== 'warn') continue;
    findings.push({
      linter: 'redocly',
      severity: p.severity === 'error' ? 'error' : 'warning',
      rule: p.ruleId,
      message: p.message,
      where: p.location.map((l) => l.pointer ?? '').join(' '),
    });
  }

  const spectral = new spectralCore.Spectral();
  spectral.setRuleset({
    extends: [[oas as never, 'recommended']],
    rules: withExceptions
      ? Object.fromEntries(Object.keys(SPECTRAL_EXCEPTIONS).map((rule) => [rule, 'off']))
      : {},
  });
  const results = await spectral.run(
    new spectralCore.Document(source, spectralParsers.Json, '/openapi.json'),
  );
  for (const r of results) {
    if (r.severity > 1) continue; // 2 info, 3 hint: not findings
    findings.push({
      linter: 'spectral',
      severity: r.severity === 0 ? 'error' : 'warning',
      rule: String(r.code),
      message: r.message,
      where: r.path.join('.'),
    });
  }

  return {
    findings,
    count: (linter, severity) =>
      findings.filter((f) => f.linter === linter && f.severity === severity).length,
  };
}
